"""Ingest benchmark: synthetic traces of 300 and 3000 versions, ingest time and peak memory next to
the git floor (`git log --first-parent --raw` + one `git cat-file --batch` over every kernel blob).

    python benchmarks/bench_ingest.py [--sizes 300 3000] [--repeat 3]
Target (DESIGN §9, 2 cores): 3000 versions <= 3 s; reference implementation: 41 s.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import synthetic_trace

REFERENCE_S = {300: 1.98, 3000: 40.7}


def timed(cmd, **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds and peak RSS (MB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, check=True, **kw)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, res


def git_floor(trace: Path) -> float:
    t0 = time.perf_counter()
    cfg = ["-c", "core.deltaBaseCacheLimit=8m"]  # as ingest runs git
    log = subprocess.run(["git", *cfg, "log", "--first-parent", "--no-renames", "--raw", "--no-abbrev", "-z",
                          "--format=%x1e%H%x1f%P%x1f%aI%x1f%s%x1f%b%x1f", "HEAD"], cwd=trace, capture_output=True, check=True).stdout
    blobs = sorted({field.split()[3] for field in log.decode(errors="replace").split("\0")
                    if field.startswith(":") and len(field.split()) >= 5})
    subprocess.run(["git", *cfg, "cat-file", "--batch"], cwd=trace, input="\n".join(blobs).encode() + b"\n",
                   capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 3000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'versions':>8} {'build s':>8} {'floor s':>8} {'ingest s':>9} {'x floor':>8} {'peak MB':>8} {'reference s':>12}")
    with tempfile.TemporaryDirectory(prefix="optrace-bench-") as tmp:
        for n in args.sizes:
            trace = Path(tmp) / f"kernel_opt_{n:03d}_gemm_n4096_k4096"
            t0 = time.perf_counter()
            synthetic_trace(trace, n)
            build = time.perf_counter() - t0
            floor = min(git_floor(trace) for _ in range(args.repeat))
            runs = []
            for i in range(args.repeat):
                # a fresh interpreter each time, as Snakemake runs it: import cost included
                runs.append(timed([sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", f"{tmp}/out{n}"]))
            wall = min(r[0] for r in runs)
            peak = max(r[1] for r in runs)
            ref = REFERENCE_S.get(n)
            print(f"{n:>8} {build:>8.2f} {floor:>8.3f} {wall:>9.3f} {wall / floor:>8.1f} {peak:>8.0f} {ref if ref else '-':>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
