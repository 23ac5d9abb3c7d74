"""Injection cases of #25's rules: every claim cites its own packet's evidence and says what it says
(gates.trace.claims), the structured facts are the pipeline's (gates.trace.structured), and the code
quoted is what the field says it is (gates.trace.verbatim). Each edits the claim's citations in step
with its text, as an agent would, so only the rule it plants against can fail.
"""

from __future__ import annotations

import re

from optrace.facts import SYMPTOM_PHRASES, stated_symptoms
from optrace.gates.store.model import obj
from optrace.gates.trace.planting import (
    Planted,
    TraceInjection,
    any_record,
    claims_of,
    edit,
    is_anti,
    is_strategy,
    items_of,
    measured_gain,
    restate,
)
from optrace.gates.trace.verbatim import carries_code
from optrace.kernelcode import Span, kernel_functions


def _with_next_steps(p: Planted) -> bool:
    return is_strategy(p) and bool(obj(p.record, "payload").get("next_steps")) and bool(items_of(p, "change"))


def _next_step_cites_the_change(p: Planted) -> None:
    entries = claims_of(p.record)["fields"]["payload.next_steps[0]"]
    entries[0]["cites"] = items_of(p, "change")[:1]


def _entitled_metrics(p: Planted) -> bool:
    return measured_gain(p) and bool(obj(p.record, "retrieval", "signals", "metrics"))


def _metric_is_the_gain(record: dict) -> None:
    record["retrieval"]["signals"]["metrics"]["memory_throughput_pct"] = record["worth"]["gain"]["pct"]


def _other_risk(record: dict) -> None:
    cost = record["payload"]["cost"]
    cost["risk"] = {"low": "med", "med": "low", "high": "low"}[cost["risk"]]


def _with_mechanism(p: Planted) -> bool:
    return is_strategy(p) and bool(obj(p.record, "payload").get("mechanism"))


def _negated(text: str) -> str:
    return re.sub(r"\b(is|are|was|were|can|does|do|has|have)\b(?! not\b)", r"\1 not", text, count=1)


def _with_negatable_mechanism(p: Planted) -> bool:
    return _with_mechanism(p) and _negated(p.record["payload"]["mechanism"]) != p.record["payload"]["mechanism"]


def _flipped(text: str) -> str:
    for a, b in (("fewer", "more"), ("less", "more"), ("one", "two"), ("halves", "doubles"), ("lower", "higher")):
        if re.search(rf"\b{a}\b", text):
            return re.sub(rf"\b{a}\b", b, text, count=1)
    return text


def _with_direction(p: Planted) -> bool:
    mechanism = obj(p.record, "payload").get("mechanism", "")
    return is_strategy(p) and isinstance(mechanism, str) and _flipped(mechanism) != mechanism


def _geomean_slot(p: Planted) -> bool:
    m = obj(p.evidence.packet.agent_facing, "measurements")
    return measured_gain(p) and isinstance(m.get("floor_before_us"), (int, float))


def _floor_as_new(p: Planted) -> None:
    floor = obj(p.evidence.packet.agent_facing, "measurements")["floor_before_us"]
    restate("payload.goal", lambda t: f"{t} The kernel now runs at {floor!r} us.")(p)
    claims_of(p.record)["fields"]["payload.goal"][0].update(
        cites=["measurements.floor_before_us"] + claims_of(p.record)["fields"]["payload.goal"][0]["cites"],
        slots={repr(floor): "measurements.floor_before_us"},
    )


def _lever_of_same_version(p: Planted) -> bool:
    return is_anti(p) and _shared_other(p) is not None


def _shared_other(p: Planted) -> str | None:
    """The cause the record of another lever of the same version states (its prose is this one's too)."""
    version = p.evidence.packet.provenance.get("version")
    for k, (rel, rec) in enumerate(p.records):
        other = p.bench.packet_at(rel)
        if k == p.i or rec.get("type") != "anti-strategy" or other is None or other.seg_id.startswith("pitfall-"):
            continue
        mechanism = obj(rec, "payload", "established_fact").get("mechanism")
        if other.provenance.get("version") == version and mechanism != obj(p.record, "payload", "established_fact").get(
            "mechanism"
        ):
            return mechanism
    return None


def _pin_on_another_lever(p: Planted) -> None:
    cause = _shared_other(p) or ""
    restate(
        "payload.root_cause", lambda t: cause, lambda q: [i["id"] for i in q.evidence.packet.agent_facing["evidence"]]
    )(p)


