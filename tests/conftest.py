import json
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
