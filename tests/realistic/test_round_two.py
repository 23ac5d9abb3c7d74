"""Three more realistic traces (tests/support/more_traces.py), mined end to end and checked against what a
kernel engineer reading each trace files (its EXPECTED, written by reading the trace, not by running this).

Ingest, ladder and partition facts, and what the drafter (and the packets and partition it reads) make of
the trace's own words, hold on every trace (the strict xfails that named #26's owners are gone: they pass).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from optrace.ingest.dsl import store_dsl
from optrace.mine.ladder import CLAIMS
from optrace.scrub.anonymize import Scrubber, Step
from optrace.wording import sentences
from tests.realistic.test_realistic import (
    Mined,
    assert_goal_apart_from_mechanism,
    assert_own_sentences,
    assert_pitfall_symptoms,
    mine_trace,
    norm,
)
from tests.support import more_traces as mt

NAMES = list(mt.BUILDERS)


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> dict[str, Mined]:
    out = {}
    for name in NAMES:
        if mt.available(name):
            root = tmp_path_factory.mktemp(name)
            out[name] = mine_trace(name, mt.build(name, root), root)
    return out


def one(mined: dict[str, Mined], name: str) -> tuple[Mined, dict]:
    if name not in mined:
        pytest.skip(f"{name}: ../shared/data is absent (a user's clone has none)")
    return mined[name], mt.EXPECTED[name]


def work(m: Mined, file: str) -> list[dict] | dict:
    path = m.results / "work" / m.slug / file
    if file.endswith(".json"):
        return json.loads(path.read_text())
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rows(m: Mined) -> dict[str, dict]:
    return {r["version"]: r for r in work(m, "versions.jsonl")}


def strategies(m: Mined) -> dict[str, tuple[dict, dict | None]]:
    """version -> (packet, record or None) of every strategy segment."""
    return {
        p["provenance"]["version"]: (p, m.records.get(seg))
        for seg, (p, _) in m.packets.items()
        if p["record_type"] == "strategy"
    }


def antis(m: Mined, pitfalls: bool) -> list[tuple[dict, dict | None]]:
    return [
        (p, m.records.get(seg))
        for seg, (p, _) in m.packets.items()
        if p["record_type"] == "anti-strategy" and (p["seg_kind"] == "curated-pitfall") == pitfalls
    ]


def lever_of(m: Mined, start: str) -> dict:
    found = [s for s in m.segments if "lever" in s and start in s["lever"]["text"]]
    assert len(found) == 1, (start, [s["lever"]["text"] for s in m.segments if "lever" in s])
    return found[0]


# ---- ingest ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_target_and_the_kernels_dsl(mined, name):
    m, want = one(mined, name)
    meta = work(m, "meta.json")
    assert meta["target"]["product"] == want["product"]
    final = rows(m)[want["final"][0]]
    assert meta["default_dsl"] == final["dsl"] == want["dsl"]
    assert {r["scope"]["dsl"] for r in m.segments} == {store_dsl(want["dsl"])}  # the store's name for it


def test_a_helion_traces_autotune_rows_join_and_name_its_kernel(mined):
    m, _ = one(mined, "helion_add")
    tuned = work(m, "autotune.jsonl")
    assert len(tuned) == 12 and {r["kernel_name"] for r in tuned} == {"add"}
    assert {r["hardware"] for r in tuned} == {"NVIDIA H100"}


@pytest.mark.parametrize("name", NAMES)
def test_the_harness_is_the_one_the_trace_names(mined, name):
    m, want = one(mined, name)
    assert work(m, "meta.json")["harness"] == want["harness"]
    assert {p["agent_facing"]["operator"]["harness"] for p, _ in m.packets.values()} == {want["harness"]}


def test_a_latin1_commit_body_is_decoded(mined):
    m, want = one(mined, "helion_add")
    version, phrase = want["latin1"]
    assert phrase in rows(m)[version]["body"]
    packet, _ = strategies(m)[version]
    assert phrase in packet["agent_facing"]["what_the_run_said"]["commit_body"]
    assert not any("\ufffd" in json.dumps(p) for p, _ in m.packets.values())


def test_subject_line_fields_are_parsed(mined):
    m, want = one(mined, "helion_add")
    for version, fields in want["subject_fields"].items():
        got = rows(m)[version]["subject_fields"]
        assert [tuple(p) for p in got["perf"]] == fields["perf"]
        assert got["change"] == fields["change"] and got["bottleneck"] == fields["bottleneck"]
        assert got.get("note") == fields.get("note")


@pytest.mark.parametrize("name", NAMES)
def test_a_pitfall_keeps_its_stated_cause_apart(mined, name):
    m, want = one(mined, name)
    pits = [p for r in rows(m).values() for p in r["pitfalls"]]
    for start, cause in want["pitfalls"].items():
        row = next(p for p in pits if p["text"].startswith(start))
        if cause is None:
            assert row["cause"] is None, row
        else:
            assert cause in (row["cause"] or ""), row


def test_the_real_sm100_capture_is_the_baselines_and_usable(mined):
    m, want = one(mined, "fp8_gemm_b200")
    cap = want["capture"]
    row = next(p for p in work(m, "profiles.jsonl") if p["version"] == cap["version"])
    assert row["usable"] and row["kernel_normalized"] == cap["kernel"] and row["duration_us"] == cap["duration_us"]
    packet, _ = strategies(m)["v2"]  # the first claim attacked what the baseline's capture shows
    assert packet["agent_facing"]["builds_on"]["parent_profiler"]["kernel"] == cap["kernel"]


# ---- the ladder ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_milestone_with_its_exact_gain_vs_the_floor_it_beat(mined, name):
    m, want = one(mined, name)
    claims = {v: (s["outcome"], s["improve_pct"]) for v, s in m.steps.items() if s["outcome"] in CLAIMS}
    assert claims == want["claims"]
    for version, floor in want["floor_before"].items():
        assert m.steps[version]["floor_before_us"] == m.steps[floor]["geomean_us"], version
    assert {v for v, s in m.steps.items() if s["outcome"] == "floor"} == want["floor_only"]
    assert {v for v, s in m.steps.items() if s["outcome"] == "flat"} == want["flat"]
    assert not any(s["outcome"] == "rebaseline" for s in m.steps.values())


@pytest.mark.parametrize("name", NAMES)
def test_rejected_versions_and_the_final_kernel(mined, name):
    m, want = one(mined, name)
    assert {v for v, s in m.steps.items() if s["outcome"] == "rejected"} == want["rejected"]
    assert [v for v, s in m.steps.items() if s["final"]] == [want["final"][0]]


def test_a_unit_slip_is_rejected_and_the_floor_stays(mined):
    m, want = one(mined, "helion_add")
    slip = m.steps[want["unit_slip"]]
    assert slip["outcome"] == "rejected" and "unit" in slip["reason"]
    after = next(v for v, (kind, _) in want["claims"].items() if int(v[1:]) > int(want["unit_slip"][1:]))
    assert m.steps[after]["floor_before_us"] == slip["floor_before_us"]  # the next real win beat the old floor


# ---- partition ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_one_segment_per_failed_lever_and_per_curated_pitfall(mined, name):
    m, want = one(mined, name)
    levers = [s for s in m.segments if s["record_type"] == "anti-strategy" and s["seg_kind"] != "curated-pitfall"]
    pits = [s for s in m.segments if s["seg_kind"] == "curated-pitfall"]
    assert len(levers) == len(want["failed_levers"]) and len(pits) == len(want["pitfalls"])
    for start in want["failed_levers"]:
        lever_of(m, start)
    for start in want["pitfalls"]:
        assert any(s["lever"]["text"].startswith(start) for s in pits), start
    for version, items in want.get("multi_lever", {}).items():
        assert sorted(s["lever"]["text"] for s in levers if s["version"] == version) == sorted(items)


@pytest.mark.parametrize("name", NAMES)
def test_a_lever_segment_carries_the_cause_its_trace_states(mined, name):
    m, want = one(mined, name)
    for start, cause in want["failed_levers"].items():
        seg = lever_of(m, start)
        if cause is None:
            assert seg["lever"]["cause"] is None, seg["lever"]
        else:
            assert cause in (seg["lever"]["cause"] or ""), seg["lever"]


@pytest.mark.parametrize("name", NAMES)
def test_a_claim_after_floor_only_steps_is_measured_against_the_floor_it_beat(mined, name):
    m, want = one(mined, name)
    for version, (_, gain) in want["claims"].items():
        packet, record = strategies(m).get(version, ({"provenance": {"builds_on": {}}}, None))
        assert packet["provenance"]["builds_on"]["version"] == want["floor_before"][version]
        assert packet["agent_facing"]["measurements"]["improve_pct_vs_floor"] == gain
        assert record is not None and record["worth"]["gain"]["pct"] == gain


# ---- the drafter -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_causal_mechanism_in_every_strategy_whose_trace_states_one(mined, name):
    m, want = one(mined, name)
    by_version = strategies(m)
    for version, cause in want["strategy_causes"].items():
        _, record = by_version.get(version, (None, None))
        assert record is not None and norm(cause) in norm(record["payload"]["mechanism"]), version


@pytest.mark.parametrize("name", NAMES)
def test_an_anti_strategy_for_every_failed_lever_with_a_stated_cause_and_none_without(mined, name):
    m, want = one(mined, name)
    for start, cause in want["failed_levers"].items():
        seg = lever_of(m, start)
        record = m.records.get(seg["seg_id"])
        assert (record is not None) == (cause is not None), start
        if record is not None:
            assert norm(cause) in norm(record["payload"]["established_fact"]["mechanism"]), start


@pytest.mark.parametrize("name", NAMES)
def test_a_failed_lever_is_attempted_as_the_lever_phrase_its_trace_names(mined, name):
    """The expected file names each failed lever as the trace does (swiglu v8's description states the
    cause first and then "Tried tl.multiple_of(x_ptr, 16) hints on the x loads."): the record's attempted
    field is that phrase alone, its goal says no other sentence of the description, and the cause is
    still its mechanism, read from the description the packet still carries."""
    m, want = one(mined, name)
    for lever, cause in want["failed_levers"].items():
        record = m.records.get(lever_of(m, lever)["seg_id"])
        if record is None:
            continue
        p = record["payload"]
        assert p["attempted"] == lever
        assert not any(s in p["goal"] for s in sentences(cause)), p["goal"]


@pytest.mark.parametrize("name", NAMES)
def test_an_anti_strategy_for_every_curated_pitfall_with_a_stated_cause_and_none_without(mined, name):
    m, want = one(mined, name)
    for start, cause in want["pitfalls"].items():
        record = next(r for p, r in antis(m, pitfalls=True) if p["agent_facing"]["the_failed_lever"].startswith(start))
        assert (record is not None) == (cause is not None), start
        if record is not None:
            assert norm(cause) in norm(json.dumps(record["payload"]["established_fact"])), start


@pytest.mark.parametrize("name", NAMES)
def test_a_goal_never_repeats_the_mechanism(mined, name):
    m, _ = one(mined, name)
    assert_goal_apart_from_mechanism(m, ("strategy", "anti-strategy"))


@pytest.mark.parametrize("name", NAMES)
def test_a_pitfall_carries_the_symptoms_its_own_statements_name(mined, name):
    m, want = one(mined, name)
    assert_pitfall_symptoms(m, want["pitfall_symptoms"])


TEMPLATE_LESSON = "Do not retry this lever on "
TEMPLATE_GOAL = "Cut the latency of "


@pytest.mark.parametrize("name", NAMES)
def test_no_template_sentence_where_the_trace_has_its_own(mined, name):
    m, _ = one(mined, name)
    for _, record in antis(m, pitfalls=False) + antis(m, pitfalls=True):
        if record is not None:
            assert not record["payload"]["lesson"].startswith(TEMPLATE_LESSON), record["payload"]["lesson"]
    for _, record in strategies(m).values():
        if record is not None:
            assert not record["payload"]["goal"].startswith(TEMPLATE_GOAL), record["payload"]["goal"]


@pytest.mark.parametrize("name", NAMES)
def test_no_subject_field_is_pasted_into_a_record(mined, name):
    m, _ = one(mined, name)
    for record in m.records.values():
        for field in ("change", "goal", "mechanism", "attempted"):
            assert " GB/s |" not in record["payload"].get(field, ""), (field, record["payload"].get(field))


@pytest.mark.parametrize("name", NAMES)
def test_every_drafted_record_passes_every_gate(mined, name):
    m, _ = one(mined, name)
    v = m.validation
    assert v["counts"]["records"] == len(m.records) > 0 and v["counts"]["failed"] == 0, [
        (r["path"], r["failed"]) for r in v["records"] if r["failed"]
    ]


# ---- verbatim code ------------------------------------------------------------------------------------


def kernel_at(trace_dir, sha: str) -> str:
    return subprocess.run(
        ["git", "show", f"{sha}:kernel.py"], cwd=trace_dir, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("name", NAMES)
def test_the_final_kernel_is_the_traces_code_and_every_replacement_is_true(mined, name):
    m, want = one(mined, name)
    version, core = want["final"]
    packet, code = m.packets["refk-final"]
    assert packet["provenance"]["version"] == version
    assert m.records["refk-final"]["payload"]["implementation"].get("core_kernel_name") == core
    trace_dir = m.results.parent / mt.LABELS[name]
    source = kernel_at(trace_dir, packet["provenance"]["commit"])
    refs = want["version_refs"][version]
    expected = source
    for ref, phrase in refs.items():
        expected = expected.replace(f"# {ref}: ", f"# {phrase}: ")
    assert code.rstrip("\n") == expected.rstrip("\n")


@pytest.mark.parametrize("name", NAMES)
def test_the_scrubber_keeps_the_final_kernel_verbatim_and_every_version_word_true(mined, name):
    """The scrubber's half of the test above, whatever packets pass it: the final kernel scrubbed as its
    own step differs from the trace's only where a comment names a version, and there says how that
    version relates to the final step (the expected file's words, read from the trace)."""
    m, want = one(mined, name)
    version, _ = want["final"]
    source = kernel_at(m.results.parent / mt.LABELS[name], rows(m)[version]["sha"])
    expected = source
    for ref, phrase in want["version_refs"][version].items():
        expected = expected.replace(f"# {ref}: ", f"# {phrase}: ")
    assert expected != source  # the final kernel names versions: the test reads real replacements
    assert Scrubber().code(source, want["dsl"], step=Step(int(version[1:]))) == expected


@pytest.mark.parametrize("name", NAMES)
def test_goals_lessons_and_next_steps_are_each_records_own(mined, name):
    m, _ = one(mined, name)
    assert_own_sentences(m)
