"""One bad trace never blocks the rest: every per-trace stage runs through this guard.

    python -m optrace.run.pertrace --slug S --meta work/S/meta.json [--inputs IN...] --outputs OUT... -- <stage> <args>...

A declared input missing in the job (not staged in, on a node that shares nothing) fails the job: it is
the run's fault, not the trace's. A stage that ends in a one-line InputError leaves a small placeholder at each declared output carrying
`{"stage", "reason"}` and the job exits 0, so the aggregates run for every trace and name this one; a
later stage of a failed trace passes the failure on without running. A bug still fails the job.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from optrace.cli import MODULES
from optrace.errors import InputError
from optrace.jsonio import dumps_compact, load_or_none, write_text_atomic
from optrace.mine.packetfile import FILES

# The commands that run once per trace; their modules are the command table's (optrace.cli).
PER_TRACE = ("ingest", "recon", "partition", "packets", "distill", "validate")


def upstream_failure(meta: Path) -> dict | None:
    """The `failed` entry of a trace's meta.json, or None when ingest succeeded."""
    doc = load_or_none(meta)
    failed = doc.get("failed") if isinstance(doc, dict) else None
    return failed if isinstance(failed, dict) else None


def placeholder(path: Path, slug: str, failed: dict, stage: str) -> str:
    """What a failed trace leaves at one declared output of `stage`: enough shape for the aggregates to
    read. JSON ones are written compact: the run summary recognises a placeholder by its `"failed":{`."""
    name = path.name
    if name.endswith(".jsonl"):
        return ""
    if name == "meta.json":
        return dumps_compact({"slug": slug, "source_label": failed.get("label") or slug, "failed": failed})
    if stage == "packets":  # an empty packets file (optrace.mine.packetfile)
        manifest: dict[str, object] = {"slug": slug, "head_sha": None, "count": 0, "packets": [], "failed": failed}
        return dumps_compact({**manifest, FILES: {}})
    if name == "distill.json":
        return dumps_compact({"slug": slug, "mode": None, "counts": {}, "packets": [], "failed": failed})
    if name == "validation.json":
        from optrace.gates.validate import trace_report

        return dumps_compact({**trace_report(slug, [], []), "failed": failed})
    if name.endswith(".json"):
        return dumps_compact({"slug": slug, "failed": failed})
    line = f"{slug}: not analysed, the trace failed at {failed['stage']}: {failed['reason']}"
    if name.endswith(".svg"):
        text = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="40">'
            f'<text x="8" y="24" font-size="12">{text}</text></svg>\n'
        )
    return f"# {slug}\n\n{line}\n"


def write_placeholders(outputs: list[Path], slug: str, failed: dict, stage: str) -> None:
    for out in outputs:
        write_text_atomic(out, placeholder(out, slug, failed, stage))


def main(argv: list[str]) -> int:
    if "--" not in argv:
        raise InputError("optrace.run.pertrace", "usage: --slug S --meta M --outputs OUT... -- <stage> <args>")
    split = argv.index("--")
    ap = argparse.ArgumentParser(
        prog="optrace.run.pertrace", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slug", required=True)
    ap.add_argument("--meta", required=True, type=Path, help="the trace's meta.json (ingest's output)")
    ap.add_argument("--label", default="", help="the trace's label (ingest: named in its failure placeholder)")
    ap.add_argument("--inputs", nargs="*", type=Path, default=[], help="the rule's declared inputs")
    ap.add_argument("--outputs", nargs="+", required=True, type=Path, help="the rule's declared outputs")
    args = ap.parse_args(argv[:split])
    stage, stage_argv = argv[split + 1], argv[split + 2 :]
    if stage not in PER_TRACE:
        raise InputError("optrace.run.pertrace", f"unknown stage {stage!r}")
    if missing := [str(p) for p in args.inputs if not p.exists()]:
        raise InputError(
            missing[0], f"a declared input of {stage} is missing in this job: the job fails, not the trace"
        )
    failed = None if stage == "ingest" else upstream_failure(args.meta)
    if failed is not None:
        write_placeholders(args.outputs, args.slug, failed, stage)
        print(f"{stage}: {args.slug}: skipped, the trace failed at {failed['stage']}: {failed['reason']}")
        return 0
    try:
        return int(importlib.import_module(MODULES[stage]).main(stage_argv) or 0)
    except InputError as exc:
        reason = f"{exc.where}: {exc.problem}"
        print(f"error: {reason}", file=sys.stderr)
        write_placeholders(args.outputs, args.slug, {"stage": stage, "reason": reason, "label": args.label}, stage)
        print(f"{stage}: {args.slug}: failed; placeholders written so the other traces go on", file=sys.stderr)
        return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
