"""Records mined from three traces the drafter was not built against (#26, tests/realistic/unseen_traces.py),
checked against what a reader of each trace expects. Each trace is built and mined once per module."""

from __future__ import annotations

import json

import pytest

from optrace.example.repo_builder import build_trace
from tests.realistic import unseen_traces as ut
from tests.realistic.test_realistic import (
    Mined,
    assert_goal_apart_from_mechanism,
    assert_own_sentences,
    assert_pitfall_symptoms,
    mine_trace,
)

TRACES = list(ut.BUILDERS)
BOILERPLATE = "Do not retry this lever"


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> dict[str, Mined]:
    out = {}
    for name in TRACES:
        root = tmp_path_factory.mktemp(name)
        out[name] = mine_trace(name, ut.build(name, root), root)
    return out


def strategies(m: Mined) -> dict[str, dict]:
    return {r["evidence"]["raw"]["version"]: r for r in m.records.values() if r["type"] == "strategy"}


def antis_for(m: Mined, lever: str) -> list[dict]:
    """The anti-strategies whose attempted lever is `lever` (the expected file names it as the trace does)."""
    key = lever.lower()
    return [
        r
        for r in m.records.values()
        if r["type"] == "anti-strategy"
        and (key in r["payload"]["attempted"].lower() or r["payload"]["attempted"].lower() in key)
    ]


