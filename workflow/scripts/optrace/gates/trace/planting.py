"""What an injection case is made of: a copy of a workbench's records with one defect going into one
record, the case itself (its gate, its name, which record suits it, how it plants), and the edits the
cases share. The cases: gates.trace.injection (the trace gates) and gates.trace.claim_injections (the
rules of #25: claims, structured facts, the code quoted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from optrace.gates.store.model import obj
from optrace.gates.trace.model import PacketEvidence
from optrace.gates.trace.store_overlap import LiveStore
from optrace.gates.trace.workbench import Workbench


@dataclass
class Planted:
    """A deep copy of the workbench's records and a live store, with the defect going into record i."""

    bench: Workbench
    records: list[list]
    i: int
    live: LiveStore = field(default_factory=LiveStore)

    @property
    def record(self) -> dict:
        return self.records[self.i][1]

    @property
    def evidence(self) -> PacketEvidence:
        return PacketEvidence(self.bench.packet_of(self.records[self.i][0]), self.bench.trace)


@dataclass(frozen=True)
class TraceInjection:
    gate: str
    name: str
    suits: Callable[[Planted], bool]
    plant: Callable[[Planted], None]


def any_record(p: Planted) -> bool:
    return True


def edit(change: Callable[[dict], None]) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        change(p.record)

    return plant


def measured_gain(p: Planted) -> bool:
    metrics = obj(p.record, "worth", "gain").get("metrics") or []
    return p.record.get("type") == "strategy" and bool(metrics) and metrics[0].get("delta_pct") is not None


def is_strategy(p: Planted) -> bool:
    return p.record.get("type") == "strategy"


def is_anti(p: Planted) -> bool:
    return p.record.get("type") == "anti-strategy"


def raw(record: dict) -> dict:
    return record["evidence"]["raw"]


def claims_of(record: dict) -> dict:
    return record["evidence"]["raw"]["evidence_extra"]["claims"]


def restate(
    path: str, text: Callable[[str], str], cites: Callable[[Planted], list[str]] | None = None
) -> Callable[[Planted], None]:
    """Set the field at a dotted path (no list indices) and its claim to the new text, as an agent that
    keeps its citations in step would; `cites` replaces what the claim cites."""

    def plant(p: Planted) -> None:
        keys = path.split(".")
        node = p.record
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = text(node[keys[-1]])
        entries = claims_of(p.record)["fields"][path]
        entries[:] = [{**entries[0], "says": node[keys[-1]], "cites": cites(p) if cites else entries[0]["cites"]}]

    return plant


def items_of(p: Planted, kind: str) -> list[str]:
    items = p.evidence.packet.agent_facing.get("evidence") or []
    return [i["id"] for i in items if i.get("kind") == kind]
