"""Which traces a run covers: one `trace`, a `traces` sheet, or the embedded example.

Used by the Snakefile (common.smk) at DAG-build time and by `optrace sheet` to check a sheet.
Cheap by design: no git process, only a few stats per trace, so 100 traces plan in milliseconds.
Traces are hostile even here: nothing is opened before lstat says it is a small regular file (a FIFO
as `.git/HEAD` must not block the DAG build), walks are iterative and depth-capped, and a trace whose
name holds a denylisted term never lends that name to a slug, a label or a path.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.gitdir import locate_gitdir, resolve_head
from optrace.ingest.trace_files import MAX_WALK_DEPTH, read_small_file
from optrace.printable import escape_controls
from optrace.run.configcheck import trace_problem
from optrace.run.families import trace_slug
from optrace.scrub.leak_patterns import DENYLIST_ENV, Denylist, add_denylist_argument, denylist_pattern, read_denylist

SHEET_COLUMNS = ("label", "path", "vendor", "arch", "product", "dsl", "harness")
OVERRIDE_COLUMNS = SHEET_COLUMNS[2:]
# What ingest reads from the work tree besides git: a change to any of it makes ingest stale.
MAX_SHEET_BYTES = 64 * 1024 * 1024  # 10 000 traces are ~1 MB
FINGERPRINT_DIRS = ("memory", "profiles", "versions", "autotune")
FINGERPRINT_FILES = (
    "definition.json",
    "solution.json",
    "workload.jsonl",
    "traces.jsonl",
    "framework_baseline.json",
    "README.md",
)


MAX_LABEL_CHARS = 200

# `s3://bucket/key`, `gs://...`: a file of a Snakemake storage plugin, taken as written (never made
# absolute, never stat'ed on the controller); the workflow declares it through `storage()`.
URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: str) -> bool:
    return URL_SCHEME.match(path) is not None


def url_problem(url: str) -> str | None:
    """Why a storage URL cannot be a trace, or None: storage holds files, so only a bundle travels."""
    if "?" in url or "#" in url or "\\" in url:
        return "a storage URL names an object: no query, fragment or backslash"
    if not url.endswith(".bundle"):
        return (
            "a trace in storage must be a .bundle file (`git bundle create X.bundle --all`): a work tree "
            "cannot travel through object storage"
        )
    return None


@dataclass(frozen=True)
class TraceEntry:
    label: str
    path: str
    slug: str
    overrides: dict = field(default_factory=dict)  # vendor, arch, product, dsl, harness
    example: bool = False
    where: str = ""  # the sheet row (`traces.tsv:3`) or config key it came from
    note: str | None = None  # said to the user at planning time (e.g. a label replaced for the denylist)


# Letters only, none of them hex: the name reaches packets, ids and reports, where a run of hex digits
# reads as a commit hash and the anonymizer rightly refuses it.
NEUTRAL_ALPHABET = "ghjkmnpqrstvwxyz"


def neutral_label(path: str, kind: str = "trace") -> str:
    """A name that says nothing about what it names: `<kind>-` and a hash of `path`, spelled in
    non-hex letters."""
    digest = hashlib.sha256(str(path).encode()).digest()
    return f"{kind}-" + "".join(NEUTRAL_ALPHABET[b % 16] for b in digest[:10])


def safe_label(label: str, path: str, denied: Denylist | None, fallback: str | None = None) -> tuple[str, str | None]:
    """(label, note): `label` unless it holds a denylisted term (any case, any substring); then
    `fallback` (the sheet's own label) if that is clean, else a neutral hash of the path."""
    if denied is None or not denied.contains(label):
        return label, None
    if fallback and not denied.contains(fallback):
        return (
            fallback,
            f"{neutral_label(path)}: the trace's directory name holds a denylisted term; named by its sheet label",
        )
    name = neutral_label(path)
    return name, f"{name}: the trace's name holds a denylisted term; named by a hash of its path instead"


def entry_for_path(path: str, hardware: str = "", denylist: tuple[str, ...] = ()) -> TraceEntry:
    p = Path(path.rsplit("/", 1)[-1] if is_url(path) else path)
    label, note = safe_label(p.stem if p.suffix == ".bundle" else p.name, path, denylist_pattern(denylist))
    return TraceEntry(  # absolute: a path such as `-h` must never reach a command line as an option
        label,
        path if is_url(path) else os.path.abspath(path),
        trace_slug(label),
        {"product": hardware} if hardware else {},
        where="config trace",
        note=note,
    )


def sheet_lines(sheet: Path, text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each row: only `\n` ends a line (U+2028, NEL or a form feed in a label
    are characters of it, as a spreadsheet wrote them), a trailing `\r` is dropped, blank and `#` lines
    are skipped; a field holding a tab must be quoted, as spreadsheets write it."""
    rows = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip() or line.startswith("#"):
            continue
        try:
            rows.append((n, next(csv.reader([line], delimiter="\t", strict=True))))
        except csv.Error as exc:
            if "\r" in line:  # csv's own words ask for "universal-newline mode"
                raise InputError(
                    f"{sheet}:{n}",
                    "a carriage return inside a row (lines ended by CR alone?): save the sheet "
                    "with LF or CR LF line ends",
                ) from None
            raise InputError(f"{sheet}:{n}", f"not a readable TSV row ({exc})") from None
    return rows


def read_sheet(sheet: str | os.PathLike, denylist: tuple[str, ...] = ()) -> list[TraceEntry]:
    sheet = Path(sheet)
    data, problem = read_small_file(sheet, MAX_SHEET_BYTES)
    if data is None:
        raise InputError(sheet, f"cannot read the trace sheet (it is {problem})")
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's UTF-8 export starts with a byte-order mark
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{sheet}:{line}", f"the trace sheet is not UTF-8 text (byte {exc.start} of the file)"
        ) from None
    lines = sheet_lines(sheet, text)
    if len(lines) < 2:
        raise InputError(sheet, "the trace sheet has no rows (columns: label<TAB>path[<TAB>vendor ...])")
    (_, header), rows = lines[0], lines[1:]
    columns = [c.strip() for c in header]
    unknown = [c for c in columns if c not in SHEET_COLUMNS]
    if unknown or not {"label", "path"} <= set(columns) or len(set(columns)) < len(columns):
        raise InputError(
            sheet,
            f"columns must be label, path and optionally {', '.join(OVERRIDE_COLUMNS)}, each once"
            f" (found {', '.join(map(repr, columns))})",
        )
    entries = []
    seen: dict[str, str] = {}  # slug -> the label that gave it
    denied = denylist_pattern(denylist)
    for n, fields in rows:
        where = f"{sheet}:{n}"
        if len(fields) > len(columns):
            raise InputError(
                where,
                f"{len(fields)} tab-separated fields for {len(columns)} columns: a tab inside a path or label "
                'must be quoted ("...")',
            )
        row = dict(zip(columns, fields))
        # a path is taken as written: a directory name may end in a space
        label, path = row.get("label", "").strip(), row.get("path", "")
        if not label or not path.strip():
            missing = " and ".join(k for k, v in (("a label", label), ("a path", path.strip())) if not v)
            raise InputError(where, f"the row has no {missing.removeprefix('a ')}; every row needs a label and a path")
        if (bad := control_in(row.get("label", ""))) is not None:  # before strip(), which eats U+2028 and NEL
            raise InputError(
                where,
                f"the label holds {bad}, a control or line-break character; a label names the trace in "
                "reports: use letters, digits, spaces and - _ .",
            )
        if len(label) > MAX_LABEL_CHARS:  # its slug names a results directory: no file system takes 100 000
            raise InputError(where, f"the label is {len(label)} characters long; at most {MAX_LABEL_CHARS}")
        if "\x00" in path:
            raise InputError(where, "the path holds U+0000 (NULL), which no file name can hold")
        label, note = safe_label(label, path, denied)
        if note is None and denied is not None and denied.contains(Path(path).name):
            note = f"{label}: the trace's directory name holds a denylisted term; named by its sheet label"
        slug = trace_slug(label)
        if slug in seen:
            raise InputError(where, f"label {label!r} gives slug {slug!r}, already used by {seen[slug]!r}")
        seen[slug] = label
        if is_url(path) and (problem := url_problem(path)):
            raise InputError(where, f"trace path {path}: {problem}")
        resolved = path if is_url(path) or os.path.isabs(path) else str((sheet.parent / path).resolve())
        over = {k: row[k].strip() for k in OVERRIDE_COLUMNS if (row.get(k) or "").strip()}
        entries.append(TraceEntry(label, resolved, slug, over, where=where, note=note))
    return entries


def control_in(text: str) -> str | None:
    """The first control character of `text` as `U+XXXX (NAME)`, or None."""
    bad = next((c for c in text if escape_controls(c) != c), None)
    return None if bad is None else f"U+{ord(bad):04X} ({unicodedata.name(bad, 'a control character')})"


def check_paths_exist(entries: list[TraceEntry]) -> None:
    """A trace path that does not exist ends planning with one line, before any job runs. (A path
    that exists but is not a repository is the trace's own failure: its ingest says so, the rest run.)"""
    for e in entries:  # a storage URL is Snakemake's to find: a missing one is a missing input
        if not e.example and not is_url(e.path) and not os.path.lexists(e.path):
            shown, hint = e.path, ""
            if e.path != e.path.strip():  # quoted, so the spaces show
                shown = repr(e.path)
                if os.path.lexists(e.path.strip()):
                    hint = f" ({e.path.strip()!r}, without the spaces around it, does: a path is taken as written)"
            raise InputError(e.where or e.path, f"trace path {shown} does not exist{hint}")


def select_traces(
    config: dict, example_path: str, example_label: str, environ: Mapping[str, str] = os.environ
) -> list[TraceEntry]:
    if config.get("trace") and config.get("traces"):
        raise InputError("config", "give either `trace` or `traces`, not both")
    denylist = read_denylist(environ, config.get("denylist_env") or DENYLIST_ENV)
    if config.get("traces"):
        entries = read_sheet(config["traces"], denylist)
        check_paths_exist(entries)
        return entries
    if config.get("trace"):
        entries = [entry_for_path(config["trace"], config.get("hardware", ""), denylist)]
        check_paths_exist(entries)
        return entries
    over = {"product": config["hardware"]} if config.get("hardware") else {}
    label, note = safe_label(
        example_label, example_path, denylist_pattern(denylist)
    )  # the example's name can be denylisted too
    return [TraceEntry(label, example_path, trace_slug(label), over, example=True, note=note)]


def fingerprint(path: str) -> str:
    """HEAD sha + (path, size, mtime) of what ingest reads outside git; no subprocess, no blocking open."""
    h = hashlib.sha256()
    if is_url(path):  # Snakemake compares the object's own mtime: it is a declared input (storage())
        h.update(f"url\0{path}".encode())
        return h.hexdigest()[:16]
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError:
        return "missing"
    if stat.S_ISREG(st.st_mode):  # a bundle: its identity is its bytes' stat
        h.update(f"bundle\0{st.st_size}\0{st.st_mtime_ns}".encode())
        return h.hexdigest()[:16]
    if not stat.S_ISDIR(st.st_mode):
        return "missing"
    h.update(head_sha(p).encode())
    for name in FINGERPRINT_FILES:
        _stat_into(h, p, p / name)
    for d in FINGERPRINT_DIRS:
        for rel, st in _files_below(str(p), d):
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


def _files_below(base: str, top: str) -> list[tuple[str, os.stat_result]]:
    """(path relative to `base`, lstat) of the files under `base/top`, iteratively, symlinks not
    followed, as deep as ingest reads; in path order (part by part, as Path sorts). Every controller
    start takes this for every trace: strings and DirEntry stats, no Path per file."""
    out, stack = [], [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(os.path.join(base, folder)) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            rel = f"{folder}/{e.name}"
            if e.is_dir(follow_symlinks=False):
                if depth + 1 < MAX_WALK_DEPTH:
                    stack.append((rel, depth + 1))
                continue
            try:
                out.append((rel, e.stat(follow_symlinks=False)))
            except OSError:
                continue
    return sorted(out, key=lambda item: item[0].split("/"))


def _stat_into(h: hashlib._Hash, base: Path, path: Path) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    h.update(f"{path.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())


def head_sha(repo: Path) -> str:
    """HEAD's commit without spawning git, as ingest finds it (optrace.ingest.gitdir: lstat before any
    open, nothing outside the trace); "unborn", or "no-head" when ingest will refuse the repository."""
    try:
        head = resolve_head(repo, locate_gitdir(repo))
    except InputError:
        return "no-head"
    return head.sha or "unborn"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="optrace sheet",
        description="check a trace sheet and list its traces; "
        "exits 2 naming the first row whose path is missing or not a trace",
    )
    ap.add_argument("sheet", help="a TSV sheet: label, path and optional override columns")
    add_denylist_argument(ap)
    args = ap.parse_args(argv)
    entries = read_sheet(args.sheet, read_denylist(variable=args.denylist_env))
    bad = None
    for e in entries:
        problem = url_problem(e.path) if is_url(e.path) else trace_problem(e.path)
        bad = bad or (problem and (e, problem))
        extra = " ".join(f"{k}={v}" for k, v in e.overrides.items())
        print(f"{e.slug}\t{e.label}\t{e.path}\t{'ok' if problem is None else 'BAD'}\t{extra}".rstrip())
        if e.note:
            print(f"  note: {e.note}")
    if bad:
        e, problem = bad
        raise InputError(e.where, f"trace path {e.path}: {problem}")
    return 0
