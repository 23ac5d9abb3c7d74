"""Run the store gates: per record (for the validation stage) or over a whole store (check-store)."""

from __future__ import annotations

import os
from typing import Any

from optrace.gates.store import (
    anonymization,
    cross_reference,
    established_fact,
    ids,
    index,
    raw_isolation,
    relations,
    schema,
    self_contained,
)
from optrace.gates.store.model import FAIL, GATES, PASS, SKIP, C, Gate, GateContext, GateResult, RecordView
from optrace.gates.store.store import Store, load_store
from optrace.scrub.leak_patterns import denylist_pattern, read_denylist

GATE_DEFS: tuple[Gate[GateContext], ...] = tuple(
    m.GATE
    for m in (
        schema,
        ids,
        anonymization,
        raw_isolation,
        relations,
        index,
        self_contained,
        cross_reference,
        established_fact,
    )
)
assert tuple(g.name for g in GATE_DEFS) == GATES


def run_check(gate: Gate[C], view: RecordView, ctx: C) -> list[str]:
    """A gate's messages for one record; a gate that trips on a shape nobody foresaw still yields a FAIL."""
    assert gate.check is not None, gate.name  # callers run only applicable() gates
    try:
        return gate.check(view, ctx)
    except Exception as exc:
        return [f"{view.relpath}: {gate.name} gate could not read this record ({type(exc).__name__}: {exc})"]


def applicable(gate: Gate[Any], view: RecordView) -> bool:
    return gate.check is not None and (gate.applies is None or gate.applies(view))


def check_view(view: RecordView, ctx: GateContext) -> dict[str, list[str]]:
    return {g.name: run_check(g, view, ctx) for g in GATE_DEFS if applicable(g, view)}


def check_record(record: Any, relpath: str, ctx: GateContext) -> dict[str, list[str]]:
    """Messages per gate for one parsed record ([] = pass), for every gate that judges a record alone.

    `index` and id uniqueness need the whole store and are not included; established-fact and
    relations appear only for records they apply to. A record that is not a JSON object gets only
    the schema verdict: the other gates have nothing to read.
    """
    if not isinstance(record, dict):
        return {"schema": schema.errors_of(record, relpath)}
    return check_view(RecordView(record, relpath), ctx)


def context_for(store: Store, denylist_terms: tuple[str, ...]) -> GateContext:
    known = frozenset(
        f.record["id"] for f in store.files if isinstance(f.record, dict) and isinstance(f.record.get("id"), str)
    )
    return GateContext(known_ids=known, denylist=denylist_pattern(denylist_terms))


def run_gates(store: Store, denylist_terms: tuple[str, ...] = ()) -> list[GateResult]:
    ctx = context_for(store, denylist_terms)
    messages: dict[str, list[str]] = {g: [] for g in GATES}
    checked = dict.fromkeys(GATES, 0)
    views: list[RecordView] = []
    for f in store.files:
        if f.error is not None:
            messages["schema"].append(f"{f.relpath}: {f.error}")
            checked["schema"] += 1
            continue
        view = RecordView(f.record, f.relpath) if isinstance(f.record, dict) else None
        verdicts = check_view(view, ctx) if view else check_record(f.record, f.relpath, ctx)
        if view:
            views.append(view)
        for name, found in verdicts.items():
            messages[name] += found
            checked[name] += 1
    results = []
    for gate in GATE_DEFS:
        if gate.check_store is not None:
            messages[gate.name] += gate.check_store(store, views)
            checked[gate.name] = max(checked[gate.name], len(store.files))
        found = messages[gate.name]
        status = FAIL if found else PASS if checked[gate.name] else SKIP
        n = checked[gate.name]
        count = f"{n} record{'s' * (n != 1)}" if n else "nothing to check"
        results.append(GateResult(gate.name, status, f"{gate.summary} ({count})", tuple(found)))
    return results


def run_store_gates(store_root: str | os.PathLike, denylist_terms: tuple[str, ...] | None = None) -> list[GateResult]:
    """All 9 gates over a store directory; the denylist defaults to the file in $ATREX_WIKI_DENYLIST."""
    terms = read_denylist() if denylist_terms is None else denylist_terms
    return run_gates(load_store(store_root), terms)
