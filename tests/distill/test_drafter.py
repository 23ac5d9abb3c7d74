"""The deterministic drafter: every segment kind, the brief's hard rules, and every store gate."""

import copy
import json
import re

import jsonschema
import pytest

from optrace.cli import main as optrace
from optrace.distill.drafter import UNRANKED, draft_record, read_code
from optrace.example.embedded import build_example, example_name
from optrace.facts import ABSOLUTE_LATENCY, cause_arch_bound, judge
from optrace.gates.store.model import GateContext
from optrace.gates.store.runner import check_record
from optrace.mine.evidence import evidence_items
from optrace.mine.packetfile import read_packet_file
from optrace.pipeline_facts import capture_for_signals
from tests.support import tracekit
from tests.support.schemas import load_schema

STORE_KEYS = ["schema", "id", "type", "level", "status", "episode_key", "retrieval", "payload", "evidence", "worth"]
ALL_KINDS = {"milestone", "mega", "deadend-item", "deadend-prose", "curated-pitfall", "final-kernel", "mega-snapshot"}
TRACES = {
    "example": build_example,
    "skill": tracekit.skill_era,
    "iteration": tracekit.iteration_era,
    "horizon": tracekit.long_horizon_era,
}
# A number is a digit run not glued to a word or a dot: `sm_90`, `H100` and `fp16` name things.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
CODE_KEYS = {"snippet", "dispatch_snippet", "core_kernel_name"}


def mine(trace, root, slug):
    """The packets file of the mined trace, unpacked as distill unpacks it: root/packets/ (the file is
    root/packets.json)."""
    work, out = root / "work", root / "packets.json"
    assert optrace(["ingest", str(trace), "--out-dir", str(work)]) == 0
    assert optrace(["partition", "--work-dir", str(work), "--report", str(root / "partition.md")]) == 0
    assert optrace(["packets", str(trace), "--work-dir", str(work), "--out", str(out), "--slug", slug]) == 0
    return read_packet_file(out).unpack(root / "packets")


@pytest.fixture(scope="module")
def packets(tmp_path_factory):
    """{trace: [(packet, code)]} for the example trace and one trace of each commit grammar."""
    found = {}
    for n, (name, build) in enumerate(TRACES.items()):
        root = tmp_path_factory.mktemp(name)
        trace = root / (example_name() if name == "example" else f"kernel_opt_03{n}_{name}")
        build(trace)
        out = mine(trace, root, name)
        found[name] = [
            (json.loads(p.read_text()), read_code(p, json.loads(p.read_text())))
            for p in sorted(out.glob("*.json"))
            if p.name != "manifest.json"
        ]
    return found


def restated(packet):
    """The packet's evidence items rebuilt from its (edited) agent-facing fields, as packets builds them:
    an edit of a field is an edit of what the trace states."""
    packet["agent_facing"]["evidence"] = evidence_items(packet["agent_facing"], packet["seg_kind"])[0]
    return packet


def stated_bottlenecks(packet):
    """The bottlenecks the trace states for the step: its commit subject's (`... (bottleneck: X)`) and, for
    a strategy, its parent's step-record type or capture symptoms (the problem it fixed)."""
    kinds = {"stated-bottleneck"} | (
        {"parent-bottleneck-type", "parent-symptom"} if packet["record_type"] == "strategy" else set()
    )
    return [i["text"] for i in packet["agent_facing"]["evidence"] if i["kind"] in kinds]


def drafts(items):
    return [(packet, code, *draft_record(packet, code)) for packet, code in items]


def store_relpath(record):
    s = record["retrieval"]["scope"]
    return f"records/{record['type']}/{s['vendor']}/{s['arch']}/{s['dsl']}/{s['operator_family']}/{record['id']}.json"


