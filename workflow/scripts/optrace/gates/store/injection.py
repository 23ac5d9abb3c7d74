"""Injection tests for the store gates: plant one defect, and exactly the gate that owns it must FAIL,
naming the record.

Each case mutates the first suitable record of a passing store (a deep copy, in memory). Defects
that change a field the index copies also refresh that record's index entry, so the only thing wrong
with the store is the planted defect. Used by `optrace check-store --injection-tests` and by pytest;
every gate in GATES has at least one case (a test enforces it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from optrace.errors import InputError
from optrace.gates.store.index import expected_entry
from optrace.gates.store.model import FAIL, GATES, RecordView, obj
from optrace.gates.store.relations import link_targets
from optrace.gates.store.runner import run_gates
from optrace.gates.store.specimens import index_for, specimen_records
from optrace.gates.store.store import IndexFile, RecordFile, Store


@dataclass
class Draft:
    """A mutable deep copy of a store: [relpath, record] pairs and the parsed index."""

    root: Path
    records: list[list]
    index: Any

    @classmethod
    def of(cls, store: Store) -> Draft:
        rows = [[f.relpath, copy.deepcopy(f.record)] for f in store.files]
        return cls(store.root, rows, copy.deepcopy(store.index.data))

    def store(self) -> Store:
        return Store(self.root, tuple(RecordFile(rel, rec) for rel, rec in self.records), IndexFile(self.index))

    def refresh_entry(self, i: int, old_id: str) -> None:
        """Make record i's index entry (found by its id before the mutation) match the record again."""
        rel, record = self.records[i]
        for entry in self.index["records"]:
            if entry.get("id") == old_id:
                entry.update(id=record["id"], **expected_entry(RecordView(record, rel)))


@dataclass(frozen=True)
class Injection:
    gate: str
    name: str
    suits: Callable[[Draft, int], bool]
    plant: Callable[[Draft, int], None]


def _any(draft: Draft, i: int) -> bool:
    return True


def _anti_strategy(draft: Draft, i: int) -> bool:
    return draft.records[i][1].get("type") == "anti-strategy"


def _unlinked(draft: Draft, i: int) -> bool:
    """Nobody links to it, so renaming it cannot break another record's relations."""
    rid = draft.records[i][1].get("id")
    return not any(target == rid for _, rec in draft.records for _, target in link_targets(rec))


def _append(record: dict, key: str, words: str) -> None:
    record["payload"][key] = f"{record['payload'][key]} {words}"


def _edit(mutate: Callable[[dict], None], reindex: bool = False) -> Callable[[Draft, int], None]:
    def plant(draft: Draft, i: int) -> None:
        record = draft.records[i][1]
        old_id = record["id"]
        mutate(record)
        if reindex:
            draft.refresh_entry(i, old_id)

    return plant


def _rename(new_id: Callable[[str], str], keep_file: bool) -> Callable[[Draft, int], None]:
    """Give record i a new id; keep_file leaves the old file name (a name/id mismatch)."""

    def plant(draft: Draft, i: int) -> None:
        rel, record = draft.records[i]
        old_id = record["id"]
        record["id"] = new_id(old_id)
        if not keep_file:
            draft.records[i][0] = str(PurePosixPath(rel).with_name(f"{record['id']}.json"))
        draft.refresh_entry(i, old_id)

    return plant


def _rename_file(draft: Draft, i: int) -> None:
    rel, record = draft.records[i]
    draft.records[i][0] = str(PurePosixPath(rel).with_name(f"renamed-{record['id']}.json"))
    draft.refresh_entry(i, record["id"])


def _four_segments(rid: str) -> str:
    head = rid.split(".")
    return ".".join(head[:3] + ["-".join(head[3:])])


def _stale_score(draft: Draft, i: int) -> None:
    rid = draft.records[i][1]["id"]
    for entry in draft.index["records"]:
        if entry.get("id") == rid:
            entry["worth_score"] = round(float(entry["worth_score"]) / 2 + 0.01, 4)


def _drop_entry(draft: Draft, i: int) -> None:
    rid = draft.records[i][1]["id"]
    draft.index["records"] = [e for e in draft.index["records"] if e.get("id") != rid]
    draft.index["count"] = len(draft.index["records"])


def _with_bottleneck_evidence(record: dict) -> None:
    summary = record["evidence"]["summary"]
    summary["bottleneck_evidence"] = {**obj(summary, "bottleneck_evidence"), "raw": {"note": "profiler dump"}}


def _detail_file_served(record: dict) -> None:
    record["evidence"]["raw"]["detail_file"] = "notes/acme-run-17.txt"
    _append(record, "goal", "Details in notes/acme-run-17.txt.")


def _non_mechanism(record: dict) -> None:
    record["payload"]["established_fact"]["mechanism"] = (
        "No kernel change helped: every variant measured within noise of the baseline on this part."
    )


