"""Checking rows against the project's own JSON schemas."""

import json

import jsonschema

from tests.support.paths import SCHEMAS


def load_schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def assert_valid(rows, schema_name: str):
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    for row in rows if isinstance(rows, list) else [rows]:
        errors = sorted(validator.iter_errors(row), key=str)
        assert not errors, f"{schema_name}: {errors[0].message} in {json.dumps(row)[:300]}"
