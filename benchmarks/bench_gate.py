"""Time `optrace gate` against the 847-record upstream store (targets from issue #12).

    python benchmarks/bench_gate.py [STORE_ROOT] [--runs N] [--records N]

1. `gate match --input` on one record, a fresh process per run (what a user or agent meets):
   target <= 0.15 s (reference 0.3 s).
2. `gate match --all` over N staged records (default 1000) in one process: target <= 5 s.
3. `gate commit-all` of those N inserts into a copy of the store: target <= 20 s (the reference
   rewrote its 1.8 MB index on every insert); then `check-store` on the result must pass.
The machine is shared with other jobs: the medians of several runs are the figures to report.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))
from optrace.gates.store.specimens import anti_strategy, reference_kernel, strategy  # noqa: E402

DEFAULT_STORE = REPO.parent / "shared" / "data" / "upstream-store"
TARGETS = {"match one": 0.15, "match --all": 5.0, "commit-all": 20.0}
ENV = {**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")}


def gate(*args, check=True) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "optrace", *map(str, args)], capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    if check and proc.returncode != 0:
        sys.exit(
            f"{' '.join(map(str, args))} failed (rc={proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return elapsed, proc


def batch(n: int) -> list[dict]:
    """n distinct staged records: 50% strategies, 40% anti-strategies, 10% reference kernels linking to one."""
    out = []
    for i in range(n):
        kind = "s" if i % 10 < 5 else "a" if i % 10 < 9 else "r"
        rec = copy.deepcopy({"s": strategy, "a": anti_strategy, "r": reference_kernel}[kind]())
        rec["id"] = f"{rec['id'][:-6]}{i:06x}"
        rec["episode_key"] = rec["episode_key"].replace(rec["episode_key"].split("|")[3], f"lever_{i}")
        if kind == "r":
            rec["retrieval"]["links"]["parent"] = out[i - 5]["id"]
        out.append(rec)
    return out


def writable_copy(src: Path, dest: Path) -> Path:
    """The shared data is read-only; the copy must take inserts."""
    subprocess.run(["cp", "-r", "--no-preserve=mode", str(src), str(dest)], check=True)
    return dest


def report(name: str, seconds: float, extra: str = "") -> None:
    target = TARGETS[name]
    print(f"  {name}: {seconds:.3f} s (target {target} s: {'met' if seconds <= target else 'MISSED'}){extra}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", nargs="?", type=Path, default=DEFAULT_STORE)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--records", type=int, default=1000)
    args = ap.parse_args()
    if not (args.store / "records").is_dir():
        sys.exit(f"no store at {args.store} (expected records/ inside)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        one = tmp / "one.json"
        one.write_text(json.dumps(anti_strategy()))
        walls, cpus = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            walls.append(gate("gate", "match", "--input", one, "--store", args.store)[0])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        print(f"gate against {args.store} ({args.runs} runs each where repeated)")
        report(
            "match one",
            statistics.median(walls),
            f"; min {min(walls):.3f} s, max {max(walls):.3f} s, "
            f"CPU median {statistics.median(cpus):.3f} s; fresh process each, reference 0.3 s",
        )

        staging = tmp / "staging"
        (staging / "records").mkdir(parents=True)
        for rec in batch(args.records):
            (staging / "records" / f"{rec['id']}.json").write_text(json.dumps(rec, indent=1))
        proposals = staging / "reports" / "match.json"
        walls = [
            gate("gate", "match", "--all", staging, "--store", args.store, "--out", proposals)[0]
            for _ in range(max(1, args.runs // 2))
        ]
        counts = json.loads(proposals.read_text())["counts"]
        report(
            "match --all", statistics.median(walls), f" over {args.records} records, one process; proposals {counts}"
        )

        walls = []
        for run in range(max(1, args.runs // 3)):
            store = writable_copy(args.store, tmp / f"store{run}")
            seconds, proc = gate("gate", "commit-all", "--proposals", proposals, "--store", store)
            walls.append(seconds)
            outcome = json.loads(proc.stdout)["counts"]
            check_s, check = gate("check-store", store, check=False)
            shutil.rmtree(store)
        report(
            "commit-all",
            statistics.median(walls),
            f" for {args.records} inserts into a copy; outcomes {outcome}; check-store after: "
            f"{'passed' if check.returncode == 0 else 'FAILED'} ({check_s:.2f} s)",
        )
        per = statistics.median(walls) / args.records * 1000
        print(f"  per insert: {per:.1f} ms (validation, journal, record file; one index write per group of 50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
