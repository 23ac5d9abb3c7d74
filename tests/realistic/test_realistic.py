"""Records worth reading, on three realistic traces built from the public run data (tests/realistic_traces.py).

Each trace is built and mined once per module (ingest -> partition -> packets -> draft -> validate, in
process); every test reads those outputs. Skipped when ../shared/data is absent.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from optrace.cli import main as optrace
from optrace.distill.common import lever_key, tag
from optrace.facts import cause_arch_bound
from optrace.mine.ladder import CLAIMS
from optrace.pipeline_facts import capture_for_signals
from optrace.wording import sentences
from tests.support import realistic_traces as rt
from tests.support.mined import packet_file, packets_path
from tests.support.schemas import assert_valid

pytestmark = pytest.mark.skipif(not rt.available(), reason="../shared/data is absent (a user's clone has none)")


@dataclass
class Mined:
    name: str
    results: Path
    slug: str
    steps: dict  # version -> ladder step row (recon.json)
    segments: list[dict]
    packets: dict  # seg_id -> (packet, code)
    records: dict  # seg_id -> record
    distill: dict
    validation: dict
    recon_md: str
    partition_md: str

    def of_type(self, rtype: str) -> list[tuple[dict, dict]]:
        """(packet, record) of every drafted record of a type."""
        return [(self.packets[s][0], r) for s, r in self.records.items() if r["type"] == rtype]

    def by_version(self, rtype: str) -> dict[str, dict]:
        return {p["provenance"]["version"]: r for p, r in self.of_type(rtype)}


def mine(name: str, root: Path) -> Mined:
    return mine_trace(name, rt.build(name, root), root)


def mine_trace(name: str, trace: Path, root: Path) -> Mined:
    """Run the chain in process on a built trace (ingest -> ... -> validate) and load what it wrote."""
    results = root / "results"
    slug = name.replace("_", "-")
    work, packets, reports = (
        results / "work" / slug,
        packets_path(results, slug),
        results / "staging" / "reports" / slug,
    )
    steps = [
        ["ingest", str(trace), "--out-dir", str(work)],
        ["recon", "--work-dir", str(work), "--out-dir", str(reports)],
        ["partition", "--work-dir", str(work), "--report", str(reports / "partition.md")],
        ["packets", str(trace), "--work-dir", str(work), "--out", str(packets), "--slug", slug],
        [
            "distill",
            "--packets",
            str(packets),
            "--out",
            str(results),
            "--report",
            str(reports / "distill.json"),
            "--mode",
            "draft",
        ],
        ["validate", "trace", "--results", str(results), "--slug", slug],
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in steps:
            assert optrace(argv) == 0, argv
    loaded = {}
    files = packet_file(results, slug).files
    for name in sorted(files):
        if name.endswith(".json"):
            packet = json.loads(files[name])
            code_file = packet["agent_facing"].get("code_file")
            loaded[packet["seg_id"]] = (packet, files[code_file] if code_file else None)
    records = {}
    for seg_id, (packet, _) in loaded.items():
        path = results / packet["target"]["output"]
        if path.exists():
            records[seg_id] = json.loads(path.read_text())
    recon = json.loads((reports / "recon.json").read_text())
    return Mined(
        name,
        results,
        slug,
        {s["version"]: s for s in recon["ladder"]["steps"]},
        [json.loads(line) for line in (work / "segments.jsonl").read_text().splitlines()],
        loaded,
        records,
        json.loads((reports / "distill.json").read_text()),
        json.loads((reports / "validation.json").read_text()),
        (reports / "recon.md").read_text(),
        (reports / "partition.md").read_text(),
    )


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> dict[str, Mined]:
    if not rt.available():  # other modules use this fixture too: they skip with it
        pytest.skip("../shared/data is absent (a user's clone has none)")
    return {name: mine(name, tmp_path_factory.mktemp(name)) for name in rt.BUILDERS}


TRACES = list(rt.BUILDERS)

# What a kernel engineer reading each run would file. Claims: version -> ladder kind; `review`: claims
# beyond the x5 factor with no re-baseline evidence; `rebaseline`: versions whose numbers changed harness.
EXPECTED = {
    "fib_rmsnorm": {
        "claims": {"v2": "mega", "v3": "milestone", "v4": "milestone", "v12": "milestone"},
        "builds_on": {"v2": "v0", "v3": "v2", "v4": "v3", "v12": "v11"},
        "review": {"v2"},
        "rebaseline": {"v11"},
        "family": "norm",
        "final": ("v12", "fused_add_rmsnorm_kernel"),
        "antis": {
            "one-pass CUDA kernel using bf16 operator overloads (x + r on __nv_bfloat16)",
            "__launch_bounds__(512, 2) to keep two blocks resident per SM",
            "stage the 8 KB weight vector in shared memory once per block",
            "persistent grid-stride loop over rows",
            "cp.async prefetch of the residual row",
            "two rows per block with 256 threads each",
        },
        "no_record": {"store the residual sum before the normalisation": "no causal sentence"},
        "pitfalls": ["misaligned address on a sliced hidden_states tensor"],
        "pitfall_symptoms": {"misaligned address on a sliced hidden_states tensor": ["misaligned-address"]},
        # the lesson the trace writes for a failed lever, in its own words (an imperative after the cause)
        "lessons": {
            "one-pass CUDA kernel using bf16 operator overloads (x + r on __nv_bfloat16)": "Convert explicitly with "
            "__bfloat162float and __float2bfloat16 instead."
        },
        "shape_regimes": {
            "two rows per block with 256 threads each": "batch_size < 1024",  # "only helps batch_size >= 1024"
            "__launch_bounds__(512, 2) to keep two blocks resident per SM": "batch_size = 7",
        },
    },
    "aka_attention": {
        "claims": {
            "v2": "mega",
            "v3": "mega",
            "v4": "mega",
            "v5": "milestone",
            "v6": "mega",
            "v7": "milestone",
            "v9": "milestone",
        },
        "builds_on": {"v2": "v1", "v3": "v2", "v4": "v3", "v5": "v4", "v6": "v5", "v7": "v6", "v9": "v7"},
        "review": set(),
        "rebaseline": set(),
        "family": "flash-attention",
        "final": ("v11", "flash_attn_fwd_kernel"),
        "antis": {
            "XOR-swizzle the Q tile in shared memory as well as K and V",
            "split-KV with a separate combine kernel for seq_len <= 512",
            "accumulate P*V in fp16 instead of fp32",
            "128x128 query/key tiles with 8 warps",
            "warp-specialised producer/consumer split with one producer warp",
        },
        "no_record": {},
        "pitfalls": ["misaligned address. CUDA error: misaligned address in the wmma fragment load"],
        "pitfall_symptoms": {"misaligned address. CUDA error": ["misaligned-address"]},
        "shape_regimes": {"split-KV with a separate combine kernel for seq_len <= 512": "seq_len <= 512"},
    },
    "sgemm_ladder": {
        "claims": {"v1": "mega", "v2": "mega", "v5": "mega", "v7": "mega", "v10": "milestone", "v12": "milestone"},
        "builds_on": {"v1": "v0", "v2": "v1", "v5": "v2", "v7": "v6", "v10": "v7", "v12": "v11"},
        "review": {"v1"},
        "rebaseline": {"v6"},
        "family": "gemm",
        "final": ("v12", "sgemm_warptile"),
        "antis": {"64x64 shared-memory tiles", "double-buffered shared-memory tiles of A and B"},
        "no_record": {},
        "pitfalls": [
            "64x64 tiles with one thread per element launch 4096 threads per block",
            "register spills at TM=TN=16",
        ],
        # the first states its failure in its explanation ("the launch fails with an invalid configuration")
        "pitfall_symptoms": {
            "64x64 tiles with one thread per element": ["launch-failure"],
            "register spills at TM=TN=16": ["register-spill"],
        },
        "shape_regimes": {},
    },
}


def norm(text: str) -> str:
    return " ".join(str(text).split())


def pieces(text: object) -> list[str]:
    """Sentences, and the clauses a colon introduces ("within noise: the halved warp count ...")."""
    return [p.strip() for s in sentences(text) for p in re.split(r":\s+", s) if p.strip()]


# ---- the ladder ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRACES)
def test_exactly_the_claimed_milestones(mined, name):
    m, want = mined[name], EXPECTED[name]
    claims = {v: s["outcome"] for v, s in m.steps.items() if s["outcome"] in CLAIMS}
    assert claims == want["claims"]
    assert {p["provenance"]["version"] for p, _ in m.of_type("strategy")} == set(want["claims"])
    assert {v for v, s in m.steps.items() if s["review"]} == want["review"]
    assert {v for v, s in m.steps.items() if s["outcome"] == "rebaseline"} == want["rebaseline"]
    for v in want["review"]:  # the > x5 win is claimed, explained in its commit, and flagged in recon and partition
        assert m.steps[v]["improve_pct"] > 80 and "no re-baseline evidence" in m.steps[v]["review"]
        assert re.search(rf"\| {v} \| mega .*\*\*Review:\*\*", m.recon_md) and f"- {v}: " in m.partition_md
    for v in want["rebaseline"]:  # a real harness change: the floor moves, nothing is claimed
        assert "reference re-measured in the same run moved" in m.steps[v]["reason"]
        assert v not in {p["provenance"]["version"] for p, _ in m.of_type("strategy")}


@pytest.mark.parametrize("name", TRACES)
def test_snippet_builds_on_and_parent_geomean_name_one_previous_milestone(mined, name):
    m = mined[name]
    for packet, record in m.of_type("strategy"):
        version, parent = packet["provenance"]["version"], packet["provenance"]["builds_on"]
        assert parent["version"] == EXPECTED[name]["builds_on"][version]
        assert (
            record["evidence"]["raw"]["effect"]["parent_geomean_us"]
            == parent["geomean_us"]
            == packet["agent_facing"]["measurements"]["floor_before_us"]
            == m.steps[parent["version"]]["geomean_us"]
        )
        # the gain is measured against that same version, with the one rounding rule
        geo = m.steps[version]["geomean_us"]
        assert record["worth"]["gain"]["pct"] == round((parent["geomean_us"] - geo) / parent["geomean_us"] * 100, 2)


def test_the_sgemm_milestone_after_a_floor_taker_builds_on_the_floor_it_beat(mined):
    """v11 (BK=16, within noise) took the floor without a claim: v12's gain is against v11, and its diff
    is its own warptiling change, without v11's BK=16 (#26: not the last claim, not earlier changes)."""
    m = mined["sgemm_ladder"]
    assert m.steps["v11"]["outcome"] == "floor"  # "within noise": took the floor, claimed nothing
    packet = next(p for p, _ in m.of_type("strategy") if p["provenance"]["version"] == "v12")
    assert packet["provenance"]["builds_on"]["version"] == packet["provenance"]["diff_base"]["version"] == "v11"
    diff = m.packets[packet["seg_id"]][1]
    assert " constexpr int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8;" in diff.splitlines()  # context
    assert "+constexpr int WM = 64, WN = 32;" in diff and "BK = 8" not in diff


