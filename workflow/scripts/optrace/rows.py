"""Typed rows at the stage boundaries: a line of versions.jsonl, a line of segments.jsonl, a packet.

TypedDicts, so the files stay exactly what the stages write today (plain JSON objects) while mypy
checks every key a stage reads or writes. Keys and their required/optional split are those of
`schemas/{versions,segments,packet}.schema.json`; tests/test_rows.py proves each TypedDict (and each
nested one) has exactly its schema object's properties, so the two cannot drift. Where the schema
leaves an object open (`"type": "object"` without properties) the type is `dict`, or the TypedDict of
what the stage writes there.
"""

from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from optrace.errors import InputError
from optrace.jsonio import read_jsonl

RecordType = Literal["strategy", "anti-strategy", "reference-kernel"]
Verdict = Literal["baseline", "kept", "reverted", "none"]
Precheck = Literal["ok", "flag"]


# --- versions.jsonl -------------------------------------------------------------------------------


class Correctness(TypedDict):
    status: str | None
    max_abs_err: float | None
    max_rel_err: float | None


class QualityGate(TypedDict):
    result: str | None
    failure_reason: str | None


class PitfallRow(TypedDict):
    text: str
    fix: str | None
    cause: str | None
    lesson: str | None


class SubjectFieldsRow(TypedDict):
    """A subject line field by field (`ingest.grammar.subject_fields`)."""

    perf: list[list]  # [value, unit] pairs
    claimed_pct: float | None
    latency_us: list[float] | None  # a latency arrow's before and after
    change: str | None
    bottleneck: str | None
    note: str | None


class OpenDirection(TypedDict):
    direction: str
    rationale: str | None


class Experiment(TypedDict):
    name: str | None
    hypothesis: str | None
    change: str | None
    evidence: str | None
    result: str | None
    decision: str | None


class VersionRow(TypedDict):
    """One version of a trace (ingest writes it; recon, partition, packets, staging and dataset read it)."""

    version: str
    n: int
    sha: str | None
    parent: str | None
    date: str | None
    subject: str | None
    subject_fields: SubjectFieldsRow
    body: str | None
    verdict: Verdict
    verdict_basis: str
    outcome: str | None
    kernel_changed: bool
    kernel_blob: str | None
    dsl: str  # cuda, triton, gluon, ...: detect_dsl and the metadata return plain strings
    geomean_us: float | None
    number_note: str | None
    by_shape_us: dict[str, float]
    correctness: Correctness
    quality_gate: QualityGate
    carried_from: str | None
    no_change: bool
    infrastructure: bool
    deadend_items: list[str]
    pitfalls: list[PitfallRow]
    open_directions: list[OpenDirection]
    action_category: str | None
    action_description: str | None
    speedup_vs_ref: float | None
    evidence_summary: str | None
    bottleneck_type: str | None
    expected_impact: str | None
    experiments: list[Experiment]
    harness_files: list[str]
    reverts: str | None
    reverted_by: str | None
    profile_dirs: list[str]
    usable_profile_dirs: list[str]


# --- segments.jsonl -------------------------------------------------------------------------------


class Scope(TypedDict):
    vendor: str
    arch: str
    product: str
    dsl: str
    operator_family: str


class BuildsOn(TypedDict):
    version: str
    sha: str | None
    kernel_blob: str | None
    geomean_us: float | None
    is_baseline: bool


class DiffBase(TypedDict):
    version: str
    sha: str | None
    kernel_blob: str | None


class StrategyPart(TypedDict):
    improve_pct: float
    geomean_us: float
    floor_before_us: float
    final: bool
    builds_on: BuildsOn | None
    review: str | None
    diff_base: DiffBase


class Occurrence(TypedDict):
    version: str
    sha: str | None


class FactPrecheck(TypedDict):
    verdict: Precheck
    reason: str


class Measured(TypedDict):
    floor_before_us: float
    improve_pct: float


SplitBy = Literal["mechanical", "agent", "curated", "revert-pair", "experiment"]


class Lever(TypedDict):
    text: str
    split_by: SplitBy
    fix: str | None
    cause: str | None
    observed: str | None
    lesson: str | None
    occurrences: list[Occurrence]
    fact_precheck: FactPrecheck
    measured: Measured | None


class SegmentRow(TypedDict):
    """What one record can be distilled from (partition writes it; packets reads it)."""

    seg_id: str
    record_type: RecordType
    seg_kind: str
    id: str
    episode_key: str
    technique: str
    version: str
    n: int
    sha: str | None
    kernel_blob: str | None
    scope: Scope
    workload_family: str
    strategy: NotRequired[StrategyPart]
    lever: NotRequired[Lever]


REPEAT_MARK = "#"  # `<technique>#<n>`: the n-th segment of one trace whose episode has that technique


def without_repeat(technique: str) -> str:
    """An episode key's technique part without its repeat mark (partition's `#2`, the shipped store's `#section`)."""
    return technique.split(REPEAT_MARK, 1)[0]


