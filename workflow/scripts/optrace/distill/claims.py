"""What the drafter writes and what each of its sentences rests on.

Every string a record serves is a claim: one or more sentences (`Said`), each citing the evidence items
(`e3`) and measurement slots (`measurements.geomean_us`) of its own packet it rests on, and naming the slot
of every number it writes that is not quoted from a cited item. `Claims` collects them per field path and
renders the block the record carries in `evidence.raw.evidence_extra.claims` (raw is human-only, so
retrieval never serves it; the claims gate reads it). `Sources` is the packet's evidence, by kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optrace.facts import ABSOLUTE_LATENCY


@dataclass(frozen=True)
class Said:
    says: str
    cites: tuple[str, ...]
    slots: tuple[tuple[str, str], ...] = ()  # (number as written, slot name)

    def entry(self) -> dict:
        out: dict = {"says": self.says, "cites": list(self.cites)}
        if self.slots:
            out["slots"] = dict(self.slots)
        return out


@dataclass
class Claims:
    packet: str  # the packet's seg_id
    fields: dict[str, list[Said]] = field(default_factory=dict)

    def put(self, path: str, parts: list[Said]) -> str:
        """Record a field's claims; its text is their sentences joined by a space."""
        self.fields[path] = parts
        return " ".join(p.says for p in parts)

    def put_list(self, path: str, parts: list[Said]) -> list[str]:
        """A list field: one claim per item, at `path[i]`."""
        for i, p in enumerate(parts):
            self.fields[f"{path}[{i}]"] = [p]
        return [p.says for p in parts]

    def block(self) -> dict:
        return {"packet": self.packet, "fields": {k: [p.entry() for p in v] for k, v in self.fields.items()}}


def servable(text: object) -> str | None:
    """Packet prose fit for served text: non-blank, whitespace collapsed, no absolute latency."""
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    return text if text and not ABSOLUTE_LATENCY.search(text) else None


class Sources:
    """The packet's evidence items, by kind, in packet order."""

    def __init__(self, packet: dict):
        items = packet.get("agent_facing", {}).get("evidence") or []
        self.items = [i for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)]

    def of(self, *kinds: str) -> list[dict]:
        return [i for i in self.items if i.get("kind") in kinds]

    def first(self, *kinds: str) -> list[dict]:
        """The items of the first kind (in the order given) that has a servable one."""
        for kind in kinds:
            found = [i for i in self.of(kind) if servable(i["text"])]
            if found:
                return found
        return []


def said(items: list[dict]) -> Said | None:
    """The items' sentences as one claim citing them all (None when none is servable)."""
    ok = [i for i in items if servable(i["text"])]
    if not ok:
        return None
    return Said(" ".join(" ".join(i["text"].split()) for i in ok), tuple(i["id"] for i in ok))


def each(items: list[dict]) -> list[Said]:
    """One claim per servable item."""
    return [Said(" ".join(i["text"].split()), (i["id"],)) for i in items if servable(i["text"])]