# ---- failed levers, pitfalls ---------------------------------------------------------------------


@pytest.mark.parametrize("name", TRACES)
def test_one_anti_strategy_per_distinct_failed_lever_with_a_stated_cause(mined, name):
    m, want = mined[name], EXPECTED[name]
    antis = [(p, r) for p, r in m.of_type("anti-strategy") if p["seg_kind"] != "curated-pitfall"]
    attempted = [r["payload"]["attempted"] for _, r in antis]
    assert sorted(attempted) == sorted(want["antis"])  # one each, list items split
    for lever, why in want["no_record"].items():
        seg = next(s for s in m.segments if s.get("lever", {}).get("text") == lever)
        outcome = next(o for o in m.distill["packets"] if o["seg_id"] == seg["seg_id"])
        assert outcome["outcome"] == "skipped-thin" and why in outcome["reason"]
    for lever, regime in want["shape_regimes"].items():
        record = next(r for _, r in antis if r["payload"]["attempted"] == lever)
        assert record["payload"]["established_fact"]["condition"]["shape_regime"] == regime


@pytest.mark.parametrize("name", TRACES)
def test_the_curated_pitfalls(mined, name):
    m = mined[name]
    pits = [r["payload"]["attempted"] for p, r in m.of_type("anti-strategy") if p["seg_kind"] == "curated-pitfall"]
    assert len(pits) == len(EXPECTED[name]["pitfalls"])
    for start in EXPECTED[name]["pitfalls"]:
        assert any(p.startswith(start) for p in pits), (start, pits)


