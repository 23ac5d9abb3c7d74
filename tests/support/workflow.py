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


# The named targets (Snakefile): each runs on every invocation to print the run summary.
TARGETS = {"all", "validate", "ingest", "recon", "partition", "packets", "distill", "staging", "dataset"}


def rules_run(res: subprocess.CompletedProcess | str) -> list[str]:
    """The rule of every job a run executed (`rule x:` / `localrule x:` lines of its log), in order."""
    out = []
    text = res if isinstance(res, str) else res.stdout + res.stderr
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in ("rule", "localrule") and words[1].endswith(":"):
            out.append(words[1][:-1])
    return out


def only_the_target_ran(res: subprocess.CompletedProcess | str) -> bool:
    """A no-op: no stage ran, only the named target that prints the summary."""
    ran = rules_run(res)
    return len(ran) == 1 and ran[0] in TARGETS
