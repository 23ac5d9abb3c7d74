"""Injection tests for all 19 gates: plant one defect into real, passing records, and exactly the gate
that owns it must FAIL, naming the record. The cases of the claims, structured-facts and code rules
are gates.trace.claim_injections'; what a case is, gates.trace.planting; the mined example and the
in-memory validation, gates.trace.workbench (re-exported here: SLUG, Workbench, mine_example,
workbench, validate_records).

The records are the drafter's, made from the example trace's packets (mined in a scratch directory).
Store-gate cases are gates.store.injection's own, run on a store-shaped copy of those records
(`records/<type>/.../<id>.json` and an index); trace-gate cases below run through the validation's
judge/finish on the distilled layout. A case fires when the only failing gate is its own and it names
the planted record; a case that finds no suitable record does not fire (it is never a pass). Used by
`optrace validate --injection-tests` and by pytest, which both also require every gate to be covered.
"""

from __future__ import annotations

import copy
import dataclasses
import tempfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from optrace.errors import InputError
from optrace.gates.store import injection as store_injection
from optrace.gates.store.model import FAIL, obj
from optrace.gates.store.runner import run_gates
from optrace.gates.trace.claim_injections import CLAIM_INJECTIONS
from optrace.gates.trace.fabrication import Pool
from optrace.gates.trace.layout import staged_path
from optrace.gates.trace.ncu_attribution import has_usable_capture
from optrace.gates.trace.planting import (
    Planted,
    TraceInjection,
    any_record,
    edit,
    is_strategy,
    items_of,
    measured_gain,
    raw,
    restate,
)
from optrace.gates.trace.runner import ALL_GATES, RecordVerdict
from optrace.gates.trace.store_overlap import LiveStore
from optrace.gates.trace.workbench import SLUG, Workbench, mine_example, validate_records, workbench

__all__ = [
    "SLUG",
    "TRACE_INJECTIONS",
    "Workbench",
    "mine_example",
    "run_all_injections",
    "validate_records",
    "workbench",
]

# --- trace-gate cases ----------------------------------------------------------------------------


def _diff_snippet(p: Planted) -> bool:
    impl = obj(p.record, "payload", "implementation")
    return str(impl.get("format", "")).startswith("unified-diff") and bool(_marked_lines(impl.get("snippet", "")))


def _marked_lines(snippet: str) -> list[int]:
    return [
        i
        for i, line in enumerate(snippet.splitlines())
        if line[:1] in "+-" and line[:3] not in ("+++", "---") and len(line.strip()) > 8
    ]


def _edit_snippet(change: Callable[[list[str], int], None]) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        impl = p.record["payload"]["implementation"]
        lines = impl["snippet"].splitlines()
        change(lines, _marked_lines(impl["snippet"])[0])
        impl["snippet"] = "\n".join(lines)

    return plant


def _unmark(lines: list[str], i: int) -> None:
    lines[i] = lines[i][1:]