def assert_pitfall_symptoms(m: Mined, want: dict[str, list[str]]) -> None:
    """Every curated pitfall's record carries the symptoms its expected file lists (by the pitfall's start:
    the failures its own name and explanation state, none where they state none), each citing only the
    pitfall's name or explanation, and a trigger for each; a pitfall the file does not list has no record."""
    found = {}
    for packet, record in m.of_type("anti-strategy"):
        if packet["seg_kind"] != "curated-pitfall":
            continue
        (start,) = [s for s in want if record["payload"]["attempted"].startswith(s)]
        symptoms = record["retrieval"]["signals"]["symptoms"]
        found[start] = symptoms
        kinds = {i["id"]: i["kind"] for i in packet["agent_facing"]["evidence"]}
        cited = record["evidence"]["raw"]["evidence_extra"]["claims"]["fields"]
        for k in range(len(symptoms)):
            for claim in cited[f"retrieval.signals.symptoms[{k}]"]:
                assert {kinds[c] for c in claim["cites"]} <= {"lever", "cause"}, (start, claim)
        assert [t.split(" ", 1)[0] for t in record["retrieval"]["triggers"]] == symptoms, start
    assert found == want


def assert_goal_apart_from_mechanism(m: Mined, types: tuple[str, ...]) -> None:
    """No record's goal is, holds or is part of a sentence of its mechanism (a strategy's mechanism, an
    anti-strategy's established fact): the goal says what the step set out to do, the mechanism why."""
    for seg, r in m.records.items():
        if r["type"] not in types:
            continue
        p = r["payload"]
        mechanism = p["mechanism"] if r["type"] == "strategy" else p["established_fact"]["mechanism"]
        goal = norm(p["goal"]).lower()
        for s in sentences(mechanism):
            said = norm(s).rstrip(".").lower()
            assert said not in goal and goal.rstrip(".") not in said, (seg, p["goal"], mechanism)


