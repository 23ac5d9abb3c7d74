"""Gate `no-cross-reference`: payload and gain stand alone, pointing at nothing the agent cannot open.

Fails on wiki pages (`*.md`), store paths (`docs/...`, `records/...` with a second segment or an
extension, so "3 records/s" is fine), ids of other records (any vendor, any arch or product), and a
stored serve-time field (implementation.source_text / source_truncated). Code is not read here.
"""

from __future__ import annotations

from optrace.gates.store.model import Gate, GateContext, RecordView, obj
from optrace.scrub.leak_patterns import find_cross_references

SERVE_TIME_FIELDS = ("source_text", "source_truncated")


def check(view: RecordView, ctx: GateContext) -> list[str]:
    blob = view.payload_and_gain_text
    out = [
        f"{view.relpath}: {blob.where(ref.start)}: {ref.kind} {ref.token!r}" for ref in find_cross_references(blob.text)
    ]
    implementation = obj(view.record, "payload", "implementation")
    out += [
        f"{view.relpath}: payload.implementation.{key}: serve-time field stored in the record"
        for key in SERVE_TIME_FIELDS
        if key in implementation
    ]
    return out


GATE = Gate(
    "no-cross-reference", "no pages, store paths, record ids or serve-time code in payload and gain", check=check
)
