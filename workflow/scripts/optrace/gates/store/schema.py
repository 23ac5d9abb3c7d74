"""Gate `schema`: every record conforms to our clean-1.3 contract (compiled once per process)."""

from __future__ import annotations

from functools import cache
from typing import Any

from optrace import SCHEMAS
from optrace.contracts import Check, compile_file
from optrace.gates.store.model import Gate, GateContext, RecordView

CONTRACT = SCHEMAS / "clean-1.3.schema.json"


@cache
def contract_errors() -> Check:
    return compile_file(CONTRACT)


def errors_of(record: Any, relpath: str) -> list[str]:
    """Works on any parsed JSON, not only objects: a top-level list is a schema FAIL too."""
    return [f"{relpath}: {loc}: {msg}" for loc, msg in contract_errors()(record)]


def check(view: RecordView, ctx: GateContext) -> list[str]:
    return errors_of(view.record, view.relpath)


GATE = Gate("schema", "every record conforms to clean-1.3", check=check)
