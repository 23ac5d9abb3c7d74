"""Running real snakemake on a private copy of the workflow."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

# What a private copy of the workflow leaves out: each workflow test gets its own .snakemake and results.
IGNORED = (
    ".git",
    ".snakemake",
    "results",
    ".venv",
    "__pycache__",
    "*.egg-info",
    "tests",
    "benchmarks",
    "docs",
    ".mypy_cache",
    ".ruff_cache",
    "build",
)
WORKFLOW_IGNORE = shutil.ignore_patterns(*IGNORED)


def copy_workflow(dest: Path) -> Path:
    shutil.copytree(ROOT, dest, ignore=WORKFLOW_IGNORE)
    return dest


def run_snakemake(wd, *args, check=True, env=None) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", *map(str, args)], cwd=wd, capture_output=True, text=True, env=env
    )
    if check and res.returncode != 0:
        raise AssertionError(f"snakemake failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res
