"""Many traces as few jobs, on a real Slurm cluster: submissions and wall time of a trace sheet run
through profiles/slurm with the per-trace chains packed (the profile's group-components) and not
packed (one group job per trace), each from a clean results directory.

Needs a cluster that answers `sinfo` (on one machine: sudo .ci/slurm/start). Not part of the tests.

    python benchmarks/bench_slurm.py [--traces 20] [--versions 30] [--pack 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import synthetic_trace

ROOT = Path(__file__).resolve().parents[1]
SUBMITTED = re.compile(r"has been submitted with SLURM jobid \d+ \(log: .*/slurm_logs/([^/]+)/")


def partition() -> str:
    res = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.split():
        raise SystemExit("no Slurm answers here (`sinfo` fails); start one with .ci/slurm/start")
    names = res.stdout.split()
    return next((n.rstrip("*") for n in names if n.endswith("*")), names[0])


def run(wd: Path, sheet: Path, *extra: str) -> tuple[float, dict[str, int]]:
    shutil.rmtree(wd / "results", ignore_errors=True)
    shutil.rmtree(wd / ".snakemake", ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--workflow-profile",
        "none",
        "--profile",
        "profiles/slurm",
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--default-resources",
        "slurm_account=bench",
        f"slurm_partition={partition()}",
        "mem_mb=1000",
        "runtime=10",
        "--config",
        f"traces={sheet}",
        *extra,
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{res.stderr[-3000:]}")
    kinds: dict[str, int] = {}
    for kind in SUBMITTED.findall(res.stdout + res.stderr):
        kind = kind.split("_")[0] + "_" + kind.split("_")[1]  # group_trace, group_store, rule_dataset
        kinds[kind] = kinds.get(kind, 0) + 1
    return wall, kinds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=20)
    ap.add_argument("--versions", type=int, default=30)
    ap.add_argument("--pack", type=int, default=None, help="group-components for trace_chain (default: the profile's)")
    args = ap.parse_args()
    partition()
    with tempfile.TemporaryDirectory(prefix="optrace-slurm-bench-") as tmp:
        tmp = Path(tmp)
        wd = tmp / "wf"
        shutil.copytree(
            ROOT,
            wd,
            ignore=shutil.ignore_patterns(
                ".git", ".snakemake", "results", ".venv", "__pycache__", "tests", "benchmarks"
            ),
        )
        rows = ["label\tpath"]
        for i in range(args.traces):
            name = f"kernel_opt_{i:03d}_gemm_n4096_k4096"
            synthetic_trace(tmp / "traces" / name, args.versions, seed=i)
            rows.append(f"{name}\t{tmp / 'traces' / name}")
        sheet = tmp / "traces.tsv"
        sheet.write_text("\n".join(rows) + "\n")
        packed = ["--group-components", f"trace_chain={args.pack}"] if args.pack else []
        for label, extra in (("packed", packed), ("one job per trace", ["--group-components", "trace_chain=1"])):
            wall, kinds = run(wd, sheet, *extra)
            print(
                f"{args.traces} traces, {label:18s} {sum(kinds.values()):3d} submissions {kinds}  wall {wall:6.1f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