def _diff_mostly_removed(p: Planted) -> bool:
    code = p.evidence.packet.code or ""
    removed = [ln for ln in code.splitlines() if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()]
    return is_strategy(p) and (p.evidence.packet.code_file or "").endswith(".diff") and len(removed) >= 3


def _removed_with_one_added(p: Planted) -> None:
    lines = (p.evidence.packet.code or "").splitlines()
    removed = [ln for ln in lines if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()]
    added = [ln for ln in lines if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip()]
    p.record["payload"]["implementation"]["snippet"] = "\n".join(removed[:6] + [min(added, key=len)])


def _kernel_source(p: Planted) -> bool:
    impl = obj(p.record, "payload", "implementation")
    return p.record.get("type") == "reference-kernel" and bool(impl.get("core_kernel_name"))


def _spans(p: Planted) -> list[Span]:
    return kernel_functions((p.evidence.packet.code or "").splitlines())


def _without_core_body(p: Planted) -> None:
    impl = p.record["payload"]["implementation"]
    core = next(s for s in _spans(p) if s.name == impl["core_kernel_name"])
    lines = (p.evidence.packet.code or "").splitlines()
    impl["snippet"] = "\n".join(ln for j, ln in enumerate(lines) if not core.start < j < core.end)


def _helper_as_core(p: Planted) -> None:
    kernels = {s.name for s in _spans(p)}
    helper = next(n for n in re.findall(r"(?m)^def (\w+)\(", p.evidence.packet.code or "") if n not in kernels)
    p.record["payload"]["implementation"]["core_kernel_name"] = helper


def _with_host_helper(p: Planted) -> bool:
    kernels = {s.name for s in _spans(p)}
    return _kernel_source(p) and any(
        n not in kernels for n in re.findall(r"(?m)^def (\w+)\(", p.evidence.packet.code or "")
    )


def _body_as_dispatch(p: Planted) -> None:
    span = _spans(p)[0]
    lines = (p.evidence.packet.code or "").splitlines()
    p.record["payload"]["implementation"]["dispatch_snippet"] = "\n".join(lines[span.start + 1 : span.end][:6])


def _cause_item(p: Planted) -> dict | None:
    items = p.evidence.packet.agent_facing.get("evidence") or []
    return next((i for i in items if i.get("kind") == "cause" and isinstance(i.get("text"), str)), None)


def _retry_on_its_cause(p: Planted) -> None:
    item = _cause_item(p)
    assert item is not None  # applies only where the packet states a cause
    p.record["payload"]["would_retry_if"] = item["text"]
    claims_of(p.record)["fields"]["payload.would_retry_if"] = [{"says": item["text"], "cites": [item["id"]]}]


def _brace_lines(p: Planted) -> list[str]:
    """The diff's added lines that implement nothing (a brace, a bracket or a comment alone)."""
    code = p.evidence.packet.code or ""
    return [
        ln
        for ln in code.splitlines()
        if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip() and not carries_code(ln[1:])
    ]


def _snippet_of_braces(p: Planted) -> None:
    p.record["payload"]["implementation"]["snippet"] = _brace_lines(p)[0]


def _pitfall_with_symptoms(p: Planted) -> bool:
    return p.evidence.packet.data.get("seg_kind") == "curated-pitfall" and bool(
        obj(p.record, "retrieval", "signals").get("symptoms")
    )


def unstated_symptom(agent_facing: dict) -> str:
    """A symptom of the vocabulary (optrace.facts) no statement of the packet names, nor its first word."""
    said = " ".join(str(i.get("text")) for i in agent_facing.get("evidence") or [])
    stated = {t for t, _ in stated_symptoms(said)}
    return next(t for t, _ in SYMPTOM_PHRASES if t not in stated and t.split("-")[0] not in said.lower())


def _symptom_not_stated(p: Planted) -> None:
    """A symptom (and its trigger) the pitfall never states, citing what its stated symptom cites."""
    retrieval, fields = p.record["retrieval"], claims_of(p.record)["fields"]
    tag, cites = unstated_symptom(p.evidence.packet.agent_facing), fields["retrieval.signals.symptoms[0]"][0]["cites"]
    trigger = f"{tag} {retrieval['scope']['operator_family']} kernel"
    for path, values, says in (
        ("retrieval.signals.symptoms", retrieval["signals"]["symptoms"], tag),
        ("retrieval.triggers", retrieval["triggers"], trigger),
    ):
        fields[f"{path}[{len(values)}]"] = [{"says": says, "cites": list(cites)}]
        values.append(says)


