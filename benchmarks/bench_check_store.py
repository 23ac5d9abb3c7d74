"""Time `optrace check-store` on the 847-record upstream store (target <= 0.5 s; reference 2.4 s).

    python benchmarks/bench_check_store.py [STORE_ROOT] [--runs N]

Wall time is measured the way a user meets it: a fresh `python -m optrace.cli check-store` process
per run (interpreter start, imports, loading, all 9 gates, output). An in-process split shows where
the time goes. The machine is shared, so the median of several runs is the figure to report.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STORE = REPO.parent / "shared" / "data" / "upstream-store"
TARGET_S, REFERENCE_S = 0.5, 2.4


def wall_runs(store: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "optrace.cli", "check-store", str(store)], capture_output=True, text=True
        )
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"check-store failed (rc={proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return times


def in_process(store: Path, runs: int) -> dict[str, float]:
    from optrace.gates.store.runner import run_gates
    from optrace.gates.store.store import load_store

    phases: dict[str, list[float]] = {"load records + index": [], "9 gates": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        loaded = load_store(store)
        t1 = time.perf_counter()
        run_gates(loaded)
        t2 = time.perf_counter()
        phases["load records + index"].append(t1 - t0)
        phases["9 gates"].append(t2 - t1)
    return {name: statistics.median(ts) for name, ts in phases.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", nargs="?", type=Path, default=DEFAULT_STORE)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    if not (args.store / "records").is_dir():
        sys.exit(f"no store at {args.store} (expected records/ inside)")
    walls = wall_runs(args.store, args.runs)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    median = statistics.median(walls)
    print(f"check-store {args.store} ({args.runs} runs, fresh process each)")
    print(f"  wall: median {median:.3f} s, min {min(walls):.3f} s, max {max(walls):.3f} s; peak RSS {peak_mb:.0f} MB")
    print(
        f"  target {TARGET_S} s: {'met' if median <= TARGET_S else 'MISSED'}; "
        f"reference {REFERENCE_S} s -> {REFERENCE_S / median:.1f}x faster"
    )
    for name, seconds in in_process(args.store, args.runs).items():
        print(f"  in-process {name}: {seconds:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
