"""All 19 gates on the records of one trace: the per-record part (cacheable) and the cross-record part.

    judge(relpath, record, error, packet, trace, denylist) -> Judged   verdicts of every gate that can
        judge the record alone: 7 store gates (gates.store's check_view) and 9 trace gates
    finish(judged, live) -> [RecordVerdict]   adds what depends on the other records and the live
        store (relations, store-overlap; recomputed every run, never cached) and gives every record a
        verdict for all 19 gates

A record's Judged depends only on its bytes, its path, its packet, the trace's facts, the gates' code
and the denylist, which is what makes it safe to cache by content hash. `index` is a whole-store gate:
it judges the staged store (check-store), so in a trace's validation it is SKIP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from optrace.gates.store import relations
from optrace.gates.store.model import FAIL, GATES, PASS, SKIP, GateContext, RecordView, obj
from optrace.gates.store.runner import applicable, check_record, check_view, run_check
from optrace.gates.trace import (
    claims,
    fabrication,
    layout,
    lineage,
    ncu_attribution,
    provenance,
    store_overlap,
    structured,
    verbatim,
)
from optrace.gates.trace import corpus_profile as profile
from optrace.gates.trace.model import TRACE_GATES, Evidence, Packet, TraceContext
from optrace.gates.trace.store_overlap import Claim, LiveStore, overlaps
from optrace.scrub.leak_patterns import Denylist

PER_RECORD_GATES = (
    profile.GATE,
    layout.GATE,
    verbatim.GATE,
    fabrication.GATE,
    claims.GATE,
    structured.GATE,
    provenance.GATE,
    ncu_attribution.GATE,
    lineage.GATE,
)
TRACE_GATE_DEFS = PER_RECORD_GATES + (store_overlap.GATE,)
assert tuple(g.name for g in TRACE_GATE_DEFS) == TRACE_GATES
ALL_GATES = GATES + TRACE_GATES


@dataclass(frozen=True)
class Judged:
    """One record's cacheable verdicts, and what the cross-record gates need from it."""

    relpath: str
    seg_id: str | None  # the packet that targets it
    id: str | None
    episode_key: str | None
    links: dict = field(default_factory=dict)  # retrieval.links as written
    verdicts: dict[str, list[str]] = field(default_factory=dict)  # gate -> messages, for gates that judged it
    sha256: str | None = None  # of the bytes judged: stage copies only bytes with this hash

    def to_json(self) -> dict:
        return {
            "relpath": self.relpath,
            "seg_id": self.seg_id,
            "id": self.id,
            "episode_key": self.episode_key,
            "links": self.links,
            "verdicts": self.verdicts,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, data: dict) -> Judged:
        """The inverse of to_json; ValueError on anything to_json could not have written."""
        judged = cls(**data)
        optional = (judged.seg_id, judged.id, judged.episode_key, judged.sha256)
        if not (
            isinstance(judged.relpath, str)
            and all(v is None or isinstance(v, str) for v in optional)
            and isinstance(judged.links, dict)
            and isinstance(judged.verdicts, dict)
            and all(isinstance(m, list) and all(isinstance(x, str) for x in m) for m in judged.verdicts.values())
        ):
            raise ValueError("not a cached verdict")
        return judged


@dataclass(frozen=True)
class RecordVerdict:
    judged: Judged
    gates: dict[str, tuple[str, list[str]]]  # gate -> (PASS|FAIL|SKIP, messages), all 19 in run order

    @property
    def failed(self) -> list[str]:
        return [g for g, (status, _) in self.gates.items() if status == FAIL]

    def to_json(self) -> dict:
        j = self.judged
        return {
            "path": j.relpath,
            "id": j.id,
            "episode_key": j.episode_key,
            "seg_id": j.seg_id,
            "sha256": j.sha256,
            "status": FAIL if self.failed else PASS,
            "failed": self.failed,
            "gates": {g: {"status": s, "messages": m} for g, (s, m) in self.gates.items()},
        }


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def judge(
    relpath: str, record: Any, error: str | None, packet: Packet | None, trace: TraceContext, denylist: Denylist | None
) -> Judged:
    """The per-record verdicts; `error` is why the file could not be parsed (then record is None)."""
    seg_id = packet.seg_id if packet else None
    if error is not None:
        return Judged(relpath, seg_id, None, None, verdicts={"schema": [f"{relpath}: {error}"]})
    if not isinstance(record, dict):  # only the schema gate has anything to read
        return Judged(relpath, seg_id, None, None, verdicts=check_record(record, relpath, GateContext()))
    view = RecordView(record, relpath)  # one view: store and trace gates share its parsed parts
    verdicts = check_view(view, GateContext(denylist=denylist))
    verdicts.pop("relations", None)  # needs every record's id: judged in finish()
    ev = Evidence(packet, trace)
    verdicts.update((g.name, run_check(g, view, ev)) for g in PER_RECORD_GATES if applicable(g, view))
    return Judged(
        relpath,
        seg_id,
        _string(record.get("id")),
        _string(record.get("episode_key")),
        obj(record, "retrieval", "links"),
        verdicts,
    )


def finish(judged: list[Judged], live: LiveStore) -> list[RecordVerdict]:
    ctx = GateContext(known_ids=frozenset(j.id for j in judged if j.id) | frozenset(live.episode_of))
    overlap = overlaps([Claim(j.relpath, j.id, j.episode_key) for j in judged], live)
    out = []
    for j in judged:
        verdicts = dict(j.verdicts)
        view = RecordView({"id": j.id, "retrieval": {"links": j.links}}, j.relpath)
        if applicable(relations.GATE, view):
            verdicts["relations"] = run_check(relations.GATE, view, ctx)
        if "layout" in verdicts:  # a record the trace gates could read
            verdicts["store-overlap"] = overlap.get(j.relpath, [])
        gates = {g: ((FAIL if verdicts[g] else PASS), verdicts[g]) if g in verdicts else (SKIP, []) for g in ALL_GATES}
        out.append(RecordVerdict(j, gates))
    return out
