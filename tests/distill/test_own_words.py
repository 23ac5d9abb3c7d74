"""The drafter's classes from #26, as pure functions: a lesson in the trace's own words, the architecture
only where the cause is bound to it beyond the lever's own words, a strategy's bottleneck from what its
parent states, sentence boundaries kept when a verdict without a full stop meets the measured change, a
goal from a lever's purpose clause or a sentence of intent."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from optrace.distill.anti import lesson_claims, observed_claims
from optrace.distill.claims import Said, Sources
from optrace.distill.common import aim_sentences, purpose_of
from optrace.facts import cause_arch_bound, failure_regime, judge_sentence, parts_about
from optrace.gates.trace.ncu_attribution import stated_bottlenecks

LEVER = "stage gamma and beta in shared memory at the start of each block"


def packet(evidence: list[tuple[str, str]], record_type: str = "anti-strategy", pct=None) -> dict:
    items = [{"id": f"e{i + 1}", "kind": k, "text": t} for i, (k, t) in enumerate(evidence)]
    return {
        "record_type": record_type,
        "seg_kind": "deadend-prose",
        "agent_facing": {
            "evidence": items,
            "pitfalls_recorded_here": [],
            "measurements": {"improve_pct_vs_floor": pct},
        },
    }


def test_the_levers_own_words_do_not_bind_its_cause_to_the_architecture():
    cause = "Staging gamma and beta in shared memory only pays off when several rows share a block."
    assert not cause_arch_bound(cause, LEVER)
    assert not cause_arch_bound("200 threads leave a partial warp, so every block waits forever.", "200 threads")
    # a resource the lever does not name, the ISA range, the GPU: bound
    assert cause_arch_bound("the eight row addresses land in the same four banks", "ldmatrix.x4 loads of B")
    assert cause_arch_bound("mma.sync with s8 operands exists only for __CUDA_ARCH__ >= 800", "int8 mma path")
    assert cause_arch_bound("the H100 has 228 KB of shared memory per SM", "a deeper pipeline")


def test_a_lesson_is_never_the_lever_itself_and_may_be_the_causes_scope_sentence():
    p = packet([("segment", "a failed lever"), ("change", LEVER), ("body", "It was slower.")])
    why = [
        Said("a single warp cannot keep enough loads in flight to cover DRAM latency on an 8192-wide row", ("e3",)),
        Said("The warp-per-row layout belongs to short rows (hidden <= 1024), not to this one.", ("e3",)),
    ]
    assert [s.says for s in lesson_claims(p, Sources(p), LEVER, why, True)] == [why[1].says]
    # a one-sentence cause and nothing else to learn from: the segment's retry sentence with what must hold
    # for the cause (its own words), never the lever's text nor one sentence every lever shares
    lesson = lesson_claims(p, Sources(p), LEVER, why[:1], True)
    assert [s.says for s in lesson] == [f"Do not retry this lever while {why[0].says}."]
    # the part after "because" is what must hold; a toolchain's resource verdict keeps its numbers
    because = [Said("The copy adds a barrier because every element of gamma is read exactly once per block", ("e3",))]
    lesson = lesson_claims(p, Sources(p), LEVER, because, True)
    assert [s.says for s in lesson] == [
        "Do not retry this lever while every element of gamma is read exactly once per block."
    ]
    oor = [Said("OutOfResources: out of resource: shared memory, Required: 245760, Hardware limit: 232448.", ("e3",))]
    assert [s.says for s in lesson_claims(p, Sources(p), LEVER, oor, True)] == [
        "Do not retry this lever while its shared memory is over the hardware limit (Required: 245760, Hardware limit: 232448)."
    ]
    # a cause too short to restate: the pipeline's sentence
    lesson = lesson_claims(p, Sources(p), LEVER, [Said("registers spill", ("e3",))], True)
    assert [s.says for s in lesson] == ["Do not retry this lever while the cause above holds."]


def test_a_verdict_without_a_full_stop_never_runs_into_the_next_sentence():
    p = packet([("segment", "a failed lever"), ("gate-verdict", "register spills of 96 bytes per thread")], pct=-3.19)
    lever = {"id": "e9", "text": LEVER}
    text = " ".join(s.says for s in observed_claims(p, Sources(p), lever, []))
    assert text == (
        "The attempt measured -3.19% against the floor it was tried against (slower). "
        "register spills of 96 bytes per thread"
    )


@pytest.mark.parametrize("verdict", ["geomean -2.8% vs HEAD", "geomean +0.0% vs HEAD, within noise", "3.1% slower"])
def test_the_measured_change_is_said_once_from_its_slot_never_again_as_a_verdict_restates_it(verdict):
    p = packet([("segment", "a failed lever"), ("gate-verdict", verdict)], pct=-3.19)
    said = observed_claims(p, Sources(p), {"id": "e9", "text": LEVER}, [])
    assert [s.says for s in said] == ["The attempt measured -3.19% against the floor it was tried against (slower)."]


def test_a_strategys_stated_bottleneck_is_its_parents_never_its_own_after_state():
    evidence = [("stated-bottleneck", "three reads of every row"), ("bottleneck-type", "latency_bound")]
    evidence += [("parent-bottleneck-type", "memory_bound"), ("parent-symptom", "issue-bound")]

    def ev(record_type):
        p = packet(evidence, record_type)
        return SimpleNamespace(packet=SimpleNamespace(data=p, agent_facing=p["agent_facing"]))

    assert stated_bottlenecks(ev("strategy")) == ["three reads of every row", "memory_bound", "issue-bound"]
    assert stated_bottlenecks(ev("anti-strategy")) == ["three reads of every row"]


@pytest.mark.parametrize(
    "noun_phrase",
    ["int4 weights (two per byte) unpacked in the K loop", "fp16 loads of the whole row, one per thread"],
)
def test_a_plural_after_an_identifier_that_ends_its_clause_is_no_verb(noun_phrase):
    # a step record's change description names what was tried; read as "int4 weights" = subject + verb
    # it became the failed lever's cause and hid the commit body's real one (#26, the int8 GEMM's v8)
    assert not judge_sentence(noun_phrase, "int4 weights packed two per byte").states_cause


@pytest.mark.parametrize(
    "clause", ["x_ptr points past the row end for the last tile", "BLOCK_N rounds up to 224 barrier arrivals"]
)
def test_an_identifier_subject_with_a_verb_and_its_complement_is_still_a_clause(clause):
    assert judge_sentence(clause, "200 threads per block").states_cause


@pytest.mark.parametrize(
    "lever,aim",
    [
        ("__launch_bounds__(512, 2) to keep two blocks resident per SM", "Keep two blocks resident per SM."),
        ("pad each row by 8 bf16 in order to break the bank conflicts", "Break the bank conflicts."),
        ("block_sizes=[256] failed to compile", None),  # what happened, not an aim
        ("the barrier counts THREADS rounded up to 224 arrivals", None),  # a bound
        ("tcgen05 MMA over 256x256 tiles, B multicast to the pair", None),  # a destination
        ("to keep two blocks resident", None),  # the whole name: no lever before the aim
    ],
)
def test_a_lever_states_its_purpose_only_in_a_purpose_clause(lever, aim):
    found = purpose_of({"id": "e1", "text": lever})
    assert (found.says if found else None) == aim


@pytest.mark.parametrize(
    "text,intent",
    [
        ("Nothing else changed.", False),
        ("Pin the config so that the first timed call no longer autotunes.", True),
        ("The two-pass kernel fetched every row twice.", False),
    ],
)
def test_a_sentence_of_intent_says_what_was_meant(text, intent):
    assert bool(aim_sentences([{"id": "e1", "kind": "body", "text": text}], LEVER, (), intent=True)) == intent


@pytest.mark.parametrize(
    "text, regime",
    [
        ("At batch_size = 7 the grid is only 7 blocks on 108 SMs.", "batch_size = 7"),
        ("the combine kernel costs more than the extra CTAs save when seq_len <= 512.", "seq_len <= 512"),
        # where the trace says the lever pays off, the failure is on the other side
        ("Packing two rows into one block only helps batch_size >= 1024: the grid halves", "batch_size < 1024"),
        ("The warp-per-row layout belongs to short rows (hidden <= 1024), not to this one.", "hidden > 1024"),
        ("It pays off when M > 2048; here the tiles idle.", "M <= 2048"),
        # an equality named as where it pays off states no failure regime; two regimes state none
        ("It only pays off at batch = 1.", None),
        ("slower at batch_size = 7 and at batch_size = 4096", None),
        # a payoff clause ends at the sentence or a colon: a later regime is the failure's own
        ("Only helps long rows. At hidden = 8192 it waits on loads.", "hidden = 8192"),
    ],
)
def test_a_failed_levers_regime_is_where_it_fails(text, regime):
    assert failure_regime(text) == regime


@pytest.mark.parametrize(
    "sentence, kind",
    [
        # an imperative read by its shape, whatever its verb
        ("Convert explicitly with __bfloat162float and __float2bfloat16 instead.", "advice"),
        ("Unroll every K step of the inner loop by hand.", "advice"),
        # noun phrases, prepositions and quantities that open like one are not
        ("Explicit conversions with __bfloat162float and __float2bfloat16", "unjudged"),
        ("Half the threads of the block", "unjudged"),
        ("Vector loads of 16 bytes per thread", "unjudged"),
    ],
)
def test_an_imperative_is_advice_by_its_shape(sentence, kind):
    assert judge_sentence(sentence, "one-pass CUDA kernel using bf16 operator overloads").kind == kind


SPLIT_K = "split-K over 2 programs with an fp32 atomic reduction"
BLOCK_M = "BLOCK_M=64 for M <= 128"


@pytest.mark.parametrize(
    "text, lever, other, parts",
    [
        # a list of levers, read item by item: each lever keeps its own item only
        ("split-K with atomics; smaller M tiles for small batches", SPLIT_K, BLOCK_M, ("split-K with atomics",)),
        (
            "dead-end recorded: split-K over 2 programs with an fp32 atomic reduction, BLOCK_M=64 for M <= 128.",
            BLOCK_M,
            SPLIT_K,
            ("BLOCK_M=64 for M <= 128.",),
        ),
        # a sentence about one lever is that lever's whole, commas and all, and none of the other's
        (
            "Split-K sends every fp32 partial sum through L2 twice and needs a zeroed workspace per call, which "
            "costs more than the extra programs gain.",
            BLOCK_M,
            SPLIT_K,
            (),
        ),
        (
            "BLOCK_M=64 for M <= 128 still pads a 16-row batch to 64 rows, so three quarters of each MMA is wasted.",
            BLOCK_M,
            SPLIT_K,
            ("BLOCK_M=64 for M <= 128 still pads a 16-row batch to 64 rows, so three quarters of each MMA is wasted.",),
        ),
    ],
)
def test_shared_prose_is_read_as_each_levers_own_parts(text, lever, other, parts):
    assert parts_about(text, lever, (other,)) == parts