# the sentences the pipeline once wrote in every record whose trace states no aim or lesson of its own
FLOOR_GOAL = re.compile(r"^Beat the floor of the \S+ operator on ")
RETRY_LESSON = "Do not retry this lever while the cause above holds."


def assert_own_sentences(m: Mined) -> None:
    """Each record's goal, lesson and next steps are its own: no goal is the ladder's floor template, no
    lesson the pipeline's retry sentence, and no sentence of a goal (of a lesson, of a next step) is
    another record's of the same trace."""
    seen: dict[tuple[str, str], str] = {}
    for seg, r in m.records.items():
        p = r["payload"]
        assert not FLOOR_GOAL.match(p.get("goal", "")), (seg, p["goal"])
        assert p.get("lesson") != RETRY_LESSON, (seg, p["lesson"])
        texts = [("goal", p.get("goal")), ("lesson", p.get("lesson"))] + [("next", n) for n in p.get("next_steps", [])]
        for field, text in texts:
            for s in sentences(text or ""):
                key = (field, norm(s).rstrip(".").lower())
                assert seen.setdefault(key, seg) == seg, (field, s, seen[key], seg)


@pytest.mark.parametrize("name", TRACES)
def test_goals_lessons_and_next_steps_are_each_records_own(mined, name):
    assert_own_sentences(mined[name])


@pytest.mark.parametrize("name", TRACES)
def test_a_goal_never_repeats_the_mechanism(mined, name):
    assert_goal_apart_from_mechanism(mined[name], ("strategy", "anti-strategy"))


@pytest.mark.parametrize("name", TRACES)
def test_a_pitfall_carries_the_symptoms_its_own_statements_name(mined, name):
    assert_pitfall_symptoms(mined[name], EXPECTED[name]["pitfall_symptoms"])


def test_revert_pairs_are_one_lever_whose_cause_is_the_revert_reason(mined):
    m = mined["sgemm_ladder"]
    segs = {s["lever"]["text"]: s for s in m.segments if s["record_type"] == "anti-strategy"}
    tiles = segs["64x64 shared-memory tiles"]
    assert tiles["lever"]["split_by"] == "revert-pair" and tiles["version"] == "v3"
    assert tiles["lever"]["cause"].startswith("64x64 tiles need 32 KB of shared memory per block")
    assert not any(s["version"] in ("v4", "v9") for s in m.segments if s["record_type"] == "anti-strategy")
    record = m.records[tiles["seg_id"]]
    assert "occupancy 67% -> 33%" in record["payload"]["established_fact"]["mechanism"]


def test_an_established_fact_has_a_causal_mechanism_and_a_distinct_lesson(mined):
    for m in mined.values():
        for packet, record in m.of_type("anti-strategy"):
            pl = record["payload"]
            assert len(pl["established_fact"]["mechanism"]) >= 40
            assert lever_key(pl["lesson"]) != lever_key(pl["established_fact"]["mechanism"])
            # the architecture is a condition only where the cause is bound to it (#26)
            condition = pl["established_fact"]["condition"]
            if cause_arch_bound(pl["established_fact"]["mechanism"], pl["attempted"]):
                assert condition["sm_arch"] == packet["agent_facing"]["operator"]["isa"], pl["attempted"]
            else:
                assert "sm_arch" not in condition, pl["attempted"]


def test_verdicts_follow_the_stated_cause(mined):
    by = {
        r["payload"]["attempted"]: r["payload"]["verdict"]
        for m in mined.values()
        for _, r in m.of_type("anti-strategy")
    }
    assert by["one-pass CUDA kernel using bf16 operator overloads (x + r on __nv_bfloat16)"] == "api-limitation"
    assert by["accumulate P*V in fp16 instead of fp32"] == "accuracy-gate/ceiling"
    assert by["64x64 shared-memory tiles"] == "not-worth-it-here"


# a curated pitfall's verdict is what its own failure is (read from the trace): a fault fails the
# correctness check, a launch the runtime refuses is the API's limit, a spill is a cost not worth paying
PITFALL_VERDICTS = {
    "misaligned address on a sliced hidden_states tensor": "accuracy-gate/ceiling",
    "misaligned address. CUDA error: misaligned address in the wmma fragment load": "accuracy-gate/ceiling",
    "64x64 tiles with one thread per element launch 4096 threads per block": "api-limitation",
    "register spills at TM=TN=16": "not-worth-it-here",
}


