"""Which traces a run covers: one `trace`, a `traces` sheet, or the embedded example.

Used by the Snakefile (common.smk) at DAG-build time and by `optrace sheet` to check a sheet.
Cheap by design: no git process, only a few stats per trace, so 100 traces plan in milliseconds.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .families import trace_slug

SHEET_COLUMNS = ("label", "path", "vendor", "arch", "product", "dsl", "harness")
OVERRIDE_COLUMNS = SHEET_COLUMNS[2:]
# What ingest reads from the work tree besides git: a change to any of it makes ingest stale.
FINGERPRINT_DIRS = ("memory", "profiles", "versions", "autotune")
FINGERPRINT_FILES = ("definition.json", "solution.json", "workload.jsonl", "traces.jsonl",
                     "framework_baseline.json", "README.md")


@dataclass(frozen=True)
class TraceEntry:
    label: str
    path: str
    slug: str
    overrides: dict = field(default_factory=dict)  # vendor, arch, product, dsl, harness
    example: bool = False


def entry_for_path(path: str, hardware: str = "") -> TraceEntry:
    p = Path(path)
    label = p.stem if p.suffix == ".bundle" else p.name
    return TraceEntry(label, str(path), trace_slug(label), {"product": hardware} if hardware else {})


def read_sheet(sheet: str | os.PathLike) -> list[TraceEntry]:
    sheet = Path(sheet)
    try:
        text = sheet.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(sheet, f"cannot read the trace sheet ({exc.strerror})") from None
    rows = list(csv.DictReader((line for line in text.splitlines() if line.strip() and not line.startswith("#")),
                               delimiter="\t"))
    if not rows:
        raise InputError(sheet, "the trace sheet has no rows (columns: label<TAB>path[<TAB>vendor ...])")
    unknown = set(rows[0]) - set(SHEET_COLUMNS)
    if unknown or not {"label", "path"} <= set(rows[0]):
        raise InputError(sheet, f"columns must be label, path and optionally {', '.join(OVERRIDE_COLUMNS)}"
                                f" (found {', '.join(k for k in rows[0] if k)})")
    entries, seen = [], {}
    for i, row in enumerate(rows, 2):
        label, path = (row.get("label") or "").strip(), (row.get("path") or "").strip()
        if not label or not path:
            raise InputError(f"{sheet}:{i}", "every row needs a label and a path")
        slug = trace_slug(label)
        if slug in seen:
            raise InputError(f"{sheet}:{i}", f"label {label!r} gives slug {slug!r}, already used by {seen[slug]!r}")
        seen[slug] = label
        resolved = path if os.path.isabs(path) else str((sheet.parent / path).resolve())
        over = {k: row[k].strip() for k in OVERRIDE_COLUMNS if (row.get(k) or "").strip()}
        entries.append(TraceEntry(label, resolved, slug, over))
    return entries


def select_traces(config: dict, example_path: str, example_label: str) -> list[TraceEntry]:
    if config.get("trace") and config.get("traces"):
        raise InputError("config", "give either `trace` or `traces`, not both")
    if config.get("traces"):
        return read_sheet(config["traces"])
    if config.get("trace"):
        return [entry_for_path(config["trace"], config.get("hardware", ""))]
    over = {"product": config["hardware"]} if config.get("hardware") else {}
    return [TraceEntry(example_label, example_path, trace_slug(example_label), over, example=True)]


def fingerprint(path: str) -> str:
    """HEAD sha + (path, size, mtime) of what ingest reads outside git; no subprocess."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_file():  # a bundle: its identity is its bytes' stat
        st = p.stat()
        h.update(f"bundle\0{st.st_size}\0{st.st_mtime_ns}".encode())
        return h.hexdigest()[:16]
    if not p.is_dir():
        return "missing"
    h.update(head_sha(p).encode())
    for name in FINGERPRINT_FILES:
        _stat_into(h, p, p / name)
    for d in FINGERPRINT_DIRS:
        for root, dirs, files in os.walk(p / d):  # os.walk does not follow symlinked dirs
            dirs.sort()
            for f in sorted(files):
                _stat_into(h, p, Path(root) / f)
    return h.hexdigest()[:16]


def _stat_into(h, base: Path, path: Path) -> None:
    try:
        st = path.stat()
    except OSError:
        return
    h.update(f"{path.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())


def head_sha(repo: Path) -> str:
    """Read HEAD without spawning git: .git/HEAD -> loose ref or packed-refs."""
    gitdir = repo / ".git"
    if gitdir.is_file():  # worktree: "gitdir: <path>"
        gitdir = (repo / gitdir.read_text().split(":", 1)[1].strip()).resolve()
    try:
        head = (gitdir / "HEAD").read_text().strip()
    except OSError:
        return "no-head"
    if not head.startswith("ref:"):
        return head
    ref = head[4:].strip()
    for base in (gitdir, _common_dir(gitdir)):
        loose = base / ref
        if loose.is_file():
            return loose.read_text().strip()
        packed = base / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0]
    return "unborn"


def _common_dir(gitdir: Path) -> Path:
    common = gitdir / "commondir"
    return (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace sheet", description="check a trace sheet and list its traces")
    ap.add_argument("sheet", help="a TSV sheet: label, path and optional override columns")
    args = ap.parse_args(argv)
    for e in read_sheet(args.sheet):
        state = "ok" if Path(e.path).exists() else "MISSING"
        extra = " ".join(f"{k}={v}" for k, v in e.overrides.items())
        print(f"{e.slug}\t{e.label}\t{e.path}\t{state}\t{extra}".rstrip())
    return 0
