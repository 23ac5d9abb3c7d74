"""Every benchmark, one after another: `python benchmarks/run_all.py` (about 13 minutes on 2 cores).

check-store on the real 847-record store (skipped without ../shared), each stage on 300 and 3000
versions, validation of ~1200 records and re-validation after 10, and sheets of 100, 400 and 1000 traces (planning;
full run, no-op re-run and a 10-record batch up to 400), and planning alone on sheets of 1000, 3000 and 10 000
traces. Each script prints its own targets.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_check_store.py",
    "bench_gate.py",
    "bench_pipeline.py",
    "bench_validate.py",
    "bench_workflow.py",
    "bench_plan.py",
    "bench_isolated.py",
    "bench_startup.py",
]


def main() -> int:
    failed = []
    for script in SCRIPTS:
        print(f"\n=== {script} ===", flush=True)
        if subprocess.run([sys.executable, str(HERE / script)], cwd=HERE).returncode != 0:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