def test_a_pitfall_carries_the_verdict_of_its_own_failure(mined):
    found = {
        r["payload"]["attempted"]: r["payload"]["verdict"]
        for m in mined.values()
        for p, r in m.of_type("anti-strategy")
        if p["seg_kind"] == "curated-pitfall"
    }
    assert {k: found.get(k) for k in PITFALL_VERDICTS} == PITFALL_VERDICTS


# ---- reference kernels ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRACES)
def test_the_final_reference_kernel_is_the_whole_source_with_its_core_kernel(mined, name):
    m = mined[name]
    version, core = EXPECTED[name]["final"]
    packet, code = m.packets["refk-final"]
    record = m.records["refk-final"]
    impl = record["payload"]["implementation"]
    assert packet["provenance"]["version"] == version
    assert impl["snippet"] == code.rstrip("\n").rstrip()  # whole source, not the first function
    assert impl["core_kernel_name"] == core and f"{core}(" in code
    for _, r in m.of_type("reference-kernel"):
        assert r["payload"]["implementation"]["core_kernel_name"] != "__launch_bounds__"


GLUON_WITH_FALLBACK = """import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def rmsnorm_gluon(x_ptr, w_ptr, out_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([8], [32], [4], [0])
    offs = gl.arange(0, BLOCK, layout=layout)
    x = gl.load(x_ptr + offs).to(gl.float32)
    gl.store(out_ptr + offs, x * gl.rsqrt(gl.sum(x * x, axis=0) / BLOCK + 1e-5) * gl.load(w_ptr + offs))


@triton.jit
def rmsnorm_triton_fallback(x_ptr, w_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    tl.store(out_ptr + offs, x * tl.rsqrt(tl.sum(x * x, axis=0) / BLOCK + 1e-5) * tl.load(w_ptr + offs))


def run(x, w, out):
    rmsnorm_gluon[(x.shape[0],)](x, w, out, BLOCK=4096)
"""


def test_a_gluon_kernel_is_not_filed_with_its_triton_fallback():
    from optrace.kernelcode import kernel_source

    snippet, core = kernel_source(GLUON_WITH_FALLBACK, "gluon")
    assert core == "rmsnorm_gluon" and "rmsnorm_triton_fallback" not in snippet and "def run(" in snippet
    assert all(line in GLUON_WITH_FALLBACK.splitlines() for line in snippet.splitlines())
    snippet, core = kernel_source(GLUON_WITH_FALLBACK, "triton")
    assert core == "rmsnorm_triton_fallback" and "def rmsnorm_gluon" not in snippet


# ---- every gate, the store's vocabulary, tags and ids ---------------------------------------------


@pytest.mark.parametrize("name", TRACES)
def test_every_drafted_record_passes_every_gate(mined, name):
    m = mined[name]
    v = m.validation
    assert_valid(v, "validation.schema.json")
    assert v["counts"]["records"] == len(m.records) == m.distill["counts"]["drafted"] and v["counts"]["failed"] == 0, [
        (r["path"], r["failed"]) for r in v["records"] if r["failed"]
    ]


@pytest.mark.parametrize("name", TRACES)
def test_operator_family_in_the_stores_vocabulary(mined, name):
    m = mined[name]
    assert {r["retrieval"]["scope"]["operator_family"] for r in m.records.values()} == {EXPECTED[name]["family"]}
    assert all(r["id"].split(".")[3] == EXPECTED[name]["family"] for r in m.records.values())


STRATEGY_SYMPTOM_KINDS = ("bottleneck-type", "parent-symptom", "parent-stall")
NUMBER_WORD = re.compile(r"\d+(?:x\d+)*")


@pytest.mark.parametrize("name", TRACES)
def test_tags_are_short_and_ids_carry_no_numeric_noise(mined, name):
    for record in mined[name].records.values():
        for t in record["retrieval"]["technique_tags"]:
            words = t.split("-")
            assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", t) and len(words) <= 6, t
            assert not any(NUMBER_WORD.fullmatch(w) for w in words), t
        technique = record["id"].split(".", 4)[4].rsplit("-", 1)[0]
        assert not any(NUMBER_WORD.fullmatch(w) for w in technique.split("-")), record["id"]
    sgemm = {p["provenance"]["version"]: r for p, r in mined["sgemm_ladder"].of_type("strategy")}
    assert sgemm["v7"]["retrieval"]["technique_tags"][0] == "2d-blocktiling"


# ---- fields: which packet field fills which record field ------------------------------------------


def sentences_of(*texts) -> set[str]:
    return {norm(p) for t in texts for p in pieces(t)}


HELD_LESSON = "Do not retry this lever while "


