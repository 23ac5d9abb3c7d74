"""`optrace <command> ...`: one entry point that dispatches to each stage module's `main(argv)`.

Every stage is also runnable as `python -m optrace.<module>`. Bad input ends with one line on stderr
naming the file and the problem (exit 2), never a traceback. A command's module is imported only when
that command runs, so a job pays only for what its stage uses (no pandas or pyarrow in ingest).
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Callable

from optrace import __version__
from optrace.errors import InputError
from optrace.printable import escape_controls, escape_standard_streams

# (command, module exposing main(argv: list[str]) -> int, one-line description). Adding a command is
# one line here.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "ingest",
        "optrace.ingest.ingest",
        "read one trace into versions.jsonl, profiles.jsonl, meta.json, autotune.jsonl",
    ),
    ("recon", "optrace.report.recon", "what a trace holds and can yield: recon.md, recon.json, ladder.svg"),
    ("partition", "optrace.mine.partition", "split a trace's versions into segments, one per record it can support"),
    ("packets", "optrace.mine.packets", "write the scrubbed packet a record is distilled from, per segment"),
    ("distill", "optrace.distill.distill", "turn a trace's packets into records (deterministic drafter or an agent)"),
    ("validate", "optrace.gates.validate", "run the 17 gates on distilled records; summaries; injection tests"),
    ("stage", "optrace.publish.staging", "scored, store-shaped copies of the records that passed, and their index"),
    ("store-tree", "optrace.publish.storetree", "write stage's store file out as the store's records/ tree"),
    ("readme", "optrace.publish.readme", "the reviewer's README of a staging store"),
    ("report-page", "optrace.report.pages", "a Markdown report as one self-contained HTML page (snakemake --report)"),
    (
        "dataset",
        "optrace.dataset.build",
        "build the cost-model dataset (parquet tables, runs.jsonl) from ingest outputs",
    ),
    ("bundle", "optrace.ingest.carry", "a trace and its untracked profiles/ and memory/ in one .bundle file"),
    ("autotune", "optrace.ingest.autotune", "join a trace's Helion autotune CSV rows to their meta records"),
    ("check-store", "optrace.publish.check_store", "run the store's own gates on any store directory"),
    ("gate", "optrace.admit.command", "admission into a live store: match, commit insert|confirm|conflict, commit-all"),
    ("make-schema", "optrace.gates.make_schema", "build or check the opt-trace-1.0 profile schema from its patch list"),
    ("scrub-check", "optrace.scrub.check", "report what would still leak from already-scrubbed files"),
    ("sheet", "optrace.run.sheet", "check a trace sheet and list the slug of each trace"),
    (
        "run-summary",
        "optrace.run.lifecycle",
        "the run summary of a target, from the files it declares; exit 1 when strict",
    ),
    ("example-trace", "optrace.example.embedded", "build the embedded example trace from its packaged sources"),
)
MODULES = {name: module for name, module, _ in COMMANDS}
# Writes that fail because of where the results live, not because of the input.
FULL_DEVICE = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
}


def usage() -> str:
    width = max(len(name) for name, _, _ in COMMANDS)
    rows = [f"  {name:<{width}}  {summary}" for name, _, summary in COMMANDS]
    return (
        "usage: optrace <command> [options]   (optrace <command> --help: its options)\n\n"
        "Mine GPU-kernel optimization traces into validated knowledge-store records and a cost-model dataset.\n\n"
        "commands:\n" + "\n".join(rows) + "\n\noptions:\n  -h, --help  show this list\n"
        "  --version   print the version"
    )


def run_main(main: Callable[[list[str]], int | None], argv: list[str]) -> int:
    """Run a stage's main with the project's error contract; what it prints has control characters
    escaped (trace names and text reach every command's output)."""
    escape_standard_streams()
    try:
        return int(main(argv) or 0)
    except InputError as exc:
        # one line whatever the trace's path holds: a newline in a directory name is escaped too
        print(escape_controls(f"error: {exc.where}: {exc.problem}"), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `optrace sheet x | head`: the reader left; say nothing more, exit as SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 141
    except OSError as exc:
        if exc.errno not in FULL_DEVICE:  # anything else is a bug: its traceback is wanted
            raise
        where = exc.filename or "output"
        print(escape_controls(f"error: {where}: {FULL_DEVICE[exc.errno]}; free space and re-run"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(usage(), file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        print(f"optrace {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in MODULES:
        print(f"error: unknown command {name!r}; commands: {', '.join(MODULES)} (optrace --help)", file=sys.stderr)
        return 2
    module = importlib.import_module(MODULES[name])
    return run_main(module.main, rest)


if __name__ == "__main__":
    sys.exit(main())