@pytest.mark.parametrize("name", TRACES)
def test_every_record_passes_every_gate_and_is_filed_under_the_traces_dsl_and_harness(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    assert m.records and m.validation["counts"]["failed"] == 0
    for r in m.records.values():
        assert r["retrieval"]["scope"]["dsl"] == e["dsl"]
        assert r["retrieval"]["scope"]["product"] == e["product"]
        assert r["evidence"]["summary"]["measured_on"]["harness"] == e["harness"]


@pytest.mark.parametrize("name", TRACES)
def test_milestones_carry_their_exact_gain_and_the_stated_causal_mechanism(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    found = strategies(m)
    for version, (kind, pct) in e["claims"].items():
        assert m.steps[version]["outcome"] == kind, version
        assert found[version]["worth"]["gain"]["pct"] == pct, version
        assert e["strategy_causes"][version].lower() in found[version]["payload"]["mechanism"].lower(), version


@pytest.mark.parametrize("name", TRACES)
def test_a_strategys_bottleneck_is_what_the_trace_states_for_the_floor_it_beat(mined, name):
    """The parent's stated bottleneck (commit subject, step record, capture), never the step's own."""
    m = mined[name]
    for version, r in strategies(m).items():
        packet = next(
            p for p, _ in m.packets.values() if p["provenance"]["version"] == version and p["record_type"] == "strategy"
        )
        ev = packet["agent_facing"]["evidence"]
        stated = [
            i["text"] for i in ev if i["kind"] in ("stated-bottleneck", "parent-bottleneck-type", "parent-symptom")
        ]
        bottleneck = r["payload"]["problem"]["bottleneck"]
        assert (bottleneck is None) == (not stated), version
        assert bottleneck is None or bottleneck in stated, version
    for version, said in ut.EXPECTED[name].get("stated_bottleneck", {}).items():
        if version in strategies(m):
            assert strategies(m)[version]["payload"]["problem"]["bottleneck"] == said


@pytest.mark.parametrize("name", TRACES)
def test_an_anti_strategy_for_every_failed_lever_and_pitfall_with_a_stated_cause_and_none_without(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for table in (e["failed_levers"], e["pitfalls"]):
        for lever, cause in table.items():
            found = antis_for(m, lever)
            if cause is None:
                assert not found, lever
            else:
                assert len(found) == 1, lever
                assert cause.lower() in found[0]["payload"]["established_fact"]["mechanism"].lower(), lever


@pytest.mark.parametrize("name", TRACES)
def test_lessons_are_the_traces_own_words_where_it_has_them(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for lever, words in e["lessons"].items():
        (record,) = antis_for(m, lever)
        assert words.lower() in record["payload"]["lesson"].lower(), lever
        assert BOILERPLATE not in record["payload"]["lesson"]
    for r in m.records.values():
        if r["type"] == "anti-strategy":
            assert r["payload"]["lesson"] != r["payload"]["attempted"]


@pytest.mark.parametrize("name", TRACES)
def test_the_architecture_is_a_condition_only_where_the_cause_is_bound_to_it(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for lever in e["arch_free"]:
        for r in antis_for(m, lever):
            assert "sm_arch" not in r["payload"]["established_fact"]["condition"], lever
    for lever, isa in e.get("arch_range", {}).items():
        (record,) = antis_for(m, lever)
        assert record["payload"]["established_fact"]["condition"]["sm_arch"] == isa


@pytest.mark.parametrize("name", TRACES)
def test_a_failed_levers_shape_regime_is_where_it_fails_not_where_the_trace_says_it_pays_off(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for lever, regime in e.get("shape_regimes", {}).items():
        (record,) = antis_for(m, lever)
        assert record["payload"]["established_fact"]["condition"].get("shape_regime") == regime, lever


def test_the_final_kernel_is_the_last_kept_version(mined):
    for name, m in mined.items():
        version, kernel = ut.EXPECTED[name]["final"]
        refs = [r for r in m.records.values() if r["type"] == "reference-kernel" and "final" in r["id"]]
        assert [r["evidence"]["raw"]["version"] for r in refs] == [version], name
        assert refs[0]["payload"]["implementation"]["core_kernel_name"] == kernel


def test_a_declared_rebaseline_moves_the_floor_and_the_next_win_is_claimed(mined):
    m, e = mined["helion_softmax_h100"], ut.EXPECTED["helion_softmax_h100"]
    assert m.steps["v5"]["outcome"] == "rebaseline"
    assert strategies(m)["v6"]["worth"]["gain"]["pct"] == e["claims"]["v6"][1]


def test_a_lever_is_cited_at_its_own_step_record(mined):
    (record,) = antis_for(mined["int8_gemm_a100"], "int4 weights packed two per byte")
    assert record["evidence"]["raw"]["version"] == "v8"


# the leads of a goal the drafter derives where the trace states no aim (a strategy's: its stated problem,
# its mechanism's effect, its category or change; a failed lever's: the lever against the floor)
DERIVED_GOAL_LEADS = ("Beat the floor ", "Take on ", "Get to a kernel where ")


def template_goal(record: dict) -> bool:
    """A goal that is the change restated, a sentence about no intent, or the one lever template."""
    goal, p = record["payload"]["goal"], record["payload"]
    return goal in (p.get("change"), p.get("attempted"), "Nothing else changed.") or goal.startswith(
        "Avoid retrying on"
    )


@pytest.mark.parametrize("name", TRACES)
def test_goals_are_the_steps_own_aim_never_the_change_and_never_repeated(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for version, words in e["goals"].items():
        assert words.lower() in strategies(m)[version]["payload"]["goal"].lower(), version
    goals = [r["payload"]["goal"] for r in m.records.values() if r["type"] != "reference-kernel"]
    assert len(goals) == len(set(goals)), goals
    for r in m.records.values():
        if r["type"] != "reference-kernel":
            assert not template_goal(r), (r["id"], r["payload"]["goal"])
    # a goal the trace does not state (the floor every step has) is reported thin, one it states is not
    thin = {p["seg_id"]: p.get("reason", "").partition("too thin for: ")[2].split(", ") for p in m.distill["packets"]}
    for seg, r in m.records.items():
        if r["type"] != "reference-kernel":
            derived = r["payload"]["goal"].startswith(DERIVED_GOAL_LEADS)
            assert derived == ("goal" in thin[seg]), (seg, r["payload"]["goal"])


@pytest.mark.parametrize("name", TRACES)
def test_a_pitfall_carries_its_own_verdict_and_no_borrowed_symptoms_or_numbers(mined, name):
    m, e = mined[name], ut.EXPECTED[name]
    for pitfall, verdict in e["pitfall_verdicts"].items():
        (record,) = antis_for(m, pitfall)
        assert record["payload"]["verdict"] == verdict, pitfall
    for seg, r in m.records.items():
        if m.packets[seg][0]["seg_kind"] != "curated-pitfall":
            continue
        cited = r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"]
        kinds = {i["id"]: i["kind"] for i in m.packets[seg][0]["agent_facing"]["evidence"]}
        for path, claims in cited.items():
            for c in claims:
                assert all(kinds.get(i, "slot") not in ("change", "body", "subject") for i in c["cites"]), path
        assert set(r["evidence"]["raw"]["effect"]) == {"basis"}, seg  # no geomean of the kept version


@pytest.mark.parametrize("name", TRACES)
def test_a_goal_never_repeats_the_mechanism(mined, name):
    assert_goal_apart_from_mechanism(mined[name], ("strategy", "anti-strategy"))


@pytest.mark.parametrize("name", TRACES)
def test_a_pitfall_carries_the_symptoms_its_own_statements_name(mined, name):
    assert_pitfall_symptoms(mined[name], ut.EXPECTED[name]["pitfall_symptoms"])


# The run-wide list of open directions, copied into every kept step's record (as agents do): v4 then takes
# the shuffle reductions and v7 the uint4 loads; two rows per block stays open to the end.
RUN_WIDE_DIRECTIONS = [
    {"direction": "__shfl_xor_sync reductions inside each warp", "rationale": "a barrier per tree level"},
    {"direction": "uint4 loads, eight bf16 values per thread", "rationale": "2-byte loads bound the issue rate"},
    {"direction": "two rows per block for short rows", "rationale": "one row per block idles warps"},
]


def test_next_steps_are_what_is_still_open_after_each_step_never_the_run_wide_list_again(tmp_path):
    commits, untracked = ut.layernorm_commits()
    for c in commits:
        for path in [p for p in c.files if p in ("memory/v2.json", "memory/v4.json", "memory/v7.json")]:
            record = json.loads(c.files[path])
            record["open_directions"] = RUN_WIDE_DIRECTIONS
            c.files[path] = json.dumps(record, indent=1)
    trace = tmp_path / ut.LABELS["layernorm_h20"]
    build_trace(trace, commits, untracked)
    m = mine_trace("layernorm_h20", trace, tmp_path)
    assert m.validation["counts"]["failed"] == 0
    steps = {v: r["payload"]["next_steps"] for v, r in strategies(m).items()}
    shuffle, uint4, rows = (d["direction"] for d in RUN_WIDE_DIRECTIONS)
    assert steps["v2"] == [shuffle, uint4, rows]  # all three are open after v2
    assert shuffle not in steps["v4"] + steps["v7"]  # v4 took it
    assert uint4 not in steps["v7"]  # v7 took it
    offered = [d for s in steps.values() for d in s]
    assert len(offered) == len(set(offered)), steps  # no direction offered by two records


@pytest.mark.parametrize("name", TRACES)
def test_goals_lessons_and_next_steps_are_each_records_own(mined, name):
    assert_own_sentences(mined[name])
