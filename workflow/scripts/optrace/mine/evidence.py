"""A packet's evidence: every statement the trace makes that a record may rest on, numbered.

    evidence_items(agent, seg_kind) -> ([{id, kind, text}], [(id, field)])

Each sentence of the agent-facing prose becomes one item with an id (`e1`, `e2`, ... in packet order)
and a kind that says what it is (KINDS): the step's change, its commit subject and body, the gate
verdict, the step record's evidence summary, expected impact and bottleneck type, a failed lever, its
stated cause and fix, an open direction, a recorded pitfall, a capture's conclusion and symptoms (this
version's, and for a strategy the capture of the version it builds on). The items are built from the
agent-facing layer after it is scrubbed, so they say exactly what the agent reads; the second list maps
each id to the agent-facing field it came from (the packet's provenance adds the trace file and commit).

Measurements are not items: a number is cited by its slot, the path of its leaf in `agent_facing`
(`measurements.geomean_us`, `measurements.per_shape_latency[shape-3].latency_us`,
`profiler.metrics.memory_throughput_pct`, `times_tried`, ...), so a packet with 300 000 shapes does not
repeat its table. A record's claims cite items and slots (optrace.gates.trace.claims checks them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from optrace.facts import LEVER_REASON
from optrace.rows import AgentFacing, EvidenceItem
from optrace.wording import sentences

# kind -> what an item of that kind is (the brief prints this table)
KINDS = {
    "operator": "what the benchmarked operator computes",
    "segment": "what this record is about, as the pipeline states it",
    "correctness": "the outcome of the harness's correctness check of this version, as the pipeline reads it",
    "change": "what this step changed, in the step record's words",
    "subject": "the commit subject, without its grammar",
    "stated-bottleneck": "the bottleneck the commit subject states",
    "body": "a sentence of the commit body",
    "experiment": "what an experiment of this version found, one the run carried on with",
    "gate-verdict": "a sentence of the quality gate's verdict",
    "evidence-summary": "the step record's evidence summary",
    "expected-impact": "what the step record expected the change to do",
    "bottleneck-type": "the bottleneck type the step record names",
    "category": "the step record's category of the change",
    "conclusion": "the conclusion of this version's usable capture",
    "capture-symptom": "a symptom this version's usable capture names",
    "capture-stall": "a top stall reason of this version's usable capture",
    "previous-approach": "what the version this step builds on did",
    "parent-conclusion": "the conclusion of the capture of the version this step builds on",
    "parent-symptom": "a symptom of the capture of the version this step builds on",
    "parent-stall": "a top stall reason of the capture of the version this step builds on",
    "parent-bottleneck-type": "the bottleneck type the version this step builds on names",
    "lever": "the failed lever, as the trace names it",
    "lever-cause": "the reason the trace writes beside the failed lever",
    "cause": "the failed lever's own stated cause (a revert's reason, an experiment's evidence, a pitfall's explanation)",
    "observed": "what the attempt showed (its measurement or error), in the trace's words",
    "fix": "how the run fixed or avoided it",
    "lesson": "the lesson the trace records for it",
    "direction": "an open direction the run recorded",
    "direction-rationale": "the rationale of an open direction",
    "pitfall": "a pitfall recorded in this version",
    "pitfall-fix": "the fix of a pitfall recorded in this version",
}
# the correctness status -> the pipeline's statement of it
CORRECTNESS = {
    "PASS": "this version passed the harness's correctness check against the reference output",
    "FAIL": "this version failed the harness's correctness check against the reference output",
}
_BOTTLENECK_NOTE = re.compile(r"\(\s*bottleneck\s*:\s*(.+?)\)\s*$", re.I | re.S)
_PERF_PREFIX = re.compile(r"^\s*[^|]*\|\s*")  # `15971.7 GFLOPS | 2D blocktiling`: the change after the bar


def subject_parts(subject: str) -> list[tuple[str, str]]:
    """(kind, text) of a commit subject: the stated bottleneck of `... (bottleneck: X)` on its own, the
    change after a `<perf> |` prefix as the subject."""
    out = []
    m = _BOTTLENECK_NOTE.search(subject)
    if m:
        out.append(("stated-bottleneck", m.group(1).strip()))
        subject = subject[: m.start()].rstrip()
    if "|" in subject:
        subject = _PERF_PREFIX.sub("", subject, count=1)
    return [("subject", subject)] + out if subject.strip() else out


def lever_parts(lever: str) -> list[tuple[str, str]]:
    """A failed lever and the reason written beside it in brackets: `split reduction across CTAs (atomic
    contention on the row sum)` is a lever and its stated cause."""
    m = LEVER_REASON.search(lever)
    if not m:
        return [("lever", lever)]
    return [("lever", lever), ("lever-cause", m.group(1).strip())]


def _profiler(parent: bool, profiler: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """A usable capture's items: this version's (`conclusion`, `capture-symptom`, `capture-stall`) or the
    version it builds on (`parent-...`)."""
    if not profiler or not profiler.get("ncu_measured_the_kernel_under_test"):
        return []
    base, conclusion, prefix = (
        ("builds_on.parent_profiler", "parent-conclusion", "parent-")
        if parent
        else ("profiler", "conclusion", "capture-")
    )
    metrics = profiler.get("metrics") or {}
    out = [(conclusion, s, f"{base}.conclusion") for s in sentences(profiler.get("conclusion"))]
    out += [(f"{prefix}symptom", s, f"{base}.metrics.symptoms") for s in metrics.get("symptoms") or []]
    out += [
        (f"{prefix}stall", f"{s} stalls", f"{base}.metrics.stall_reasons") for s in metrics.get("stall_reasons") or {}
    ]
    return out


def _items(agent: AgentFacing, seg_kind: str) -> list[tuple[str, str, str]]:
    """(kind, text, agent-facing field) in packet order."""
    said = agent["what_the_run_said"]
    out: list[tuple[str, str, str]] = []

    def add(kind: str, text: object, field: str, split: bool = True) -> None:
        if isinstance(text, str) and text.strip():
            for s in sentences(text) if split else [" ".join(text.split())]:
                out.append((kind, s, field))

    add("operator", agent["operator"].get("what_it_computes"), "operator.what_it_computes")
    add("segment", agent.get("what_this_record_is"), "what_this_record_is")
    status = (agent["measurements"].get("correctness") or {}).get("status")
    if status in CORRECTNESS:
        add("correctness", CORRECTNESS[status], "measurements.correctness.status", split=False)
    if "the_failed_lever" in agent:
        for kind, text in lever_parts(agent["the_failed_lever"]):
            add(kind, text, "the_failed_lever", split=False)
        add("cause", agent.get("why_it_failed"), "why_it_failed")
        add("observed", agent.get("what_was_observed"), "what_was_observed")
        add("fix", agent.get("how_it_was_fixed"), "how_it_was_fixed")
        add("lesson", agent.get("lesson_recorded"), "lesson_recorded")
    if seg_kind != "curated-pitfall":  # a pitfall's version prose is about the kept change, not the pitfall
        add("change", said.get("change"), "what_the_run_said.change")
        for kind, text in subject_parts(said.get("commit_subject") or ""):
            add(kind, text, "what_the_run_said.commit_subject", split=False)
        add("body", said.get("commit_body"), "what_the_run_said.commit_body")
        for i, finding in enumerate(said.get("experiment_findings") or []):
            add("experiment", finding, f"what_the_run_said.experiment_findings[{i}]")
        add("gate-verdict", said.get("gate_verdict"), "what_the_run_said.gate_verdict")
        add("evidence-summary", said.get("evidence_summary"), "what_the_run_said.evidence_summary")
        add("expected-impact", said.get("expected_impact"), "what_the_run_said.expected_impact")
        add("bottleneck-type", said.get("bottleneck_type"), "what_the_run_said.bottleneck_type", split=False)
        add("category", said.get("category_hint"), "what_the_run_said.category_hint", split=False)
    out += _profiler(False, agent["profiler"])
    base = agent.get("builds_on")
    if base:
        add("previous-approach", base.get("previous_approach"), "builds_on.previous_approach", split=False)
        out += _profiler(True, base.get("parent_profiler"))
        add("parent-bottleneck-type", base.get("parent_bottleneck_type"), "builds_on.parent_bottleneck_type", False)
    for i, d in enumerate(agent["open_directions"]):
        add("direction", d.get("direction"), f"open_directions[{i}].direction", split=False)
        add("direction-rationale", d.get("rationale"), f"open_directions[{i}].rationale")
    for i, p in enumerate(agent["pitfalls_recorded_here"]):
        add("pitfall", p.get("pitfall"), f"pitfalls_recorded_here[{i}].pitfall")
        add("pitfall-fix", p.get("fix"), f"pitfalls_recorded_here[{i}].fix")
    return out


def evidence_items(agent: AgentFacing, seg_kind: str) -> tuple[list[EvidenceItem], list[tuple[str, str]]]:
    items: list[EvidenceItem] = []
    fields: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for kind, text, field in _items(agent, seg_kind):
        if (kind, text) in seen:  # the same sentence twice (a subject repeating the change) is one item
            continue
        seen.add((kind, text))
        item_id = f"e{len(items) + 1}"
        items.append({"id": item_id, "kind": kind, "text": text})
        fields.append((item_id, field))
    return items, fields
