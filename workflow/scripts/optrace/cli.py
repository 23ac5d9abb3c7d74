"""`optrace <stage> ...`: one entry point that dispatches to each stage module's `main(argv)`.

Every stage is also runnable as `python -m optrace.<module>`. Bad input ends with one line on stderr
naming the file and the problem (exit 2), never a traceback.
"""

from __future__ import annotations

import importlib
import sys

from .errors import InputError

# subcommand -> module; each module exposes main(argv: list[str]) -> int
COMMANDS = {
    "ingest": "optrace.ingest",
    "recon": "optrace.recon",
    "partition": "optrace.partition",
    "stage": "optrace.stage",
    "readme": "optrace.readme",
    "packets": "optrace.packets",
    "example-trace": "optrace.example_trace",
    "sheet": "optrace.sheet",
    "check-store": "optrace.check_store",
    "make-schema": "optrace.make_schema",
    "autotune": "optrace.autotune",
    "scrub-check": "optrace.anonymize",
    "dataset": "optrace.dataset",
    "distill": "optrace.distill",
    "validate": "optrace.validate",
    "gate": "optrace.gate",
}


def run_main(main, argv) -> int:
    """Run a stage's main with the project's error contract."""
    try:
        return int(main(argv) or 0)
    except InputError as exc:
        print(f"error: {exc.where}: {exc.problem}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: optrace <command> [args]\n\ncommands:\n  " + "\n  ".join(sorted(COMMANDS)))
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}; known: {', '.join(sorted(COMMANDS))}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name])
    return run_main(module.main, rest)


if __name__ == "__main__":
    sys.exit(main())
