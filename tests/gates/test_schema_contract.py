"""Our clean-1.3 schema accepts and rejects exactly what the store's real contract does.

Both schemas judge all 847 shipped records and a list of named mutations (every block, every enum,
the per-type payload branches, the id and episode_key rules) through jsonschema; a systematic sweep
(delete / retype / extend every node of one record per type) adds breadth through the compiled
validator, which is itself held to jsonschema's verdicts. Needs ../shared/data for the real contract.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from optrace import SCHEMAS
from optrace.contracts import compile_schema
from optrace.gates.store.specimens import anti_strategy, reference_kernel, strategy
from optrace.gates.store.store import load_store
from tests.support.paths import SHARED_DATA

STORE = SHARED_DATA / "upstream-store"
OURS = json.loads((SCHEMAS / "clean-1.3.schema.json").read_text(encoding="utf-8"))

needs_shared = pytest.mark.skipif(not STORE.is_dir(), reason="../shared/data/upstream-store is absent")


def rule_record(kind: str) -> dict:
    record = strategy()
    record.update(type=kind, id=f"nvidia.hopper.triton.fused-softmax-h4096.{kind}-x1")
    record["payload"] = {
        "goal": "Keep the accumulation in fp32.",
        "problem": record["payload"]["problem"],
        "rule": "Accumulate softmax sums in fp32.",
        "rationale": "fp16 sums overflow past 65504.",
    }
    return record


@pytest.fixture(scope="module")
def real_store():
    if not STORE.is_dir():
        pytest.skip("../shared/data/upstream-store is absent")
    return load_store(STORE)


@pytest.fixture(scope="module")
def theirs():
    if not STORE.is_dir():
        pytest.skip("../shared/data/upstream-store is absent")
    return jsonschema.Draft202012Validator(json.loads((STORE / "clean-1.3.schema.json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def ours():
    return jsonschema.Draft202012Validator(OURS)


@pytest.fixture(scope="module")
def bases(real_store):
    """One record per type: real ones where the store has that type, our specimens for the rest."""
    out = {
        "strategy": strategy(),
        "anti-strategy": anti_strategy(),
        "reference-kernel": reference_kernel(),
        "numerics-rule": rule_record("numerics-rule"),
        "dispatch-rule": rule_record("dispatch-rule"),
    }
    for f in real_store.files:
        out.setdefault(f.record["type"], f.record)
    out["real-anti-strategy"] = next(f.record for f in real_store.files if f.record["type"] == "anti-strategy")
    return out


def test_our_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(OURS)


@needs_shared
def test_every_real_record_has_the_same_verdict_under_both_schemas(real_store, theirs, ours):
    assert len(real_store.files) == 847
    fast = compile_schema(OURS)
    for f in real_store.files:
        assert theirs.is_valid(f.record), f.relpath
        assert ours.is_valid(f.record), f.relpath
        assert fast(f.record) == [], f.relpath


# --- named mutations: (base, path, new value or DELETE) ----------------------------------------------

DELETE = object()
DIFF = "unified-diff (verbatim; '-' = before this step, '+' = after)"

MUTATIONS = {
    # top level
    "missing schema": ("strategy", ("schema",), DELETE),
    "missing episode_key": ("doc", ("episode_key",), DELETE),
    "missing worth": ("technique-card", ("worth",), DELETE),
    "extra top-level key": ("strategy", ("notes",), "x"),
    "schema version wrong": ("strategy", ("schema",), "clean-1.2"),
    "id uppercase": ("strategy", ("id",), "Nvidia.hopper.triton.x.y"),
    "id leading dot": ("strategy", ("id",), ".nvidia.hopper.triton.x.y"),
    "id with space": ("doc", ("id",), "amd.cdna3.any.x y.z"),
    "id not a string": ("doc", ("id",), 7),
    "type unknown": ("strategy", ("type",), "recipe"),
    "level unknown": ("strategy", ("level",), "global"),
    "status unknown": ("doc", ("status",), "retired"),
    "episode_key empty": ("strategy", ("episode_key",), ""),
    "episode_key not a string": ("strategy", ("episode_key",), ["a"]),
    # retrieval
    "retrieval extra key": ("strategy", ("retrieval", "extra"), 1),
    "scope missing dsl": ("strategy", ("retrieval", "scope", "dsl"), DELETE),
    "vendor unknown": ("doc", ("retrieval", "scope", "vendor"), "intel"),
    "arch unknown": ("strategy", ("retrieval", "scope", "arch"), "volta"),
    "scope arch any (only generality allows it)": ("strategy", ("retrieval", "scope", "arch"), "any"),
    "dsl unknown": ("strategy", ("retrieval", "scope", "dsl"), "opencl"),
    "product null": ("strategy", ("retrieval", "scope", "product"), None),
    "product number": ("strategy", ("retrieval", "scope", "product"), 100),
    "operator_family number": ("strategy", ("retrieval", "scope", "operator_family"), 3),
    "operators item number": ("strategy", ("retrieval", "scope", "operators"), ["a", 1]),
    "shape_signature nested object": ("strategy", ("retrieval", "scope", "shape_signature"), {"h": {"x": 1}}),
    "shape_signature boolean value": ("strategy", ("retrieval", "scope", "shape_signature"), {"causal": True}),
    "generality arch any": ("strategy", ("retrieval", "generality", "arch"), "any"),
    "generality arch unknown": ("strategy", ("retrieval", "generality", "arch"), "turing"),
    "generality language any": ("strategy", ("retrieval", "generality", "language"), "any"),
    "generality language unknown": ("strategy", ("retrieval", "generality", "language"), "rust"),
    "workload_family unknown": ("strategy", ("retrieval", "generality", "workload_family"), "vision"),
    "bottleneck valid": ("strategy", ("retrieval", "signals", "bottleneck"), "tail-effect"),
    "bottleneck null": ("strategy", ("retrieval", "signals", "bottleneck"), None),
    "bottleneck unknown": ("strategy", ("retrieval", "signals", "bottleneck"), "memory-bound"),
    "metrics list value": ("strategy", ("retrieval", "signals", "metrics"), {"sol": [1]}),
    "metrics null value": ("strategy", ("retrieval", "signals", "metrics"), {"sol": None}),
    "shape_regime extra key": ("strategy", ("retrieval", "signals", "shape_regime", "m"), 4),
    "n_shapes fractional": ("strategy", ("retrieval", "signals", "shape_regime", "n_shapes"), 2.5),
    "n_shapes integral float": ("strategy", ("retrieval", "signals", "shape_regime", "n_shapes"), 2.0),
    "symptoms missing": ("doc", ("retrieval", "signals", "symptoms"), DELETE),
    "technique_tags a string": ("strategy", ("retrieval", "technique_tags"), "tiling"),
    "triggers missing": ("strategy", ("retrieval", "triggers"), DELETE),
    "locator valid": ("strategy", ("retrieval", "locator"), {"kernel_source": None}),
    "locator extra key": ("strategy", ("retrieval", "locator"), {"path": "x"}),
    "links valid": ("strategy", ("retrieval", "links"), {"parent": "a.b.c.d.e", "see_also": ["x"]}),
    "links extra key": ("strategy", ("retrieval", "links"), {"children": []}),
    "links parent number": ("strategy", ("retrieval", "links"), {"parent": 1}),
    # payload: shared parts
    "payload not an object": ("strategy", ("payload",), []),
    "goal empty": ("strategy", ("payload", "goal"), ""),
    "problem missing target": ("strategy", ("payload", "problem", "target"), DELETE),
    "problem statement empty": ("doc", ("payload", "problem", "statement"), ""),
    "problem extra key": ("anti-strategy", ("payload", "problem", "severity"), "high"),
    "problem shape_contract open": ("strategy", ("payload", "problem", "shape_contract"), {"any": {"x": 1}}),
    "builds_on approach empty": ("strategy", ("payload", "trace", "builds_on", "approach"), ""),
    "is_baseline a string": ("strategy", ("payload", "trace", "builds_on", "is_baseline"), "yes"),
    "trace rediscovered float": ("strategy", ("payload", "trace", "rediscovered"), 1.5),
    "implementation format unknown": ("strategy", ("payload", "implementation", "format"), "diff"),
    "implementation source_text allowed by the schema": ("strategy", ("payload", "implementation", "source_text"), "x"),
    "cost edit_scope unknown": ("strategy", ("payload", "cost", "edit_scope"), "refactor"),
    "cost risk unknown": ("strategy", ("payload", "cost", "risk"), "medium"),
    # payload: the type-conditional branches
    "strategy missing next_steps": ("strategy", ("payload", "next_steps"), DELETE),
    "strategy change empty": ("strategy", ("payload", "change"), ""),
    "strategy extra key": ("strategy", ("payload", "lesson"), "x"),
    "strategy config open": ("strategy", ("payload", "config"), {"BLOCK": 128}),
    "anti-strategy verdict unknown": ("anti-strategy", ("payload", "verdict"), "unknown"),
    "anti-strategy missing lesson": ("anti-strategy", ("payload", "lesson"), DELETE),
    "anti-strategy without established_fact": ("anti-strategy", ("payload", "established_fact"), DELETE),
    "mechanism of 39 characters": ("anti-strategy", ("payload", "established_fact", "mechanism"), "x" * 39),
    "mechanism of 40 characters": ("anti-strategy", ("payload", "established_fact", "mechanism"), "x" * 40),
    "condition extra key": ("anti-strategy", ("payload", "established_fact", "condition", "gpu"), "h100"),
    "condition number": ("real-anti-strategy", ("payload", "established_fact", "condition", "dtype"), 16),
    "technique-card missing caveats": ("technique-card", ("payload", "caveats"), DELETE),
    "technique-card kept fractional": ("technique-card", ("payload", "kept"), 0.5),
    "technique-card measured_wins extra key": ("technique-card", ("payload", "measured_wins"), [{"id": "x"}]),
    "symptom-card candidate extra key": ("symptom-card", ("payload", "candidate_techniques"), [{"x": 1}]),
    "symptom-card missing candidates": ("symptom-card", ("payload", "candidate_techniques"), DELETE),
    "doc section extra key": ("doc", ("payload", "sections"), [{"heading": "h", "level": 2}]),
    "doc missing summary": ("doc", ("payload", "summary"), DELETE),
    "reference-kernel missing implementation": ("reference-kernel", ("payload", "implementation"), DELETE),
    "reference-kernel extra key": ("reference-kernel", ("payload", "change"), "x"),
    "numerics-rule rule empty": ("numerics-rule", ("payload", "rule"), ""),
    "dispatch-rule missing rationale": ("dispatch-rule", ("payload", "rationale"), DELETE),
    "strategy payload under type doc": ("strategy", ("type",), "doc"),
    "anti-strategy payload under type technique-card": ("real-anti-strategy", ("type",), "technique-card"),
    "numerics payload under type dispatch-rule": ("numerics-rule", ("type",), "dispatch-rule"),
    # evidence
    "evidence missing raw": ("strategy", ("evidence", "raw"), DELETE),
    "evidence extra key": ("doc", ("evidence", "notes"), "x"),
    "confidence unknown": ("doc", ("evidence", "summary", "confidence"), "guessed"),
    "summary extra key": ("strategy", ("evidence", "summary", "effect"), {}),
    "bottleneck_evidence basis unknown": ("strategy", ("evidence", "summary", "bottleneck_evidence", "basis"), "ncu"),
    "bottleneck_evidence open": ("strategy", ("evidence", "summary", "bottleneck_evidence", "extra"), [1]),
    "mechanism_metrics delta without unit": (
        "strategy",
        ("evidence", "summary", "mechanism_metrics"),
        {"spill": {"before": 1}},
    ),
    "occupancy_limiter null": ("strategy", ("evidence", "summary", "mechanism_metrics"), {"occupancy_limiter": None}),
    "occupancy_limiter unknown": (
        "strategy",
        ("evidence", "summary", "mechanism_metrics"),
        {"occupancy_limiter": "lds"},
    ),
    "measured_on number": ("strategy", ("evidence", "summary", "measured_on", "track"), 1),
    "raw open": ("doc", ("evidence", "raw", "anything"), {"x": 1}),
    "raw hunk_index string": ("strategy", ("evidence", "raw", "hunk_index"), "0"),
    "raw version null": ("strategy", ("evidence", "raw", "version"), None),
    "effect missing basis": ("strategy", ("evidence", "raw", "effect", "basis"), DELETE),
    "effect basis unknown": ("strategy", ("evidence", "raw", "effect", "basis"), "reported"),
    "effect comparable string": ("strategy", ("evidence", "raw", "effect", "comparable"), "yes"),
    # worth
    "score above 1": ("strategy", ("worth", "rank", "score"), 1.5),
    "score below 0": ("doc", ("worth", "rank", "score"), -0.1),
    "score boolean": ("doc", ("worth", "rank", "score"), True),
    "tier unknown": ("strategy", ("worth", "rank", "tier"), "gold"),
    "rank extra key": ("strategy", ("worth", "rank", "votes"), 3),
    "components string value": ("doc", ("worth", "rank", "components", "prior"), "0.4"),
    "computed_at null": ("doc", ("worth", "rank", "computed_at"), None),
    "gain basis unknown": ("strategy", ("worth", "gain", "basis"), "guessed"),
    "gain kind unknown": ("doc", ("worth", "gain", "kind"), "speed"),
    "gain primary unknown": ("strategy", ("worth", "gain", "primary"), "throughput"),
    "gain pct string": ("strategy", ("worth", "gain", "pct"), "22"),
    "gain metric missing source": ("strategy", ("worth", "gain", "metrics", 0, "source"), DELETE),
    "gain metric direction unknown": ("strategy", ("worth", "gain", "metrics", 0, "direction"), "up"),
    "gain metric source unknown": ("strategy", ("worth", "gain", "metrics", 0, "source"), "blog"),
    "gain correctness extra key": ("strategy", ("worth", "gain", "correctness"), {"passed": True}),
    "counters negative": ("strategy", ("worth", "track", "counters", "served_count"), -1),
    "counters missing one": ("doc", ("worth", "track", "counters", "fallback_served"), DELETE),
    "prior ratio above 1": ("strategy", ("worth", "track", "prior", "corpus_kept_ratio"), 1.5),
    "prior extra key": ("doc", ("worth", "track", "prior", "note"), "x"),
    "confirm_keys number": ("strategy", ("worth", "track", "confirm_keys"), [1]),
    "worth extra key": ("strategy", ("worth", "feedback"), {}),
}


def mutate(record: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(record)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def test_mutations_cover_every_type_and_block():
    covered_bases = {base for base, _, _ in MUTATIONS.values()}
    assert {
        "strategy",
        "anti-strategy",
        "technique-card",
        "symptom-card",
        "reference-kernel",
        "doc",
        "numerics-rule",
        "dispatch-rule",
    } <= covered_bases
    assert {path[0] for _, path, _ in MUTATIONS.values()} >= {
        "schema",
        "id",
        "type",
        "level",
        "status",
        "episode_key",
        "retrieval",
        "payload",
        "evidence",
        "worth",
    }
    assert len(MUTATIONS) >= 30


@needs_shared
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_has_the_same_verdict_under_both_schemas(name, bases, theirs, ours):
    base, path, value = MUTATIONS[name]
    record = mutate(bases[base], path, value)
    verdict = theirs.is_valid(record)
    assert ours.is_valid(record) == verdict
    assert (compile_schema(OURS)(record) == []) == verdict


# --- systematic sweep ----------------------------------------------------------------------------

EXEMPLARS = (None, True, 0, 1.5, "", "x", [], {}, [1], {"zz": 1})


def node_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from node_paths(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from node_paths(item, path + (i,))


def sweep(record: dict):
    """Every node deleted, replaced by each JSON type, and (objects) given an unknown key."""
    for path in node_paths(record):
        if not path:
            continue
        if isinstance(path[-1], str):
            yield mutate(record, path, DELETE)
        for value in EXEMPLARS:
            yield mutate(record, path, value)
        node = record
        for key in path:
            node = node[key]
        if isinstance(node, dict):
            yield mutate(record, path + ("zz_unknown",), 1)


@needs_shared
def test_sweep_has_the_same_verdict_under_both_schemas(bases, theirs):
    mine, real = compile_schema(OURS), compile_schema(theirs.schema)
    n = 0
    for name, record in bases.items():
        for i, variant in enumerate(sweep(record)):
            assert mine.is_valid(variant) == real.is_valid(variant), (name, i)
            if i % 25 == 0:  # tie the verdicts to the messages and to jsonschema's own, on a sample
                assert (mine(variant) == []) == mine.is_valid(variant), (name, i)
                assert (real(variant) == []) == theirs.is_valid(variant), (name, i)
            n += 1
    assert n > 3000


def test_compiled_validator_agrees_with_jsonschema_on_our_schema(ours):
    """Without ../shared: the fast path equals jsonschema on the sweep of our specimens (every 4th
    variant, to keep the suite fast; the offset rotates per record so every kind of change is hit)."""
    fast = compile_schema(OURS)
    records = (strategy(), anti_strategy(), reference_kernel(), rule_record("numerics-rule"))
    for offset, record in enumerate(records):
        for i, variant in enumerate(sweep(record)):
            if i % 4 == offset:
                assert (fast(variant) == []) == ours.is_valid(variant), i