def episode_technique(episode_key: str) -> str | None:
    """The technique of `<arch>|<dsl>|<family>|<technique>[#<n>]|<level>`; None when the key is not of that form."""
    parts = episode_key.split("|")
    return (without_repeat(parts[3]) or None) if len(parts) == 5 else None


# --- packets/<slug>/<seg_id>.json -----------------------------------------------------------------


class Target(TypedDict):
    id: str
    episode_key: str
    scope: Scope  # the schema leaves it open: it is the segment's scope
    workload_family: str
    level: Literal["operator"]
    schema: Literal["clean-1.3"]
    output: str


class OperatorFacts(TypedDict):
    what_it_computes: str | None
    fixed_axes: dict[str, Any]
    variable_axes: list[Any]
    n_benchmarked_shapes: int
    dsl: str
    gpu: str
    harness: str
    isa: str | None


class WhatTheRunSaid(TypedDict):
    change: str | None
    commit_subject: str | None
    commit_body: str | None
    category_hint: str | None
    gate_verdict: str | None
    evidence_summary: str | None
    bottleneck_type: str | None
    expected_impact: str | None
    experiment_findings: list[str]  # what the version's experiments the run carried on with found


class ShapeLatency(TypedDict):
    shape: str
    latency_us: float
    axes: NotRequired[dict[str, float]]


class Measurements(TypedDict):
    geomean_us: float | None
    improve_pct_vs_floor: float | None
    floor_before_us: float | None
    per_shape_latency: list[ShapeLatency]
    shapes_measured: int
    correctness: Correctness  # the schema leaves it open: it is the version's


class ProfilerMetrics(TypedDict, total=False):
    duration_us: float
    sm_throughput_pct: float
    memory_throughput_pct: float
    l2_hit_rate_pct: float
    achieved_occupancy_pct: float
    registers_per_thread: float
    stall_reasons: dict[str, float]
    symptoms: list[str]


class Profiler(TypedDict):
    ncu_measured_the_kernel_under_test: bool
    kernel: str | None
    conclusion: str | None
    metrics: ProfilerMetrics


class PacketBuildsOn(TypedDict):
    was_the_untouched_baseline: bool
    previous_approach: str | None
    parent_profiler: Profiler | None  # the schema leaves it open: it is what `profiler` is
    parent_bottleneck_type: str | None


class EstablishedFactRequired(TypedDict):
    rule: str
    precheck: Precheck
    precheck_note: str


class EvidenceItem(TypedDict):
    id: str
    kind: str
    text: str


class AgentFacing(TypedDict):
    evidence: list[EvidenceItem]
    what_this_record_is: str
    operator: OperatorFacts
    what_the_run_said: WhatTheRunSaid
    measurements: Measurements
    profiler: Profiler
    open_directions: list[Any]
    pitfalls_recorded_here: list[Any]
    builds_on: NotRequired[PacketBuildsOn]
    the_failed_lever: NotRequired[str]
    why_it_failed: NotRequired[str | None]
    what_was_observed: NotRequired[str | None]
    how_it_was_fixed: NotRequired[str | None]
    times_tried: NotRequired[int]
    lesson_recorded: NotRequired[str | None]
    established_fact_required: NotRequired[EstablishedFactRequired]
    code_file: NotRequired[str]


class ProvenanceBuildsOn(TypedDict):
    version: str
    commit: str | None
    geomean_us: float | None
    capture_dirs: list[str]


class ProvenanceDiffBase(TypedDict):
    version: str
    commit: str | None


class EvidenceSource(TypedDict):
    id: str
    field: str
    source: str


class Provenance(TypedDict):
    source_label: str
    version: str
    commit: str | None
    occurrences: list[Any]
    capture_dirs: list[str]
    report: str | None
    evidence: list[EvidenceSource]
    builds_on: NotRequired[ProvenanceBuildsOn]
    diff_base: NotRequired[ProvenanceDiffBase]


class PacketRow(TypedDict):
    """Everything the distilling agent may see for one segment (packets writes it; distill, the trace
    gates and staging read it)."""

    seg_id: str
    record_type: RecordType
    seg_kind: str
    target: Target
    agent_facing: AgentFacing
    provenance: Provenance


# --- typed readers: the one place a file's rows get their type ---------------------------------------


def read_versions(path: Path) -> list[VersionRow]:
    rows: list[VersionRow] = read_jsonl(path)
    return rows


def read_segments(path: Path) -> list[SegmentRow]:
    rows: list[SegmentRow] = read_jsonl(path)
    return rows


def manifest_packets(path: Path, manifest: Any) -> list[dict]:
    """The packet entries of a packets manifest (an id and a seg_id each), or an InputError naming it."""
    entries = manifest.get("packets") if isinstance(manifest, dict) else None
    if not isinstance(entries, list):
        raise InputError(path, "has no packets list")
    return [
        e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("seg_id"), str)
    ]
