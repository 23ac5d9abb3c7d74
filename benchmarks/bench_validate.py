"""Time `optrace validate trace` on ~1200 drafted records of synthetic traces.

    python benchmarks/bench_validate.py [--versions 3000] [--traces 5] [--runs 5]

Each synthetic trace is mined (ingest, partition, packets) and distilled by the drafter, as the workflow
would; the drafter writes ~250 records per 3000-version trace (it refuses anti-strategies whose packet
states no cause), so ~1200 records take five traces. Every figure is the wall time of fresh
`python -m optrace validate trace` processes, one per trace as Snakemake runs them (interpreter start
and imports included):

- full validation, cold cache: every record judged by all 17 gates (target <= 2 s; reference 16.5 s),
  both with two jobs at a time (`snakemake -c2` on the 2-core target machine) and one after another;
- re-validation after 10 new records in one trace: only that trace's job runs, its cache holds every
  other record (target <= 0.3 s).

Children run with Python's default bytecode cache even when PYTHONDONTWRITEBYTECODE is set here
(compiling the ~40 imported modules on every start costs ~70 ms, which no installed copy pays). The
machine is shared, so the median of several runs is the figure to report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from synthetic import synthetic_trace

FULL_TARGET_S, FULL_REFERENCE_S = 2.0, 16.5
INCREMENT_TARGET_S, NEW_RECORDS = 0.3, 10
PY = [sys.executable, "-m", "optrace"]
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # children as an installed copy runs them
ENV = dict(os.environ)


PEAK_MB: dict[str, float] = {}  # optrace command -> largest peak RSS of one process
CPU_S = [0.0]  # user+sys seconds of every optrace process so far: the figure a loaded machine leaves intact
CPU_LOCK = threading.Lock()


def run(args: list, quiet: bool = True) -> float:
    """Wall seconds of one optrace process; records its peak RSS (os.wait4 on the child)."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([*PY, *map(str, args)], stdout=out, stderr=subprocess.STDOUT, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"optrace {args[0]} failed:\n{text}")
    PEAK_MB[args[0]] = max(PEAK_MB.get(args[0], 0.0), usage.ru_maxrss / 1024)
    with CPU_LOCK:
        CPU_S[0] += usage.ru_utime + usage.ru_stime
    if not quiet:
        print(text.strip())
    return wall


def mine(results: Path, trace: Path, slug: str) -> int:
    """ingest -> partition -> packets -> distill (draft); the number of records written."""
    work, packets = results / "work" / slug, results / "packets" / slug
    run(["ingest", trace, "--out-dir", work])
    run(["partition", "--work-dir", work, "--report", results / "staging/reports" / slug / "partition.md"])
    run(["packets", trace, "--work-dir", work, "--out-dir", packets, "--slug", slug])
    run(
        [
            "distill",
            "--packets",
            packets,
            "--out",
            results,
            "--report",
            results / "staging/reports" / slug / "distill.json",
            "--mode",
            "draft",
        ]
    )
    return len(list((results / "distilled" / slug).glob("*.json")))


def validate(results: Path, slug: str) -> float:
    return run(["validate", "trace", "--results", results, "--slug", slug])


def validate_all(results: Path, slugs: list[str], jobs: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda slug: validate(results, slug), slugs))
    return time.perf_counter() - start


def drop_cache(results: Path, slugs: list[str]) -> None:
    for slug in slugs:
        (results / "work" / slug / "validation-cache.json").unlink(missing_ok=True)


def full_runs(results: Path, slugs: list[str], runs: int, jobs: int) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds of all its processes) of each run."""
    times, cpu = [], []
    for _ in range(runs):
        drop_cache(results, slugs)
        before = CPU_S[0]
        times.append(validate_all(results, slugs, jobs))
        cpu.append(CPU_S[0] - before)
    return times, cpu


def increment_runs(results: Path, slug: str, runs: int) -> tuple[list[float], list[float]]:
    """Hold back 10 records of one trace, validate it (warming its cache), put them back, time the re-run."""
    folder = results / "distilled" / slug
    newest = sorted(folder.glob("*.json"))[-NEW_RECORDS:]
    aside = folder.parent / ".held-back"
    aside.mkdir(exist_ok=True)
    times, cpu = [], []
    for _ in range(runs):
        for path in newest:
            path.rename(aside / path.name)
        validate(results, slug)
        for path in newest:
            (aside / path.name).rename(path)
        before = CPU_S[0]
        times.append(validate(results, slug))
        cpu.append(CPU_S[0] - before)
    return times, cpu


def report(name: str, runs: tuple[list[float], list[float]], target: float, reference: float | None) -> None:
    times, cpu = runs
    median = statistics.median(times)
    ref = f"; reference {reference} s -> {reference / median:.1f}x faster" if reference else ""
    print(
        f"  {name}: median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f}), "
        f"{statistics.median(cpu):.2f} CPU s; target {target} s: {'met' if median <= target else 'MISSED'}{ref}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", type=int, default=3000, help="versions per synthetic trace")
    ap.add_argument("--traces", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="optrace-bench-validate-") as tmp:
        results, slugs, records = Path(tmp) / "results", [], 0
        for k in range(args.traces):
            slug = f"{k:03d}-gemm-n4096-k4096"
            trace = synthetic_trace(Path(tmp) / f"kernel_opt_{k:03d}_gemm_n4096_k4096", args.versions, seed=3 + k)
            records += mine(results, trace, slug)
            slugs.append(slug)
        print(
            f"validate: {records} drafted records in {len(slugs)} synthetic traces of {args.versions} versions "
            f"({args.runs} runs, a fresh process per trace)"
        )
        report(
            "full validation, cold cache, 2 jobs at a time",
            full_runs(results, slugs, args.runs, 2),
            FULL_TARGET_S,
            FULL_REFERENCE_S,
        )
        report(
            "full validation, cold cache, 1 job at a time",
            full_runs(results, slugs, args.runs, 1),
            FULL_TARGET_S,
            FULL_REFERENCE_S,
        )
        largest = max(slugs, key=lambda s: len(list((results / "distilled" / s).glob("*.json"))))
        report(
            f"re-validation after {NEW_RECORDS} new records",
            increment_runs(results, largest, args.runs),
            INCREMENT_TARGET_S,
            None,
        )
        print(f"  peak RSS of one validate process: {PEAK_MB['validate']:.0f} MB (target <= 200 MB)")
        for slug in slugs:
            run(["validate", "trace", "--results", results, "--slug", slug], quiet=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