def held_from(condition: str, *texts) -> bool:
    """A derived lesson's condition is a part of a text it rests on (lower-cased at its start), or a
    toolchain's resource verdict restated with its own numbers."""
    cond = norm(condition).rstrip(".").lower()
    pool = " ".join(norm(t) for t in texts if isinstance(t, str)).lower()
    verdict = re.match(r"its (.+) is over the hardware limit \(required: (\d+), hardware limit: (\d+)\)$", cond)
    if verdict:
        return f"{verdict[1]}, required: {verdict[2]}, hardware limit: {verdict[3]}" in pool
    return cond in pool


def all_sentences_from(value: str, *texts) -> bool:
    pool = " ".join(norm(t) for t in texts if isinstance(t, str))
    return all(norm(p).rstrip(".") in pool for p in pieces(value))


# record field -> how it is filled from the packet (a check over (record, packet, code)); pinned per type
FIELD_SOURCES = {
    "strategy": {
        "payload.change": lambda r, p, c: (
            r["payload"]["change"] == norm(p["agent_facing"]["what_the_run_said"]["change"])
        ),
        "payload.mechanism": lambda r, p, c: all_sentences_from(
            r["payload"]["mechanism"],
            *(
                p["agent_facing"]["what_the_run_said"][k]
                for k in ("commit_body", "evidence_summary", "expected_impact")
            ),
        ),
        "payload.trace.builds_on.approach": lambda r, p, c: (
            r["payload"]["trace"]["builds_on"]["approach"] == norm(p["agent_facing"]["builds_on"]["previous_approach"])
        ),
        "payload.next_steps": lambda r, p, c: (
            r["payload"]["next_steps"] == [norm(d["direction"]) for d in p["agent_facing"]["open_directions"]]
        ),
        "payload.implementation.snippet": lambda r, p, c: (
            set(r["payload"]["implementation"]["snippet"].splitlines()) <= set(c.splitlines())
        ),
        "worth.gain.pct": lambda r, p, c: (
            r["worth"]["gain"]["pct"] == p["agent_facing"]["measurements"]["improve_pct_vs_floor"]
        ),
        "evidence.raw.effect.parent_geomean_us": lambda r, p, c: (
            r["evidence"]["raw"]["effect"]["parent_geomean_us"] == p["agent_facing"]["measurements"]["floor_before_us"]
        ),
        # a strategy's signals are the capture of the version it builds on: the problem the step attacked
        "retrieval.signals.metrics": lambda r, p, c: all(
            (capture_for_signals(p) or {}).get("metrics", {}).get(k) == v
            for k, v in r["retrieval"]["signals"]["metrics"].items()
        ),
        "retrieval.signals.symptoms": lambda r, p, c: (
            set(r["retrieval"]["signals"]["symptoms"])
            <= {tag(i["text"]) for i in p["agent_facing"]["evidence"] if i["kind"] in STRATEGY_SYMPTOM_KINDS}
        ),
    },
    "anti-strategy": {
        "payload.attempted": lambda r, p, c: r["payload"]["attempted"] == norm(p["agent_facing"]["the_failed_lever"]),
        "payload.established_fact.mechanism": lambda r, p, c: all_sentences_from(
            r["payload"]["established_fact"]["mechanism"],
            p["agent_facing"].get("why_it_failed"),
            p["agent_facing"]["the_failed_lever"],
            p["agent_facing"].get("how_it_was_fixed"),
            *p["agent_facing"]["what_the_run_said"].values(),
            *(x["pitfall"] for x in p["agent_facing"]["pitfalls_recorded_here"]),
        ),
        "payload.established_fact.condition.sm_arch": lambda r, p, c: (
            r["payload"]["established_fact"]["condition"].get("sm_arch", p["agent_facing"]["operator"]["isa"])
            == p["agent_facing"]["operator"]["isa"]
        ),
        "payload.established_fact.condition.toolchain": lambda r, p, c: (
            r["payload"]["established_fact"]["condition"].get("toolchain")
            in (p["target"]["scope"]["dsl"], None if p["target"]["scope"]["dsl"] == "any" else "-")
        ),
        # the trace's own lesson or fix (its sentences), a sentence of its own saying when the lever pays
        # off, the run's next direction, and the pipeline's sentence only where the trace has none of these
        "payload.lesson": lambda r, p, c: (
            all_sentences_from(
                r["payload"]["lesson"].removeprefix("Try instead: "),
                *(i["text"] for i in p["agent_facing"]["evidence"]),
            )
            # where the trace states none: the segment's retry sentence with the cause's own words (what
            # must hold for it), never the one sentence every lever of the run would share
            or (
                r["payload"]["lesson"].startswith(HELD_LESSON)
                and held_from(
                    r["payload"]["lesson"].removeprefix(HELD_LESSON),
                    *(i["text"] for i in p["agent_facing"]["evidence"]),
                )
            )
        ),
        "payload.observed": lambda r, p, c: (
            "observed" not in r["payload"]
            or all(n in json.dumps(p["agent_facing"]) for n in re.findall(r"\d+(?:\.\d+)?", r["payload"]["observed"]))
        ),
    },
    "reference-kernel": {
        "payload.implementation.snippet": lambda r, p, c: (
            r["payload"]["implementation"]["snippet"] == c.rstrip("\n").rstrip()
        ),
        "payload.implementation.core_kernel_name": lambda r, p, c: (
            r["payload"]["implementation"]["core_kernel_name"] + "(" in c
        ),
        "payload.trace.builds_on.approach": lambda r, p, c: (
            r["payload"]["trace"]["builds_on"]["approach"]
            == norm(
                p["agent_facing"]["what_the_run_said"]["change"]
                or p["agent_facing"]["what_the_run_said"]["commit_body"]
            )
        ),
    },
}


