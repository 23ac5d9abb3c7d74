import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tracekit


def load_schema(name: str) -> dict:
    return json.loads((ROOT / "schemas" / name).read_text())


def assert_valid(rows, schema_name: str):
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    for row in rows if isinstance(rows, list) else [rows]:
        errors = sorted(validator.iter_errors(row), key=str)
        assert not errors, f"{schema_name}: {errors[0].message} in {json.dumps(row)[:300]}"


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has none)")
    return SHARED_DATA


# What a private copy of the workflow leaves out: each workflow test gets its own .snakemake and results.
WORKFLOW_IGNORE = shutil.ignore_patterns(".git", ".snakemake", "results", ".venv", "__pycache__", "*.egg-info",
                                         "tests", "benchmarks")


def copy_workflow(dest: Path) -> Path:
    shutil.copytree(ROOT, dest, ignore=WORKFLOW_IGNORE)
    return dest


@pytest.fixture
def workdir(tmp_path):
    """A private copy of the workflow to run real snakemake in."""
    return copy_workflow(tmp_path / "wf")


def run_snakemake(wd, *args, check=True, env=None) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "snakemake", "-c2", *map(str, args)], cwd=wd,
                         capture_output=True, text=True, env=env)
    if check and res.returncode != 0:
        raise AssertionError(f"snakemake failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res