def _halve(lines: list[str], i: int) -> None:
    lines[i] = lines[i][: len(lines[i]) // 2].rstrip()


def _swap(lines: list[str], i: int) -> None:
    j = next(k for k in range(len(lines) - 1, i, -1) if lines[k].strip() and lines[k] != lines[i])
    lines[i], lines[j] = lines[j], lines[i]


def _two_distinct_lines(p: Planted) -> bool:
    if not _diff_snippet(p):
        return False
    lines = p.record["payload"]["implementation"]["snippet"].splitlines()
    first = _marked_lines("\n".join(lines))[0]
    return any(line.strip() and line != lines[first] for line in lines[first + 1 :])


def _append_to_goal(words: Callable[[Planted], str]) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        p.record["payload"]["goal"] = f"{p.record['payload']['goal']} {words(p)}"

    return plant


def _missing_small_integer(p: Planted) -> str:
    pool = Pool(p.evidence.packet)
    n = next(n for n in range(2, 100) if not pool.supports(Decimal(n)))
    return f"It needs {n} stages."


def _invent_gain(record: dict) -> None:
    gain = record["worth"]["gain"]
    gain["pct"] = gain["metrics"][0]["delta_pct"] = 87.6543


def _flip_gain(record: dict) -> None:
    gain = record["worth"]["gain"]
    gain["pct"] = gain["metrics"][0]["delta_pct"] = -gain["pct"]


def _other_version_commit(p: Planted) -> None:
    mine = p.record["evidence"]["raw"]["version"]
    p.record["evidence"]["raw"]["git_commit"] = next(
        sha for v, sha in sorted(p.bench.trace.commits.items()) if v != mine
    )


def _builds_on_a_milestone(p: Planted) -> bool:
    return is_strategy(p) and obj(p.record, "payload", "trace", "builds_on").get("is_baseline") is False


def _no_capture(p: Planted) -> bool:
    return not has_usable_capture(p.evidence)


def _episode_parts(record: dict) -> list[str]:
    key = record.get("episode_key")
    return key.split("|") if isinstance(key, str) else []


def _twin_scope(p: Planted) -> bool:
    """Another record of the trace whose episode differs from this one's in the technique only."""
    mine = _episode_parts(p.record)
    return any(
        k != p.i and len(theirs := _episode_parts(rec)) == 5 and theirs != mine and theirs[:3] == mine[:3]
        for k, (_, rec) in enumerate(p.records)
    )


def _episode_of_another_record(p: Planted) -> None:
    """What a partition that gave two segments one episode would yield: the record and its packet's
    target take another record's episode, so only the duplicate can fail."""
    mine = _episode_parts(p.record)
    key = next(
        rec["episode_key"]
        for k, (_, rec) in enumerate(p.records)
        if k != p.i and _episode_parts(rec) != mine and _episode_parts(rec)[:3] == mine[:3]
    )
    p.record["episode_key"] = key
    packet = p.bench.packet_of(p.records[p.i][0])
    data = {**packet.data, "target": {**packet.target, "episode_key": key}}
    packets = {**p.bench.packets, p.record["id"]: dataclasses.replace(packet, data=data)}
    p.bench = dataclasses.replace(p.bench, packets=packets)


def _filed_twice(p: Planted) -> None:
    """The record a second time, at its store path: one id claimed by two files of the trace."""
    path = staged_path(p.bench.packet_of(p.records[p.i][0]))
    assert path is not None  # a drafted packet's target always has a store path
    p.records.append([path, copy.deepcopy(p.record)])


def _live_store_holds_id(p: Planted) -> None:
    p.live = LiveStore({p.record["id"]: "hopper|triton|misc|another_lever|operator"})


def _live_store_holds_id_without_episode(p: Planted) -> None:
    p.live = LiveStore({p.record["id"]: None})


def _flip_dsl(record: dict) -> None:
    scope = record["retrieval"]["scope"]
    scope["dsl"] = {"triton": "gluon", "gluon": "triton"}[scope["dsl"]]


def _python_dsl(p: Planted) -> bool:
    return obj(p.record, "retrieval", "scope").get("dsl") in ("triton", "gluon")


def _other_trace(p: Planted) -> None:
    p.records[p.i][0] = p.records[p.i][0].replace(f"distilled/{p.bench.slug}/", "distilled/another-trace/")


def _with_approach(p: Planted) -> bool:
    base = obj(p.evidence.packet.agent_facing, "builds_on")
    return _builds_on_a_milestone(p) and bool(base.get("previous_approach")) and bool(items_of(p, "segment"))


def _missing_integer(p: Planted) -> int:
    pool = Pool(p.evidence.packet)
    return next(n for n in range(2, 1000) if not pool.supports(Decimal(n)))


TRACE_INJECTIONS: tuple[TraceInjection, ...] = CLAIM_INJECTIONS + (
    TraceInjection(
        "profile", "raw carries a wiki page_path", any_record, edit(lambda r: raw(r).update(page_path=None))
    ),
    TraceInjection(
        "profile", "empty measured_on", any_record, edit(lambda r: r["evidence"]["summary"].update(measured_on={}))
    ),
    TraceInjection("profile", "gain without a kind", any_record, edit(lambda r: r["worth"]["gain"].pop("kind"))),
    TraceInjection("layout", "scope.dsl flipped between triton and gluon", _python_dsl, edit(_flip_dsl)),
    TraceInjection(
        "layout",
        "episode_key of another technique",
        any_record,
        edit(lambda r: r.update(episode_key=r["episode_key"].replace("|operator", "_x|operator"))),
    ),
    TraceInjection("layout", "filed under another trace's directory", any_record, _other_trace),
    TraceInjection(
        "layout",
        "another architecture in problem.target",
        any_record,
        edit(lambda r: r["payload"]["problem"].update(target="the nvidia blackwell GPU")),
    ),
    TraceInjection("verbatim", "diff line without its +/- marker", _diff_snippet, _edit_snippet(_unmark)),
    TraceInjection("verbatim", "fragment of a diff line", _diff_snippet, _edit_snippet(_halve)),
    TraceInjection("verbatim", "quoted lines out of order", _two_distinct_lines, _edit_snippet(_swap)),
    TraceInjection(
        "verbatim",
        "invented line",
        _diff_snippet,
        _edit_snippet(lambda lines, i: lines.insert(i + 1, "+    y = fast_path(x)")),
    ),
    TraceInjection(
        "no-fabrication",
        "invented percentage as a metric's unit",
        measured_gain,
        edit(lambda r: r["worth"]["gain"]["metrics"][0].update(unit="37.77%")),
    ),
    TraceInjection(
        "no-fabrication",
        "small integer the packet never states",
        any_record,
        lambda p: raw(p.record).update(hunk_index=_missing_integer(p)),
    ),
    TraceInjection("no-fabrication", "gain pct not in the packet", measured_gain, edit(_invent_gain)),
    TraceInjection("no-fabrication", "gain with its sign flipped", measured_gain, edit(_flip_gain)),
    TraceInjection(
        "no-fabrication",
        "number glued to a word",
        any_record,
        edit(lambda r: raw(r).update(file_paths=["speedup37.77%"])),
    ),
    TraceInjection("provenance", "commit of another version", any_record, _other_version_commit),
    TraceInjection(
        "provenance", "commit unknown to the trace", any_record, edit(lambda r: raw(r).update(git_commit="0" * 40))
    ),
    TraceInjection("provenance", "version not the packet's", any_record, edit(lambda r: raw(r).update(version="v999"))),
    TraceInjection(
        "ncu-attribution",
        "profiler basis without a usable capture",
        _no_capture,
        edit(lambda r: r["evidence"]["summary"]["bottleneck_evidence"].update(basis="profiler")),
    ),
    TraceInjection(
        "ncu-attribution",
        "bottleneck without a usable capture",
        _no_capture,
        edit(lambda r: r["retrieval"]["signals"].update(bottleneck="store-bandwidth-bound")),
    ),
    TraceInjection(
        "ncu-attribution",
        "mechanism metrics without a usable capture",
        _no_capture,
        edit(lambda r: r["evidence"]["summary"].update(mechanism_metrics={"occupancy_limiter": "registers"})),
    ),
    TraceInjection(
        "lineage",
        "builds on another approach than its parent's",
        _with_approach,
        restate(
            "payload.trace.builds_on.approach", lambda t: "The previous kept kernel.", lambda p: items_of(p, "segment")
        ),
    ),
    TraceInjection(
        "ncu-attribution",
        "profiler named without a usable capture",
        _no_capture,
        edit(lambda r: raw(r).update(file_paths=["profiles/nsight-compute-report.txt"])),
    ),
    TraceInjection(
        "store-overlap", "episode_key another record of the trace holds", _twin_scope, _episode_of_another_record
    ),
    TraceInjection("store-overlap", "id another record of the trace claims", any_record, _filed_twice),
    TraceInjection("store-overlap", "id the live store holds for another episode", any_record, _live_store_holds_id),
    TraceInjection(
        "store-overlap", "id the live store holds with no episode", any_record, _live_store_holds_id_without_episode
    ),
)


# --- running -------------------------------------------------------------------------------------


def failing_gates(verdicts: list[RecordVerdict]) -> list[str]:
    failed = {g for v in verdicts for g in v.failed}
    return [g for g in ALL_GATES if g in failed]


def plant(bench: Workbench, injection: TraceInjection) -> Planted | None:
    for i in range(len(bench.records)):
        planted = Planted(bench, [[rel, copy.deepcopy(rec)] for rel, rec in bench.records], i)
        if injection.suits(planted):
            injection.plant(planted)
            return planted
    return None


def run_trace_injection(bench: Workbench, injection: TraceInjection) -> store_injection.Outcome:
    planted = plant(bench, injection)
    if planted is None:
        return store_injection.Outcome(injection, None)
    verdicts = validate_records(planted.bench, planted.records, planted.live)
    target = verdicts[planted.i]
    named = target.gates[injection.gate][0] == FAIL
    return store_injection.Outcome(injection, target.judged.relpath, tuple(failing_gates(verdicts)), named)


def check_baseline(bench: Workbench) -> None:
    """Injection proves something only on records that pass every gate before the defect goes in."""
    if not bench.records:
        raise InputError(bench.slug, "the drafter made no record to plant defects into")
    broken = failing_gates(validate_records(bench, bench.records, LiveStore()))
    broken += [r.gate for r in run_gates(bench.store()) if r.status == FAIL]
    if broken:
        raise InputError(bench.slug, f"the drafted records fail {', '.join(broken)} before any defect is planted")


def run_injections(bench: Workbench) -> list[store_injection.Outcome]:
    check_baseline(bench)
    store = bench.store()
    return [store_injection.run_injection(store, i) for i in store_injection.INJECTIONS] + [
        run_trace_injection(bench, i) for i in TRACE_INJECTIONS
    ]


def run_all_injections() -> list[store_injection.Outcome]:
    """Every case on the drafter's records of the example trace, mined in a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="optrace-injection-") as tmp:
        return run_injections(workbench(mine_example(Path(tmp))))


def covered_gates(outcomes: list[store_injection.Outcome]) -> set[str]:
    return {o.injection.gate for o in outcomes if o.fired}


def format_outcomes(outcomes: list[store_injection.Outcome]) -> str:
    lines = []
    for o in outcomes:
        verdict = "FIRED " if o.fired else "MISSED"
        others = "" if o.fired or o.relpath is None else f" (failed: {', '.join(o.failed) or 'none'})"
        lines.append(f"{verdict} {o.injection.gate}/{o.injection.name}: {o.relpath or 'no suitable record'}{others}")
    missing = [g for g in ALL_GATES if g not in covered_gates(outcomes)]
    lines.append(
        f"{len(ALL_GATES) - len(missing)} of {len(ALL_GATES)} gates proven to fire"
        + (f"; not proven: {', '.join(missing)}" if missing else "")
    )
    return "\n".join(lines)
