"""Gate `layout`: the record is its packet's target, filed where that target says.

A distilled record lives at `distilled/{slug}/<id>.json` (its packet's target.output, in this trace);
a staged copy at `records/<type>/<vendor>/<arch>/<dsl>/<operator_family | misc>/<id>.json`. Either way
the id, episode_key, level, type and every scope field the target names are the target's: an agent
cannot rename, re-scope or re-key what the partition decided.
"""

from __future__ import annotations

from ..storegates.model import Gate, RecordView, obj
from .model import Evidence, Packet, needs_packet

NO_FAMILY = "misc"  # the store's directory for records without an operator family


def staged_path(packet: Packet) -> str:
    target, scope = packet.target, obj(packet.target, "scope")
    parts = [packet.data.get("record_type"), scope.get("vendor"), scope.get("arch"), scope.get("dsl"),
             scope.get("operator_family") or NO_FAMILY]
    return f"records/{'/'.join(map(str, parts))}/{target.get('id')}.json"


def expected_path(relpath: str, packet: Packet, slug: str) -> str:
    if relpath.startswith("records/"):
        return staged_path(packet)
    return f"distilled/{slug}/{packet.target.get('id')}.json"


def field_mismatches(record: dict, packet: Packet) -> list[tuple[str, object, object]]:
    """(field, record's value, target's value) for every targeted field the record changed."""
    target = packet.target
    pairs = [("id", record.get("id"), target.get("id")),
             ("episode_key", record.get("episode_key"), target.get("episode_key")),
             ("level", record.get("level"), target.get("level")),
             ("type", record.get("type"), packet.data.get("record_type"))]
    scope = obj(record, "retrieval", "scope")
    pairs += [(f"retrieval.scope.{k}", scope.get(k), v) for k, v in obj(target, "scope").items()]
    return [(name, got, want) for name, got, want in pairs if got != want]


@needs_packet
def check(view: RecordView, ev: Evidence) -> list[str]:
    rel = view.relpath
    want = expected_path(rel, ev.packet, ev.trace.slug)
    out = [] if rel == want else [f"{rel}: filed at the wrong place; its packet's target is {want}"]
    out += [f"{rel}: {name}: {got!r} is not the packet's target {want!r}"
            for name, got, want in field_mismatches(view.record, ev.packet)]
    return out


GATE = Gate("layout", "each record is its packet's target (id, episode_key, level, type, scope) at its path",
            check=check)
