"""`optrace check-store STORE_ROOT`: run the store's 9 gates on any store and say which fail.

One `PASS|FAIL|SKIP <gate> <what it checks>` line per gate, then the failing records (by path),
then a summary line. Exit 0 when no gate fails (SKIP = nothing to check), 1 otherwise.
`--injection-tests` instead proves every gate can fire: it plants one defect per gate into an
in-memory copy of the store (or of built-in specimen records) and checks that exactly that gate fails.
"""

from __future__ import annotations

import argparse
import sys

from optrace.gates.store.model import FAIL, GATES, GateResult
from optrace.gates.store.runner import run_gates
from optrace.gates.store.store import load_store
from optrace.scrub.leak_patterns import read_denylist

DEFAULT_SHOWN = 12  # messages printed per failing gate unless --all


def format_results(results: list[GateResult], shown: int | None) -> str:
    width = max(len(g) for g in GATES)
    lines = []
    for r in results:
        lines.append(f"{r.status} {r.gate:<{width}}  {r.summary}")
        for msg in r.messages[:shown]:
            lines.append(f"    {msg}")
        if shown is not None and len(r.messages) > shown:
            lines.append(f"    ... and {len(r.messages) - shown} more (--all shows every message)")
    failed = sum(r.status == FAIL for r in results)
    lines.append(f"{failed} of {len(results)} gates failed" if failed else f"all {len(results)} gates passed")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="optrace check-store", description=__doc__.split("\n\n")[0])
    ap.add_argument("store_root", nargs="?", help="directory holding records/ (and records/index.json)")
    ap.add_argument("--all", action="store_true", help="print every message, not the first 12 per gate")
    ap.add_argument(
        "--injection-tests",
        action="store_true",
        help="plant one defect per gate and check each fires (built-in specimens without STORE_ROOT)",
    )
    args = ap.parse_args(argv)
    if args.store_root is None and not args.injection_tests:
        ap.error("STORE_ROOT is required")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    terms = read_denylist()
    if args.injection_tests:
        from optrace.gates.store.injection import format_outcomes, run_injections, specimen_store

        store = load_store(args.store_root) if args.store_root else specimen_store()
        outcomes = run_injections(store, terms)
        print(format_outcomes(outcomes))
        return 0 if outcomes and all(o.fired for o in outcomes) else 1
    results = run_gates(load_store(args.store_root), terms)
    print(format_results(results, None if args.all else DEFAULT_SHOWN))
    return 1 if any(r.status == FAIL for r in results) else 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
