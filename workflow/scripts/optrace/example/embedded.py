"""`optrace example-trace --out DIR`: build the embedded example trace from its sources (package data, `optrace/example/sources/`)."""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

import yaml

from optrace import EXAMPLE_SOURCES
from optrace.errors import InputError
from optrace.example.repo_builder import CommitSpec, build_trace

EXAMPLE_DIR = EXAMPLE_SOURCES
PLAN = EXAMPLE_DIR / "trace.yaml"


def load_plan(plan_path: Path = PLAN) -> dict:
    try:
        plan = yaml.safe_load(plan_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(plan_path, f"cannot read the example trace plan ({exc})") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("commits"), list) or not plan.get("name"):
        raise InputError(plan_path, "needs `name` and a `commits` list")
    return plan


def _content(base: Path, rel: str | None) -> bytes | None:
    if rel is None:
        return None
    path = base / rel
    if not path.is_file():
        raise InputError(path, "file named in the example trace plan is missing")
    return path.read_bytes()


def example_name(plan_path: Path = PLAN) -> str:
    return load_plan(plan_path)["name"]


def source_digest(plan_path: Path = PLAN) -> str:
    """Digest of everything the example is built from: the example is rebuilt only when this changes."""
    h = hashlib.sha256()
    for path in sorted(p for p in plan_path.parent.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(plan_path.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build_example(out: Path, plan_path: Path = PLAN) -> str:
    plan = load_plan(plan_path)
    base = plan_path.parent
    commits = [
        CommitSpec(
            subject=c["subject"],
            body=c.get("body", ""),
            files={dst: _content(base, src) for dst, src in (c.get("files") or {}).items()},
        )
        for c in plan["commits"]
    ]
    untracked: dict[str, str | bytes] = {}
    for dst, src in (plan.get("untracked") or {}).items():
        data = _content(base, src)
        if data is None:  # found by mypy: a null here reached write_bytes(None) as a TypeError
            raise InputError(plan_path, f"untracked file {dst!r} names no source (only a commit deletes a path)")
        untracked[dst] = data
    if out.exists():
        shutil.rmtree(out)
    return build_trace(out, commits, untracked)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace example-trace", description=__doc__)
    ap.add_argument("--out", required=True, type=Path, help="directory to create (replaced if present)")
    args = ap.parse_args(argv)
    head = build_example(args.out)
    print(f"example trace built at {args.out} (HEAD {head})")
    return 0