@pytest.mark.parametrize("rtype", FIELD_SOURCES)
def test_the_drafter_fills_each_field_from_its_packet_field(mined, rtype):
    checked = 0
    for m in mined.values():
        for seg_id, record in m.records.items():
            if record["type"] != rtype:
                continue
            packet, code = m.packets[seg_id]
            failed = [f for f, check in FIELD_SOURCES[rtype].items() if not check(record, packet, code)]
            assert not failed, (m.name, seg_id, failed)
            checked += 1
    assert checked >= 3  # a snapshot kernel no different from its neighbours is no record (#26)


@pytest.mark.parametrize("name", TRACES)
def test_no_field_the_packet_supports_is_empty(mined, name):
    m = mined[name]
    for seg_id, record in m.records.items():
        packet, _ = m.packets[seg_id]
        a, pl, sig = packet["agent_facing"], record["payload"], record["retrieval"]["signals"]
        said = a["what_the_run_said"]
        assert record["retrieval"]["technique_tags"]
        # a pitfall's version states the kept change's bottleneck, not the pitfall's
        pitfall = packet["seg_kind"] == "curated-pitfall"
        if said["bottleneck_type"] and said["bottleneck_type"] not in ("episode-derived",) and not pitfall:
            assert sig["symptoms"] and record["retrieval"]["triggers"], seg_id
        if record["type"] == "strategy":
            assert pl["mechanism"] and norm(pl["mechanism"]) != norm(pl["change"]), seg_id
            assert bool(pl["next_steps"]) == bool(a["open_directions"]), seg_id
            capture = capture_for_signals(packet)  # the parent's, for a strategy
            assert bool(sig["metrics"]) == bool(capture and any(capture["metrics"].get(k) for k in sig["metrics"]))
        elif record["type"] == "anti-strategy":
            own = packet["seg_kind"] == "deadend-prose" and said["gate_verdict"]
            seen = a.get("what_was_observed")  # what the attempt showed, apart from its cause
            measured = a["measurements"]["improve_pct_vs_floor"] is not None and not pitfall
            if own or seen or measured:
                assert pl.get("observed"), seg_id
        else:
            assert pl["implementation"].get("core_kernel_name"), seg_id


def test_a_strategys_mechanism_is_its_own_evidence_never_the_next_steps_diagnosis(mined):
    m = mined["fib_rmsnorm"]
    packet, record = next((p, r) for p, r in m.of_type("strategy") if p["provenance"]["version"] == "v2")
    assert packet["agent_facing"]["profiler"]["conclusion"].startswith(
        "scalar 2-byte loads"
    )  # v2's capture: v3's target
    assert "scalar 2-byte loads" not in record["payload"]["mechanism"]
    assert "reads hidden_states and residual once" in record["payload"]["mechanism"]


def test_packets_carry_what_a_distiller_needs(mined):
    m = mined["fib_rmsnorm"]
    v3 = next(p for p, _ in m.of_type("strategy") if p["provenance"]["version"] == "v3")
    parent = v3["agent_facing"]["builds_on"]["parent_profiler"]  # what this step attacked: v2's capture
    assert (
        parent["metrics"]["stall_reasons"]["long_scoreboard"] == 9.12
        and parent["metrics"]["memory_throughput_pct"] == 31.4
    )
    assert v3["agent_facing"]["what_the_run_said"]["bottleneck_type"] == "memory_bound"
    assert v3["agent_facing"]["what_the_run_said"]["evidence_summary"].startswith("long_scoreboard dominates")
    v12 = next(p for p, _ in m.of_type("strategy") if p["provenance"]["version"] == "v12")
    sizes = {s["axes"]["batch_size"] for s in v12["agent_facing"]["measurements"]["per_shape_latency"]}
    assert {1, 7, 14509} <= sizes  # per-shape axis values: a condition can name a shape regime
    v4 = next(p for p, _ in m.of_type("strategy") if p["provenance"]["version"] == "v4")
    assert v4["agent_facing"]["profiler"]["metrics"]["achieved_occupancy_pct"] == 24.6
    for name in TRACES:
        for packet, _ in mined[name].packets.values():
            assert_valid(packet, "packet.schema.json")
        for seg in mined[name].segments:
            assert_valid(seg, "segments.schema.json")


