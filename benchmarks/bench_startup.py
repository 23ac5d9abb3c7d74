"""Per-job start-up cost: what every Snakemake job pays before its stage does any work.

Each job is a fresh `python -m optrace <command>` process, so the interpreter, the CLI and the
imports of its stage are paid once per job. Measured in the same run, median of N (default 7):

- the interpreter floor (`python -c pass`) and `python -m optrace <command> --help` per command,
  with the heavy libraries (pandas, pyarrow, matplotlib, jsonschema, git) each command imports;
- a whole recon job on the embedded example trace (ingest outputs built first): it draws ladder.svg
  (optrace.report.ladderplot, no matplotlib), as a Snakemake job starts it.

    python benchmarks/bench_startup.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from optrace.cli import COMMANDS  # noqa: E402

HEAVY = ("pandas", "pyarrow", "matplotlib", "jsonschema", "git")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed copy runs


def wall(cmd: list[str], n: int, env: dict[str, str] = ENV) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_imports(command: str) -> list[str]:
    code = (
        "import contextlib, io, sys\nfrom optrace.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        main([{command!r}, '--help'])\n    except SystemExit:\n        pass\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True)
    return res.stdout.split()


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    py = sys.executable
    floor = wall([py, "-c", "pass"], n)
    print(f"interpreter floor (python -c pass): {floor * 1000:.0f} ms (median of {n})")
    print(f"{'command':<14} {'--help ms':>9} {'x floor':>8}  heavy imports")
    for name, _, _ in COMMANDS:
        t = wall([py, "-m", "optrace", name, "--help"], n)
        print(f"{name:<14} {t * 1000:>9.0f} {t / floor:>8.1f}  {' '.join(heavy_imports(name)) or '-'}")
    with tempfile.TemporaryDirectory() as tmp:
        trace, work = Path(tmp) / "kernel_opt_007_fused_add_rmsnorm_h4096", Path(tmp) / "work"
        subprocess.run(
            [py, "-m", "optrace", "example-trace", "--out", str(trace)], check=True, capture_output=True, env=ENV
        )
        subprocess.run(
            [py, "-m", "optrace", "ingest", str(trace), "--out-dir", str(work)],
            check=True,
            capture_output=True,
            env=ENV,
        )
        args = ["-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(Path(tmp) / "r")]
        recon = wall([py, *args], n)
    print(f"recon job on the example trace: {recon * 1000:.0f} ms ({recon / floor:.1f}x the floor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
