"""Gate `relations`: every retrieval.links target is a record of this store (and not the record itself)."""

from __future__ import annotations

from collections.abc import Iterator

from optrace.gates.store.model import Gate, GateContext, RecordView, obj


def link_targets(record: dict) -> Iterator[tuple[str, str]]:
    for key, value in obj(record, "retrieval", "links").items():
        for target in value if isinstance(value, list) else [value]:
            if isinstance(target, str):
                yield key, target


def check(view: RecordView, ctx: GateContext) -> list[str]:
    rid = view.record.get("id")
    out = []
    for key, target in link_targets(view.record):
        if target == rid:
            out.append(f"{view.relpath}: retrieval.links.{key}: links to the record itself")
        elif target not in ctx.known_ids:
            out.append(f"{view.relpath}: retrieval.links.{key}: unknown record {target!r}")
    return out


def has_links(view: RecordView) -> bool:
    return bool(obj(view.record, "retrieval", "links"))


GATE = Gate("relations", "every retrieval.links target is a record of the store", check=check, applies=has_links)