# ---- what the trace yields (the closing note's table) ---------------------------------------------


def yield_table(m: Mined) -> dict:
    out = {}
    for seg_id, (packet, _) in m.packets.items():
        kind = "pitfall" if packet["seg_kind"] == "curated-pitfall" else packet["record_type"]
        row = out.setdefault(kind, {"packets": 0, "records": 0})
        row["packets"] += 1
        row["records"] += seg_id in m.records
    return out


def test_packets_to_records_by_type(mined):
    tables = {name: yield_table(m) for name, m in mined.items()}
    assert tables["fib_rmsnorm"] == {
        "strategy": {"packets": 4, "records": 4},
        "anti-strategy": {"packets": 7, "records": 6},
        "pitfall": {"packets": 1, "records": 1},
        "reference-kernel": {"packets": 2, "records": 2},
    }
    assert tables["aka_attention"]["anti-strategy"] == {"packets": 5, "records": 5}
    assert tables["sgemm_ladder"]["strategy"] == {"packets": 6, "records": 6}


def test_the_lineage_gate_checks_the_parent_against_the_trace_itself(mined):
    """A packet whose parent is not a version of the trace (or whose floor is not that parent's geomean)
    cannot vouch for a strategy, whatever the record says."""
    import copy

    from optrace.gates.trace.model import Packet, trace_context
    from optrace.gates.trace.runner import finish, judge
    from optrace.gates.trace.store_overlap import LiveStore

    m = mined["sgemm_ladder"]
    work = m.results / "work" / m.slug
    trace = trace_context(
        m.slug,
        [json.loads(x) for x in (work / "versions.jsonl").read_text().splitlines()],
        [json.loads(x) for x in (work / "profiles.jsonl").read_text().splitlines() if x.strip()],
    )
    seg_id, record = next((s, r) for s, r in m.records.items() if r["type"] == "strategy")
    packet, code = m.packets[seg_id]

    def lineage(p):
        judged = judge(
            f"distilled/{m.slug}/{record['id']}.json",
            record,
            None,
            Packet(seg_id, p, code, p["agent_facing"].get("code_file")),
            trace,
            None,
        )
        return finish([judged], LiveStore())[0].gates["lineage"]

    assert lineage(packet) == ("PASS", [])
    forged = copy.deepcopy(packet)
    forged["provenance"]["builds_on"]["commit"] = "0" * 40
    status, messages = lineage(forged)
    assert status == "FAIL" and "is not a version of this trace" in messages[0]
    forged = copy.deepcopy(packet)
    forged["agent_facing"]["measurements"]["floor_before_us"] += 1.0
    assert lineage(forged)[0] == "FAIL"


def test_a_failed_levers_goal_is_the_purpose_its_name_states(mined):
    """`__launch_bounds__(512, 2) to keep two blocks resident per SM` was meant to keep two blocks resident;
    a lever that names no purpose states what it was tried against, never one template for every lever."""
    antis = [r for _, r in mined["fib_rmsnorm"].of_type("anti-strategy")]
    (bounds,) = [r for r in antis if r["payload"]["attempted"].startswith("__launch_bounds__(512, 2)")]
    assert bounds["payload"]["goal"] == "Keep two blocks resident per SM."
    goals = [r["payload"]["goal"] for r in antis]
    assert len(set(goals)) == len(goals) and not any(g.startswith("Avoid retrying") for g in goals)


@pytest.mark.parametrize("name", TRACES)
def test_a_change_and_an_approach_carry_no_episode_label(mined, name):
    """A long-horizon step record opens its description with its episode ("episode 3: tensor-core QK^T
    ..."); the record says what changed, without the label that means nothing outside the trace."""
    for r in mined[name].records.values():
        pl = r["payload"]
        for text in (pl.get("change"), pl.get("trace", {}).get("builds_on", {}).get("approach")):
            assert not re.match(r"\s*episode \d+\s*:", text or "", re.I), (r["id"], text)


@pytest.mark.parametrize("name", TRACES)
def test_a_lesson_the_trace_writes_is_the_records_lesson(mined, name):
    antis = {r["payload"]["attempted"]: r for _, r in mined[name].of_type("anti-strategy")}
    for lever, lesson in EXPECTED[name].get("lessons", {}).items():
        assert antis[lever]["payload"]["lesson"] == lesson, lever