INJECTIONS: tuple[Injection, ...] = (
    Injection("schema", "extra top-level key", _any, _edit(lambda r: r.update(notes="free text"))),
    Injection(
        "schema",
        "confidence outside its enum",
        _any,
        _edit(lambda r: r["evidence"]["summary"].update(confidence="guessed")),
    ),
    Injection("ids", "id with 4 dot-segments", _unlinked, _rename(_four_segments, keep_file=False)),
    Injection("ids", "file not named <id>.json", _any, _rename_file),
    Injection(
        "anonymization",
        "home path in the goal",
        _any,
        _edit(lambda r: _append(r, "goal", "Logs: /home/alice/runs/bench.log")),
    ),
    Injection(
        "anonymization",
        "e-mail in the problem statement",
        _any,
        _edit(lambda r: r["payload"]["problem"].update(statement="Ask jane.doe@example.com about it.")),
    ),
    Injection("raw-isolation", "raw key in served bottleneck evidence", _any, _edit(_with_bottleneck_evidence)),
    Injection("raw-isolation", "raw detail file quoted in the goal", _any, _edit(_detail_file_served)),
    Injection(
        "relations",
        "link to a record that does not exist",
        _any,
        _edit(
            lambda r: r["retrieval"].update(links={"see_also": ["nvidia.hopper.cuda.nowhere.missing-x1"]}), reindex=True
        ),
    ),
    Injection("index", "stale worth_score in the entry", _any, _stale_score),
    Injection("index", "record without an index entry", _any, _drop_entry),
    Injection("self-contained", "blank goal", _any, _edit(lambda r: r["payload"].update(goal="   "))),
    Injection(
        "self-contained",
        "absolute latency in the gain note",
        _any,
        _edit(lambda r: r["worth"]["gain"].update(note="down to 41.2 us")),
    ),
    Injection(
        "no-cross-reference",
        "another record's id in the goal",
        _any,
        _edit(lambda r: _append(r, "goal", "See amd.cdna3.gluon.ref-docs.common-optimizations first.")),
    ),
    Injection(
        "no-cross-reference",
        "store path in the goal",
        _any,
        _edit(lambda r: _append(r, "goal", "Compare records/doc/amd/cdna3/intro.json.")),
    ),
    Injection("established-fact", "outcome instead of a cause", _anti_strategy, _edit(_non_mechanism)),
)


class Planting(Protocol):
    """What an Outcome reads of its injection: a store gate's Injection or a trace gate's TraceInjection."""

    @property
    def gate(self) -> str: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Outcome:
    injection: Planting
    relpath: str | None  # the planted record; None when the store has no suitable record
    failed: tuple[str, ...] = ()  # gates that FAILed
    named: bool = False  # the owning gate's messages name the planted record

    @property
    def fired(self) -> bool:
        return self.relpath is not None and self.failed == (self.injection.gate,) and self.named


def plant(store: Store, injection: Injection) -> tuple[Store, str] | None:
    """A copy of the store with the defect planted in the first suitable record, and that record's path."""
    draft = Draft.of(store)
    for i, (_, record) in enumerate(draft.records):
        if isinstance(record, dict) and injection.suits(draft, i):
            injection.plant(draft, i)
            return draft.store(), draft.records[i][0]
    return None


def run_injection(store: Store, injection: Injection, terms: tuple[str, ...] = ()) -> Outcome:
    planted = plant(store, injection)
    if planted is None:
        return Outcome(injection, None)
    mutated, relpath = planted
    results = run_gates(mutated, terms)
    failed = tuple(r.gate for r in results if r.status == FAIL)
    own = next(r for r in results if r.gate == injection.gate)
    return Outcome(injection, relpath, failed, any(relpath in m for m in own.messages))


def run_injections(store: Store, terms: tuple[str, ...] = ()) -> list[Outcome]:
    """Every case against one store, which must pass all gates before anything is planted."""
    broken = [r.gate for r in run_gates(store, terms) if r.status == FAIL]
    if broken:
        raise InputError(store.root, f"fails {', '.join(broken)} before any defect is planted")
    return [run_injection(store, injection, terms) for injection in INJECTIONS]


def specimen_store() -> Store:
    records = specimen_records()
    return Store(
        Path("<specimens>"), tuple(RecordFile(rel, rec) for rel, rec in records), IndexFile(index_for(records))
    )


def format_outcomes(outcomes: list[Outcome]) -> str:
    lines = []
    for o in outcomes:
        verdict = "FIRED " if o.fired else "MISSED"
        where = o.relpath or "no suitable record"
        others = "" if o.fired or o.relpath is None else f" (failed: {', '.join(o.failed) or 'none'})"
        lines.append(f"{verdict} {o.injection.gate}/{o.injection.name}: {where}{others}")
    covered = {o.injection.gate for o in outcomes if o.fired}
    missing = [g for g in GATES if g not in covered]
    lines.append(
        f"{len(covered)} of {len(GATES)} gates proven to fire"
        + (f"; not proven: {', '.join(missing)}" if missing else "")
    )
    return "\n".join(lines)
