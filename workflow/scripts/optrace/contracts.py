r"""Contracts checked against their JSON schemas (2020-12) by jsonschema, each validator built once.

A compiled validator (jsonschema-rs) is the fast path: an instance it accepts is valid, with no
Python walk of the schema (the record gates judge thousands of records per run; figures in
benchmarks/README.md). An instance it refuses goes to jsonschema, whose verdict and wording decide
(the two read regular expressions differently: `\w` is ASCII for jsonschema-rs, Unicode for Python).
tests/test_contracts.py and tests/gates/test_schema_contract.py hold both to the same verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

# (location, message); location is a JSONPath-like string such as `$.payload.problem`
Error = tuple[str, str]


class SchemaError(ValueError):
    """The schema itself is not a valid 2020-12 schema (a bug in our schema, not input)."""


def location(path: Iterable[str | int]) -> str:
    return "$" + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)


class Check:
    """One schema's contract: calling it gives an instance's errors ([] when it is valid);
    `is_valid` gives the same verdict without collecting every message."""

    def __init__(self, schema: dict) -> None:
        try:
            self._fast = jsonschema_rs.validator_for(schema, validate_formats=False)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            raise SchemaError(str(exc).splitlines()[0]) from None
        self._schema = schema
        self._explain: Any = None  # jsonschema's validator, built on the first instance that fails

    def _jsonschema(self) -> Any:
        if self._explain is None:
            import jsonschema  # only a failing instance pays for its import and its validator

            self._explain = jsonschema.Draft202012Validator(self._schema)
        return self._explain

    def is_valid(self, instance: Any) -> bool:
        return bool(self._fast.is_valid(instance)) or bool(self._jsonschema().is_valid(instance))

    def __call__(self, instance: Any) -> list[Error]:
        if self._fast.is_valid(instance):
            return []
        return [(location(e.absolute_path), e.message) for e in self._jsonschema().iter_errors(instance)]


def compile_schema(schema: dict) -> Check:
    """The contract of `schema`, its validators built once."""
    return Check(schema)


@cache
def compile_file(path: str | Path) -> Check:
    return compile_schema(json.loads(Path(path).read_text(encoding="utf-8")))
