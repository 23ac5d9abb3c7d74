"""Injection tests for all 19 gates: plant one defect into real, passing records, and exactly the gate
that owns it must FAIL, naming the record.

The records are the drafter's, made from the example trace's packets (mined in a scratch directory).
Store-gate cases are gates.store.injection's own, run on a store-shaped copy of those records
(`records/<type>/.../<id>.json` and an index); trace-gate cases below run through the validation's
judge/finish on the distilled layout. A case fires when the only failing gate is its own and it names
the planted record; a case that finds no suitable record does not fire (it is never a pass). Used by
`optrace validate --injection-tests` and by pytest, which both also require every gate to be covered.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from optrace.cli import main as optrace
from optrace.distill.drafter import draft_record
from optrace.errors import InputError
from optrace.example.embedded import build_example, example_name
from optrace.gates.store import injection as store_injection
from optrace.gates.store.model import FAIL, obj
from optrace.gates.store.runner import run_gates
from optrace.gates.store.specimens import index_for
from optrace.gates.store.store import IndexFile, RecordFile, Store
from optrace.gates.trace.fabrication import Pool
from optrace.gates.trace.layout import staged_path
from optrace.gates.trace.model import Packet, PacketEvidence, TraceContext, trace_context
from optrace.gates.trace.ncu_attribution import has_usable_capture
from optrace.gates.trace.runner import ALL_GATES, RecordVerdict, finish, judge
from optrace.gates.trace.store_overlap import LiveStore
from optrace.jsonio import read_jsonl

SLUG = "example"


@dataclass(frozen=True)
class Workbench:
    """One mined trace: its packets by record id, ingest's facts, and the drafter's records of it."""

    slug: str
    packets: dict[str, Packet]
    trace: TraceContext
    records: tuple[tuple[str, dict], ...]  # (relpath, record), distilled layout

    def packet_at(self, relpath: str) -> Packet | None:
        return self.packets.get(relpath.rsplit("/", 1)[-1][: -len(".json")])

    def packet_of(self, relpath: str) -> Packet:
        """The packet a workbench record was drafted from (every one of them was)."""
        packet = self.packet_at(relpath)
        assert packet is not None, relpath
        return packet

    def store(self) -> Store:
        """The records as a store would hold them, with their index (what check-store judges)."""
        staged: list[tuple[str, dict]] = []
        for rel, record in self.records:
            path = staged_path(self.packet_of(rel))
            assert path is not None, rel  # a drafted packet's target always has a store path
            staged.append((path, record))
        return Store(
            Path(f"<{self.slug} staged>"),
            tuple(RecordFile(rel, rec) for rel, rec in staged),
            IndexFile(index_for(staged)),
        )


def mine_example(root: Path) -> Path:
    """The example trace, ingested, partitioned and packed under root (as the workflow would)."""
    trace, work, packets = root / example_name(), root / "work" / SLUG, root / "packets" / SLUG
    build_example(trace)
    steps = (
        ["ingest", str(trace), "--out-dir", str(work)],
        ["partition", "--work-dir", str(work), "--report", str(root / "partition.md")],
        ["packets", str(trace), "--work-dir", str(work), "--out-dir", str(packets), "--slug", SLUG],
    )
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in steps:
            if optrace(argv) != 0:
                raise InputError(trace, f"the example trace could not be mined (optrace {argv[0]} failed)")
    return root


def workbench(root: Path, slug: str = SLUG) -> Workbench:
    """Packets, facts and drafted records of a mined trace at root (packets/ and work/ of slug)."""
    packets_dir, work = root / "packets" / slug, root / "work" / slug
    packets = {}
    manifest = json.loads((packets_dir / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["packets"]:
        code_file = entry.get("code_file")
        code = (packets_dir / code_file).read_bytes() if code_file else None
        packets[entry["id"]] = Packet.from_bytes(
            entry["seg_id"], (packets_dir / f"{entry['seg_id']}.json").read_bytes(), code, code_file
        )
    trace = trace_context(
        slug,
        read_jsonl(work / "versions.jsonl"),
        read_jsonl(work / "profiles.jsonl"),
        meta=json.loads((work / "meta.json").read_text(encoding="utf-8")),
        manifest=manifest,
    )
    records = []
    for rid, packet in sorted(packets.items()):
        record, _ = draft_record(packet.data, packet.code)
        if record is not None:
            records.append((f"distilled/{slug}/{rid}.json", record))
    return Workbench(slug, packets, trace, tuple(records))


# --- trace-gate cases ----------------------------------------------------------------------------


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


def _any(p: Planted) -> bool:
    return True


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


def _measured_gain(p: Planted) -> bool:
    metrics = obj(p.record, "worth", "gain").get("metrics") or []
    return p.record.get("type") == "strategy" and bool(metrics) and metrics[0].get("delta_pct") is not None


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


def _is_strategy(p: Planted) -> bool:
    return p.record.get("type") == "strategy"


def _builds_on_a_milestone(p: Planted) -> bool:
    return _is_strategy(p) and obj(p.record, "payload", "trace", "builds_on").get("is_baseline") is False


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


def _edit(change: Callable[[dict], None]) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        change(p.record)

    return plant


def _flip_dsl(record: dict) -> None:
    scope = record["retrieval"]["scope"]
    scope["dsl"] = {"triton": "gluon", "gluon": "triton"}[scope["dsl"]]


def _python_dsl(p: Planted) -> bool:
    return obj(p.record, "retrieval", "scope").get("dsl") in ("triton", "gluon")


def _other_trace(p: Planted) -> None:
    p.records[p.i][0] = p.records[p.i][0].replace(f"distilled/{p.bench.slug}/", "distilled/another-trace/")


def _raw(record: dict) -> dict:
    return record["evidence"]["raw"]


def _claims(record: dict) -> dict:
    return record["evidence"]["raw"]["evidence_extra"]["claims"]


def _restate(path: str, text: Callable[[str], str], cites: Callable[[Planted], list[str]] | None = None):
    """Set the field at a dotted path (no list indices) and its claim to the new text, as an agent that
    keeps its citations in step would; `cites` replaces what the claim cites."""

    def plant(p: Planted) -> None:
        keys = path.split(".")
        node = p.record
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = text(node[keys[-1]])
        entries = _claims(p.record)["fields"][path]
        entries[:] = [{**entries[0], "says": node[keys[-1]], "cites": cites(p) if cites else entries[0]["cites"]}]

    return plant


def _items_of(p: Planted, kind: str) -> list[str]:
    items = p.evidence.packet.agent_facing.get("evidence") or []
    return [i["id"] for i in items if i.get("kind") == kind]


def _with_next_steps(p: Planted) -> bool:
    return _is_strategy(p) and bool(obj(p.record, "payload").get("next_steps")) and bool(_items_of(p, "change"))


def _next_step_cites_the_change(p: Planted) -> None:
    entries = _claims(p.record)["fields"]["payload.next_steps[0]"]
    entries[0]["cites"] = _items_of(p, "change")[:1]


def _with_approach(p: Planted) -> bool:
    base = obj(p.evidence.packet.agent_facing, "builds_on")
    return _builds_on_a_milestone(p) and bool(base.get("previous_approach")) and bool(_items_of(p, "segment"))


def _anti(p: Planted) -> bool:
    return p.record.get("type") == "anti-strategy"


def _entitled_metrics(p: Planted) -> bool:
    return _measured_gain(p) and bool(obj(p.record, "retrieval", "signals", "metrics"))


def _metric_is_the_gain(record: dict) -> None:
    record["retrieval"]["signals"]["metrics"]["memory_throughput_pct"] = record["worth"]["gain"]["pct"]


def _other_risk(record: dict) -> None:
    cost = record["payload"]["cost"]
    cost["risk"] = {"low": "med", "med": "low", "high": "low"}[cost["risk"]]


def _missing_integer(p: Planted) -> int:
    pool = Pool(p.evidence.packet)
    return next(n for n in range(2, 1000) if not pool.supports(Decimal(n)))


TRACE_INJECTIONS: tuple[TraceInjection, ...] = (
    TraceInjection("profile", "raw carries a wiki page_path", _any, _edit(lambda r: _raw(r).update(page_path=None))),
    TraceInjection(
        "profile", "empty measured_on", _any, _edit(lambda r: r["evidence"]["summary"].update(measured_on={}))
    ),
    TraceInjection("profile", "gain without a kind", _any, _edit(lambda r: r["worth"]["gain"].pop("kind"))),
    TraceInjection("layout", "scope.dsl flipped between triton and gluon", _python_dsl, _edit(_flip_dsl)),
    TraceInjection(
        "layout",
        "episode_key of another technique",
        _any,
        _edit(lambda r: r.update(episode_key=r["episode_key"].replace("|operator", "_x|operator"))),
    ),
    TraceInjection("layout", "filed under another trace's directory", _any, _other_trace),
    TraceInjection(
        "layout",
        "another architecture in problem.target",
        _any,
        _edit(lambda r: r["payload"]["problem"].update(target="the nvidia blackwell GPU")),
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
        _measured_gain,
        _edit(lambda r: r["worth"]["gain"]["metrics"][0].update(unit="37.77%")),
    ),
    TraceInjection(
        "no-fabrication",
        "small integer the packet never states",
        _any,
        lambda p: _raw(p.record).update(hunk_index=_missing_integer(p)),
    ),
    TraceInjection("no-fabrication", "gain pct not in the packet", _measured_gain, _edit(_invent_gain)),
    TraceInjection("no-fabrication", "gain with its sign flipped", _measured_gain, _edit(_flip_gain)),
    TraceInjection(
        "no-fabrication",
        "number glued to a word",
        _any,
        _edit(lambda r: _raw(r).update(file_paths=["speedup37.77%"])),
    ),
    TraceInjection(
        "claims",
        "citations of another packet",
        _any,
        lambda p: _claims(p.record).update(
            packet=next(q.seg_id for q in p.bench.packets.values() if q.seg_id != p.evidence.packet.seg_id)
        ),
    ),
    TraceInjection(
        "claims", "a next step resting on the step's own change", _with_next_steps, _next_step_cites_the_change
    ),
    TraceInjection(
        "claims", "a word the cited evidence lacks", _any, _restate("payload.goal", lambda t: f"{t} with TMA multicast")
    ),
    TraceInjection(
        "claims",
        "slower where the packet measured faster",
        _measured_gain,
        _restate("payload.goal", lambda t: f"{t} The kernel is slower than before."),
    ),
    TraceInjection(
        "claims", "a scope word the evidence lacks", _any, _restate("payload.goal", lambda t: f"{t} in general")
    ),
    TraceInjection(
        "claims", "a field without its claim", _any, lambda p: _claims(p.record)["fields"].pop("payload.goal")
    ),
    TraceInjection(
        "structured-facts",
        "verdict not the one the packet gives",
        _anti,
        _edit(lambda r: r["payload"].update(verdict="performance-ceiling")),
    ),
    TraceInjection(
        "structured-facts",
        "confidence not the packet's",
        _any,
        _edit(lambda r: r["evidence"]["summary"].update(confidence="documented")),
    ),
    TraceInjection(
        "structured-facts", "a capture metric holding the gain", _entitled_metrics, _edit(_metric_is_the_gain)
    ),
    TraceInjection("structured-facts", "risk not what the diff gives", _measured_gain, _edit(_other_risk)),
    TraceInjection("provenance", "commit of another version", _any, _other_version_commit),
    TraceInjection(
        "provenance", "commit unknown to the trace", _any, _edit(lambda r: _raw(r).update(git_commit="0" * 40))
    ),
    TraceInjection("provenance", "version not the packet's", _any, _edit(lambda r: _raw(r).update(version="v999"))),
    TraceInjection(
        "ncu-attribution",
        "profiler basis without a usable capture",
        _no_capture,
        _edit(lambda r: r["evidence"]["summary"]["bottleneck_evidence"].update(basis="profiler")),
    ),
    TraceInjection(
        "ncu-attribution",
        "bottleneck without a usable capture",
        _no_capture,
        _edit(lambda r: r["retrieval"]["signals"].update(bottleneck="store-bandwidth-bound")),
    ),
    TraceInjection(
        "ncu-attribution",
        "mechanism metrics without a usable capture",
        _no_capture,
        _edit(lambda r: r["evidence"]["summary"].update(mechanism_metrics={"occupancy_limiter": "registers"})),
    ),
    TraceInjection(
        "lineage",
        "builds on another approach than its parent's",
        _with_approach,
        _restate(
            "payload.trace.builds_on.approach", lambda t: "The previous kept kernel.", lambda p: _items_of(p, "segment")
        ),
    ),
    TraceInjection(
        "ncu-attribution",
        "profiler named without a usable capture",
        _no_capture,
        _edit(lambda r: _raw(r).update(file_paths=["profiles/nsight-compute-report.txt"])),
    ),
    TraceInjection(
        "store-overlap", "episode_key another record of the trace holds", _twin_scope, _episode_of_another_record
    ),
    TraceInjection("store-overlap", "id another record of the trace claims", _any, _filed_twice),
    TraceInjection("store-overlap", "id the live store holds for another episode", _any, _live_store_holds_id),
    TraceInjection(
        "store-overlap", "id the live store holds with no episode", _any, _live_store_holds_id_without_episode
    ),
)


# --- running -------------------------------------------------------------------------------------


def validate_records(
    bench: Workbench, records: Iterable[tuple[str, dict] | list], live: LiveStore
) -> list[RecordVerdict]:
    """The validation of one trace's records in memory: the same judge/finish as `optrace validate trace`.

    `records` are (relpath, record) pairs: the workbench's tuples, or [relpath, record] lists an
    injection edits in place."""
    judged = [judge(rel, record, None, bench.packet_at(rel), bench.trace, None) for rel, record in records]
    return finish(judged, live)


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