def numbers_in(value, skip=CODE_KEYS):
    """Magnitudes of every number in a JSON value's numbers and strings (code values skipped)."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, (int, float)):
        return {abs(float(value))}
    if isinstance(value, str):
        return {float(m) for m in NUMBER.findall(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return {n for k, v in items if k not in skip for n in numbers_in(v, skip)}


def unexplained_numbers(record, packet, code):
    """Numbers in served text (payload, gain, summary, signal metrics) that the packet never states."""
    served = [
        record.get("payload"),
        record["worth"].get("gain"),
        record["evidence"].get("summary"),
        record["retrieval"]["signals"].get("metrics"),
    ]
    pool = numbers_in(packet["agent_facing"], skip=()) | numbers_in(packet["target"], skip=()) | numbers_in(code or "")
    return numbers_in(served) - pool


def served_strings(record):
    parts = [record["payload"], record["worth"]["gain"], record["evidence"]["summary"], record["retrieval"]]
    out = []

    def walk(v, key=None):
        if isinstance(v, str) and key not in CODE_KEYS:
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)

    for p in parts:
        walk(p)
    return out


def normalised(text):
    return " ".join(text.split())


def test_every_segment_kind_of_the_example_trace_is_drafted(packets):
    drafted = {p["seg_kind"] for p, _, record, _ in drafts(packets["example"]) if record}
    assert drafted == ALL_KINDS
    for packet, _, record, reason in drafts(packets["example"]):
        assert (record is None) != reason.startswith("drafted"), reason
        if record:
            assert record["type"] == packet["record_type"] and record["id"] == packet["target"]["id"]


@pytest.mark.parametrize("trace", TRACES)
def test_drafted_records_pass_every_store_gate_and_the_profile(packets, trace):
    profile = jsonschema.Draft202012Validator(load_schema("opt-trace-1.0.schema.json"))
    records = [r for _, _, r, _ in drafts(packets[trace]) if r]
    assert records, f"{trace}: nothing drafted"
    for record in records:
        failed = {g: m for g, m in check_record(record, store_relpath(record), GateContext()).items() if m}
        assert not failed, failed
        errors = [e.message for e in profile.iter_errors(record)]
        assert not errors, (record["id"], errors)
        assert list(record) == STORE_KEYS


@pytest.mark.parametrize("trace", TRACES)
def test_every_number_in_served_text_appears_in_the_packet(packets, trace):
    for packet, code, record, _ in drafts(packets[trace]):
        if record:
            assert not unexplained_numbers(record, packet, code), record["id"]


def test_the_number_check_catches_an_invented_number(packets):
    packet, code, record, _ = next(d for d in drafts(packets["example"]) if d[2] and d[2]["type"] == "strategy")
    record["payload"]["mechanism"] += " It is 87.6543% faster."
    assert unexplained_numbers(record, packet, code) == {87.6543}


@pytest.mark.parametrize("trace", TRACES)
def test_absolute_latency_only_in_provenance(packets, trace):
    for packet, _, record, _ in drafts(packets[trace]):
        if record:
            assert not [s for s in served_strings(record) if ABSOLUTE_LATENCY.search(s)]
            effect = record["evidence"]["raw"]["effect"]
            assert effect.get("new_geomean_us") == packet["agent_facing"]["measurements"]["geomean_us"]


def test_prose_quoting_a_latency_is_not_served(packets):
    packet, code = next((p, c) for p, c in packets["example"] if p["record_type"] == "strategy")
    packet = copy.deepcopy(packet)
    packet["agent_facing"]["what_the_run_said"]["change"] = "hoisted the weight load, 24.6 us -> 21.3 us"
    record, _ = draft_record(restated(packet), code)
    assert "21.3 us" not in json.dumps(record["payload"])
    # the change is then the commit subject's, without its `<perf> |` prefix and its bottleneck note
    subject = next(i for i in packet["agent_facing"]["evidence"] if i["kind"] == "subject")["text"]
    assert record["payload"]["change"] == subject and "|" not in subject and "bottleneck:" not in subject


@pytest.mark.parametrize("trace", TRACES)
def test_profiler_basis_only_with_a_usable_capture(packets, trace):
    """The capture a record is entitled to: a strategy's is its parent's (what the step attacked), any
    other record's its own version's."""
    for packet, _, record, _ in drafts(packets[trace]):
        if not record:
            continue
        usable = capture_for_signals(packet) is not None
        evidence = record["evidence"]["summary"]["bottleneck_evidence"]
        assert (evidence["basis"] == "profiler") == usable
        if not usable:  # then a bottleneck only as the commit subject states it, citing that statement
            assert evidence == {"basis": "bench-only", "tool": None}
            assert record["payload"]["problem"]["bottleneck"] in (None, *stated_bottlenecks(packet))


def test_a_conclusion_without_a_usable_capture_is_never_served(packets):
    packet, code = next(
        (p, c)
        for p, c in packets["example"]
        if p["record_type"] == "strategy"
        and ((p["agent_facing"]["builds_on"] or {}).get("parent_profiler") or {}).get("conclusion")
        and capture_for_signals(p) is not None
    )
    record, _ = draft_record(packet, code)
    assert record["evidence"]["summary"]["bottleneck_evidence"]["basis"] == "profiler"
    assert record["payload"]["problem"]["bottleneck"]
    packet = copy.deepcopy(packet)
    parent = packet["agent_facing"]["builds_on"]["parent_profiler"]
    parent["ncu_measured_the_kernel_under_test"] = False  # conclusion left behind
    record, _ = draft_record(restated(packet), code)
    assert record["evidence"]["summary"]["bottleneck_evidence"]["basis"] == "bench-only"
    assert record["payload"]["problem"]["bottleneck"] in (None, *stated_bottlenecks(packet))
    conclusion = normalised(parent["conclusion"])
    assert not [s for s in served_strings(record) if conclusion[:40] in s]


@pytest.mark.parametrize("trace", TRACES)
def test_snippets_are_whole_lines_of_the_packet_code(packets, trace):
    for _, code, record, _ in drafts(packets[trace]):
        implementation = record and record["payload"].get("implementation")
        if not implementation:
            continue
        lines = set(code.splitlines())
        snippet = implementation["snippet"].splitlines()
        assert snippet and all(line in lines for line in snippet)
        if implementation["format"].startswith("unified-diff"):
            assert snippet[0].startswith("@@") and not any(ln.startswith(("--- a/", "+++ b/")) for ln in snippet)
            assert any(ln.startswith("+") for ln in snippet)


def test_strategy_gain_is_the_measured_delta(packets):
    for packet, _, record, _ in drafts(packets["example"]):
        if record and record["type"] == "strategy":
            pct = packet["agent_facing"]["measurements"]["improve_pct_vs_floor"]
            gain = record["worth"]["gain"]
            assert gain["pct"] == gain["metrics"][0]["delta_pct"] == pct
            assert gain["kind"] == "performance" and gain["basis"] == "measured"
            assert record["evidence"]["raw"]["effect"]["delta_pct"] == pct


@pytest.mark.parametrize("trace", TRACES)
def test_provenance_and_identity_come_from_the_packet(packets, trace):
    for packet, _, record, _ in drafts(packets[trace]):
        if record:
            target, prov = packet["target"], packet["provenance"]
            assert (record["id"], record["episode_key"], record["level"]) == (
                target["id"],
                target["episode_key"],
                target["level"],
            )
            assert {k: record["retrieval"]["scope"][k] for k in target["scope"]} == target["scope"]
            raw = record["evidence"]["raw"]
            assert (raw["source_repo"], raw["version"], raw["git_commit"]) == (
                prov["source_label"],
                prov["version"],
                prov["commit"],
            )
            assert record["worth"] == {"rank": UNRANKED, "gain": record["worth"]["gain"]}  # never self-scored


def test_anti_strategies_are_established_facts_copied_from_the_packet(packets):
    antis = [(p, r) for p, _, r, _ in drafts(packets["example"]) if r and r["type"] == "anti-strategy"]
    assert {p["seg_kind"] for p, _ in antis} == {"deadend-item", "deadend-prose", "curated-pitfall"}
    for packet, record in antis:
        fact = record["payload"]["established_fact"]
        scope = packet["target"]["scope"]
        # the architecture only where the cause is bound to it, as the product's own ISA
        if cause_arch_bound(fact["mechanism"], record["payload"]["attempted"]):
            assert fact["condition"]["sm_arch"] == packet["agent_facing"]["operator"]["isa"]
        else:
            assert "sm_arch" not in fact["condition"]
        assert fact["condition"]["toolchain"] == scope["dsl"]
        assert len(fact["mechanism"]) >= 40
        assert fact["mechanism"] in normalised(json.dumps(packet["agent_facing"], ensure_ascii=False))
        assert record["worth"]["gain"] == {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []}


def test_a_lever_never_inherits_another_levers_cause(packets):
    """One commit listing three dead ends: each lever gets the sentence about itself."""
    items = {
        p["agent_facing"]["the_failed_lever"]: r["payload"]["established_fact"]["mechanism"]
        for p, _, r, _ in drafts(packets["example"])
        if r and p["seg_kind"] == "deadend-item"
    }
    split = next(m for lever, m in items.items() if lever.startswith("split reduction"))
    prefetch = next(m for lever, m in items.items() if lever.startswith("cp.async"))
    assert "contention" in split and "cp.async" not in split
    assert "prefetch" in prefetch and "because" in prefetch


@pytest.mark.parametrize("trace", TRACES)
def test_a_flag_is_a_hint_never_a_silent_drop(packets, trace):
    """The drafter judges every anti packet on its own prose: a flagged one gets a record only with a cause
    it can quote and a condition, else a reason; the precheck never decides alone."""
    for packet, _, record, reason in drafts(packets[trace]):
        required = packet["agent_facing"].get("established_fact_required")
        if required and required["precheck"] == "flag":
            if record is None:
                assert reason and "precheck" not in reason
            else:
                assert judge(record["payload"]["established_fact"]["mechanism"]).states_cause


def drafted_anti(packets):
    return next(
        (copy.deepcopy(p), c) for p, c, r, _ in drafts(packets["example"]) if r and p["seg_kind"] == "deadend-prose"
    )


def test_no_anti_strategy_without_a_cause(packets):
    packet, code = drafted_anti(packets)
    said = packet["agent_facing"]["what_the_run_said"]
    said["gate_verdict"] = said["commit_body"] = said["evidence_summary"] = None
    packet["agent_facing"]["pitfalls_recorded_here"] = []
    packet["agent_facing"]["why_it_failed"] = None
    record, reason = draft_record(restated(packet), code)
    assert record is None and "no causal sentence" in reason


def test_no_anti_strategy_without_a_condition(packets):
    packet, code = drafted_anti(packets)
    packet["target"]["scope"].update(arch="generic", dsl="any")
    packet["agent_facing"]["operator"]["isa"] = None  # no product ISA either: nothing checkable
    packet["agent_facing"]["the_failed_lever"] = "hoist the weight load above the residual add"
    said = packet["agent_facing"]["what_the_run_said"]  # its prose may state a dtype or shapes: keep only a cause
    said["commit_body"] = said["gate_verdict"] = None
    packet["agent_facing"]["why_it_failed"] = "the extra barrier serialises the two loads, because both wait on it"
    record, reason = draft_record(restated(packet), code)
    assert record is None and "no checkable condition" in reason


def test_no_record_without_a_commit_to_cite(packets):
    packet, code = copy.deepcopy(packets["example"][0])
    packet["provenance"]["commit"] = None
    assert draft_record(packet, code)[0] is None


def test_the_drafter_is_pure(packets):
    for packet, code in packets["example"]:
        before = copy.deepcopy(packet)
        first = draft_record(packet, code)
        assert packet == before and draft_record(packet, code) == first


def test_fact_condition_uses_the_products_own_isa(packets):
    packet, code = next(
        (copy.deepcopy(p), c)
        for p, c, r, _ in drafts(packets["example"])
        if r and r["type"] == "anti-strategy" and "sm_arch" in r["payload"]["established_fact"]["condition"]
    )
    a = packet["agent_facing"]
    a["what_this_record_is"] = a["what_this_record_is"].replace(a["operator"]["isa"], "sm_86")
    a["operator"]["isa"] = "sm_86"  # an A10 is ampere but not sm_80
    record, _ = draft_record(restated(packet), code)
    assert record["payload"]["established_fact"]["condition"]["sm_arch"] == "sm_86"


def test_the_brief_names_every_kind_of_evidence_item():
    """The agent reads the kinds in the brief's table: a kind packets write and the brief does not name
    is a statement the agent cannot know how to cite."""
    from optrace.distill.distill import BRIEF
    from optrace.mine.evidence import KINDS

    brief = BRIEF.read_text()
    assert not [kind for kind in KINDS if f"`{kind}`" not in brief]


@pytest.mark.parametrize("trace", TRACES)
def test_every_served_string_cites_items_of_its_own_packet(packets, trace):
    for packet, _, record, _ in drafts(packets[trace]):
        if not record:
            continue
        block = record["evidence"]["raw"]["evidence_extra"]["claims"]
        ids = {i["id"] for i in packet["agent_facing"]["evidence"]}
        assert block["packet"] == packet["seg_id"]
        for entries in block["fields"].values():
            for entry in entries:
                assert entry["cites"] and all(c in ids or "." in c for c in entry["cites"]), entry
