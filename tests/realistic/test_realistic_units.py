"""Unit rules behind the realistic traces: causal forms, memory cause fields, technique tags, cost from the diff."""

import pytest

from optrace.facts import judge
from optrace.ingest.memory import parse_record
from optrace.kernelcode import cost_of, edit_scope
from optrace.mine.partition import _strip, revert_reason, technique_slug


@pytest.mark.parametrize(
    "text",
    [
        "the extra barrier serialises the two loads across the block",
        "staging the weight needs a __syncthreads() before the output loop",
        "the combine kernel costs more than it saves on short sequences",
        "wave quantisation leaves a partial wave on 108 SMs",
        "the persistent grid leaves 101 of the blocks idle for 7 rows",
        "packing two rows per block only helps large batches",
    ],
)
def test_causal_forms_as_runs_write_them(text):
    assert judge(text).states_cause, text


@pytest.mark.parametrize("text", ["flat-within-noise, +0.4%", "no improvement over the floor", "tried it, slower"])
def test_an_outcome_is_no_cause(text):
    assert not judge(text).states_cause


def test_memory_cause_fields_reach_the_step_record():
    rec = parse_record(
        5,
        {
            "performance": {"latency_us_geomean": 12.0, "speedup_vs_ref_geomean": 7.1},
            "optimization": {"action_description": "x", "expected_impact": "one barrier per row instead of nine"},
            "profile_evidence": {"evidence_summary": "barrier stalls 2.4", "bottleneck_type": "latency_bound"},
            "experience": {
                "experiments": [
                    {
                        "name": "split-KV",
                        "change": "split-KV with a combine kernel",
                        "evidence": "shape-0 slower",
                        "result": "the combine launch costs more than it saves",
                        "decision": "Revert",
                    },
                    {"hypothesis": "no name or change: not a lever"},
                    "a bare string",
                ]
            },
        },
    )
    assert (rec.speedup_vs_ref, rec.expected_impact, rec.evidence_summary, rec.bottleneck_type) == (
        7.1,
        "one barrier per row instead of nine",
        "barrier stalls 2.4",
        "latency_bound",
    )
    assert [e["decision"] for e in rec.experiments] == ["revert"] and rec.experiments[0]["hypothesis"] is None
    carried = parse_record(
        6,
        {"performance": {"latency_us_geomean": 12.0, "speedup_vs_ref_geomean": 7.1, "carried_from_version": "v5"}},
    )
    assert carried.speedup_vs_ref is None  # the incumbent's numbers are never this version's


@pytest.mark.parametrize(
    "text,slug",
    [
        (_strip("V7: 15971.7 GFLOPS | 2D blocktiling (bottleneck: shared-memory loads per FMA)"), "2d-blocktiling"),
        (
            _strip("V1: 1987.3 GFLOPS | global memory coalescing (bottleneck: 32 sectors per request)"),
            "global-memory-coalescing",
        ),
        ("BLOCK=8192: each program handles two rows as one flat 8192-wide block", "program-handles-two-rows-one-flat"),
        (
            "episode 6: cache the weight in shared memory and software-pipeline the next row's loads",
            "cache-weight-shared-memory-software-pipeline",
        ),
        ("stage the 8 KB weight vector in shared memory once per block", "stage-weight-vector-shared-memory-once"),
        ("warptiling: each warp owns a 64x32 sub-tile", "warptiling"),
        ("fuse the softmax into the P*V pass so the score matrix is read once", "fuse-softmax-p-v-pass"),
    ],
)
def test_technique_tags_are_short_name_words_without_numbers(text, slug):
    assert technique_slug(text) == slug


def test_a_revert_states_its_reason():
    assert (
        revert_reason("V9: revert V8 (the second stage needs 16 KB more shared memory per block)")
        == "the second stage needs 16 KB more shared memory per block"
    )
    assert revert_reason("V9: 120 GFLOPS | revert nothing") is None


def diff(added, removed, context=3):
    return "\n".join(["@@ -1 +1 @@"] + [" ctx"] * context + ["-old"] * removed + ["+new"] * added)


def test_cost_comes_from_the_size_of_the_diff():
    assert edit_scope(diff(1, 1)) == "one-line"
    assert cost_of(diff(1, 1), "PASS")["risk"] == "low"
    assert cost_of(diff(30, 20, context=40), "PASS") == {
        "edit_scope": "kernel-rewrite",
        "risk": "med",
        "risk_basis": "a large edit; it passed the harness's correctness check",
    }
    assert edit_scope(diff(80, 60, context=6)) == "architecture"
    assert cost_of(diff(2, 2), None)["risk"] == "high"