CLAIM_INJECTIONS = (
    TraceInjection(
        "claims",
        "citations of another packet",
        any_record,
        lambda p: claims_of(p.record).update(
            packet=next(q.seg_id for q in p.bench.packets.values() if q.seg_id != p.evidence.packet.seg_id)
        ),
    ),
    TraceInjection(
        "claims", "a next step resting on the step's own change", _with_next_steps, _next_step_cites_the_change
    ),
    TraceInjection(
        "claims",
        "a word the cited evidence lacks",
        any_record,
        restate("payload.goal", lambda t: f"{t} with TMA multicast"),
    ),
    TraceInjection(
        "claims",
        "slower where the packet measured faster",
        measured_gain,
        restate("payload.goal", lambda t: f"{t} The kernel is slower than before."),
    ),
    TraceInjection(
        "claims", "a scope word the evidence lacks", any_record, restate("payload.goal", lambda t: f"{t} in general")
    ),
    TraceInjection(
        "claims", "a field without its claim", any_record, lambda p: claims_of(p.record)["fields"].pop("payload.goal")
    ),
    TraceInjection(
        "structured-facts",
        "verdict not the one the packet gives",
        is_anti,
        edit(lambda r: r["payload"].update(verdict="performance-ceiling")),
    ),
    TraceInjection(
        "structured-facts",
        "confidence not the packet's",
        any_record,
        edit(lambda r: r["evidence"]["summary"].update(confidence="documented")),
    ),
    TraceInjection(
        "structured-facts", "a capture metric holding the gain", _entitled_metrics, edit(_metric_is_the_gain)
    ),
    TraceInjection("structured-facts", "risk not what the diff gives", measured_gain, edit(_other_risk)),
    TraceInjection(
        "claims",
        "a negation the cited sentence lacks",
        _with_negatable_mechanism,
        restate("payload.mechanism", _negated),
    ),
    TraceInjection(
        "claims",
        "a direction the cited sentence runs the other way",
        _with_direction,
        restate("payload.mechanism", _flipped),
    ),
    TraceInjection(
        "claims", "a kept step called reverted", is_strategy, restate("payload.goal", lambda t: f"{t} It was reverted.")
    ),
    TraceInjection("claims", "the floor written as the new geomean", _geomean_slot, _floor_as_new),
    TraceInjection(
        "claims",
        "failed where the check passed",
        is_strategy,
        restate("payload.goal", lambda t: f"{t} It failed the correctness check."),
    ),
    TraceInjection(
        "claims", "the cause of another lever of the same version", _lever_of_same_version, _pin_on_another_lever
    ),
    TraceInjection(
        "verbatim",
        "a diff snippet of removed lines and one added line",
        _diff_mostly_removed,
        _removed_with_one_added,
    ),
    TraceInjection(
        "verbatim",
        "a reference kernel without its core kernel's body",
        _kernel_source,
        _without_core_body,
    ),
    TraceInjection("verbatim", "core_kernel_name a host helper", _with_host_helper, _helper_as_core),
    TraceInjection("verbatim", "a dispatch snippet of the kernel's body", _kernel_source, _body_as_dispatch),
    TraceInjection(
        "claims",
        "a negation in look-alike letters",
        any_record,
        restate("payload.goal", lambda t: f"{t} It is \u0578\u043et faster."),
    ),
    TraceInjection(
        "claims",
        "a negation a clause break cuts off its predicate",
        measured_gain,
        restate("payload.goal", lambda t: f"{t} The kernel is not, in this run, faster than the floor."),
    ),
    TraceInjection(
        "claims",
        "a retry condition restating the cause that rules the lever out",
        lambda p: is_anti(p) and _cause_item(p) is not None,
        _retry_on_its_cause,
    ),
    TraceInjection(
        "verbatim",
        "a diff snippet of lines that implement nothing",
        lambda p: is_strategy(p) and (p.evidence.packet.code_file or "").endswith(".diff") and bool(_brace_lines(p)),
        _snippet_of_braces,
    ),
    TraceInjection("claims", "a symptom the pitfall does not state", _pitfall_with_symptoms, _symptom_not_stated),
    TraceInjection(
        "structured-facts",
        "times tried inflated",
        lambda p: is_strategy(p) and "trace" in obj(p.record, "payload"),
        edit(lambda r: r["payload"]["trace"].update(rediscovered=5)),
    ),
)
