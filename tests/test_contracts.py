"""optrace.contracts: the compiled validator's verdict is jsonschema's, and jsonschema words each error."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest

from optrace import SCHEMAS
from optrace.contracts import SchemaError, compile_file, compile_schema, location

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "n"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9]+(\\.[a-z0-9-]+){2,}$", "maxLength": 20},
        "n": {"type": "integer", "minimum": 1},
        "kind": {"enum": ["a", 1]},
        "fixed": {"const": 2},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 1},
        "either": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 2}]},
        "word": {"type": "string", "pattern": "^\\w+$"},
    },
    "$defs": {"tag": {"type": "string", "not": {"const": "bad"}}},
}

CASES = {
    "valid": {"id": "a.b.c", "n": 1},
    "valid, every field": {
        "id": "a.b-c.d",
        "n": 3,
        "kind": 1,
        "fixed": 2.0,
        "tags": ["x"],
        "either": None,
        "word": "naïve_1",
    },
    "missing n": {"id": "a.b.c"},
    "extra key": {"id": "a.b.c", "n": 1, "x": 0},
    "bad pattern": {"id": "A.b.c", "n": 1},
    "too long": {"id": "a.b." + "c" * 30, "n": 1},
    "bool is no integer": {"id": "a.b.c", "n": True},
    "integral float is an integer": {"id": "a.b.c", "n": 2.0},
    "below minimum": {"id": "a.b.c", "n": 0},
    "enum: true is not 1": {"id": "a.b.c", "n": 1, "kind": True},
    "const: 2.0 is 2": {"id": "a.b.c", "n": 1, "fixed": 2.0},
    "empty tags": {"id": "a.b.c", "n": 1, "tags": []},
    "ref + not": {"id": "a.b.c", "n": 1, "tags": ["ok", "bad"]},
    "anyOf neither": {"id": "a.b.c", "n": 1, "either": "x"},
    "unicode word": {"id": "a.b.c", "n": 1, "word": "héllo"},
    "word with a space": {"id": "a.b.c", "n": 1, "word": "a b"},
    "not an object": ["a"],
}


def test_the_verdict_of_every_case_is_jsonschemas():
    check, reference = compile_schema(SCHEMA), jsonschema.Draft202012Validator(SCHEMA)
    verdicts = {name: reference.is_valid(doc) for name, doc in CASES.items()}
    for name, doc in CASES.items():
        assert (check(doc) == []) == verdicts[name], name
    assert {n for n, ok in verdicts.items() if ok} == {
        "valid",
        "valid, every field",
        "integral float is an integer",
        "const: 2.0 is 2",
        "unicode word",
    }


def test_each_error_is_jsonschemas_message_at_its_location():
    check = compile_schema(SCHEMA)
    assert check(CASES["missing n"]) == [("$", "'n' is a required property")]
    assert check(CASES["ref + not"]) == [("$.tags[1]", "'bad' should not be valid under {'const': 'bad'}")]
    assert [loc for loc, _ in check(CASES["extra key"])] == ["$"]
    assert location(["a", 0, "b"]) == "$.a[0].b" and location([]) == "$"


def test_a_schema_that_is_not_a_schema_is_refused_when_compiled():
    with pytest.raises(SchemaError):
        compile_schema({"type": "no-such-type"})


def test_a_schema_file_is_compiled_once():
    path = SCHEMAS / "clean-1.3.schema.json"
    assert compile_file(path) is compile_file(path)


def test_a_valid_instance_never_imports_jsonschema():
    code = (
        "import sys\nfrom optrace.contracts import compile_schema\n"
        "c = compile_schema({'type': 'object', 'required': ['a']})\n"
        "assert c({'a': 1}) == []\nprint('jsonschema' in sys.modules)\n"
        "c({})\nprint('jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
