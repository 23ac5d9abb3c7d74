"""The parts every drafted record shares: retrieval (scope, signals, tags, triggers), the problem, the
evidence section and the measured effect. Each string they serve goes through `Claims` with what it
cites; the structured facts (signals.metrics, the bottleneck label, confidence) are optrace.pipeline_facts'.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from optrace.distill.claims import Claims, Said, Sources, each, said, servable
from optrace.facts import stated_symptoms
from optrace.pipeline_facts import bottleneck_label, capture_for_signals, confidence, signal_metrics
from optrace.rows import episode_technique
from optrace.wording import sentences

SCOPE_KEYS = ("vendor", "arch", "product", "dsl", "operator_family")
# Categories that name the run's process, not a technique: never a tag.
PROCESS_CATEGORIES = {"baseline", "exhaustive_search", "long_horizon_episode", "fast_long_horizon_episode"}
# the segment kinds whose version prose is about this record's change alone (its category is its own)
OWN_CHANGE_KINDS = ("milestone", "mega", "deadend-prose", "final-kernel", "mega-snapshot")
# a sentence that says what a step meant to do (`to keep two blocks resident`, `so that the sum ...`)
INTENT = re.compile(
    r"\b(?:in order to|so as to|so that|aims? to|meant to|intended to|expected to|should|the (?:idea|aim|goal) is)\b",
    re.I,
)
# a purpose clause inside a lever's name: `__launch_bounds__(512, 2) to keep two blocks resident per SM`
# (not `failed to compile`, `up to 224`: what happened or a bound)
PURPOSE = re.compile(
    r"(?<!\bfailed)(?<!\bfails)(?<!\bunable)(?<!\bup)(?<!\bclose)\s(?:in order to|so as to|to)\s+(?!(?:the|a|an|be)\b)(?=[a-z])",
    re.I,
)
_NOT_A_SYMPTOM = re.compile(r"^(?:episode[-_ ]derived|not[-_ ]profiled\w*|unknown|none|n/?a)$", re.I)
_WORD = re.compile(r"[a-z0-9_]+")


def tag(text: str) -> str:
    return "-".join(_WORD.findall(text.lower().replace("_", " ")))


def lever_key(text: str) -> str:
    return " ".join(_WORD.findall((text or "").lower()))


def operator_name(packet: dict) -> str:
    return packet["target"]["scope"]["operator_family"]


def technique(packet: dict) -> str:
    """The technique part of the episode key, as a tag; a trace's repeat mark `#<n>` and a reference
    kernel's snapshot kind (`final_`, `snapshot_`) are no technique."""
    name = tag(episode_technique(packet["target"]["episode_key"]) or "")
    if packet.get("record_type") == "reference-kernel":
        name = re.sub(r"^(?:final|snapshot)-", "", name)
    return name


def measured(packet: dict) -> bool:
    return packet["agent_facing"]["measurements"].get("geomean_us") is not None


def segment_item(src: Sources) -> list[dict]:
    return src.of("segment")[:1]


def problem(packet: dict, src: Sources, claims: Claims) -> dict:
    """What the record is about. The bottleneck: the conclusion of the capture the record is entitled to
    (a strategy's parent's), else the bottleneck its commit subject states, else (a strategy) the
    bottleneck type its parent's step record states or the first symptom of its parent's capture: the
    problem the step fixed, never its own after-state. Null only when the trace states none."""
    op = packet["agent_facing"]["operator"]
    statement = said(src.of("operator")) or said(segment_item(src))
    assert statement is not None  # every packet states what its record is about
    out = {
        "statement": claims.put("payload.problem.statement", [statement]),
        "target": op["gpu"],
        "operator": operator_name(packet),
        "bottleneck": None,
        "dsl": op["dsl"],
    }
    kind = "parent-conclusion" if packet["record_type"] == "strategy" else "conclusion"
    kinds = (kind, "stated-bottleneck", "parent-bottleneck-type", "parent-symptom")
    found = src.first(*kinds if packet["record_type"] == "strategy" else (kind,))[:1]
    if found:
        out["bottleneck"] = claims.put("payload.problem.bottleneck", each(found))
    return out


def bottleneck_evidence(packet: dict, src: Sources, claims: Claims) -> dict:
    if capture_for_signals(packet) is None:
        return {"basis": "bench-only", "tool": None}
    kind = "parent-conclusion" if packet["record_type"] == "strategy" else "conclusion"
    found = [i for i in src.of(kind) if servable(i["text"])]
    out: dict[str, Any] = {"basis": "profiler", "tool": "ncu"}
    if found:
        out["note"] = claims.put("evidence.summary.bottleneck_evidence.note", [said(found)])  # type: ignore[list-item]
    return out


def symptom_claims(packet: dict, src: Sources) -> list[Said]:
    """Symptom tags: the bottleneck type the step record states, and the symptoms and top stalls of the
    capture the record is entitled to (a strategy's parent's: the problem it fixed). A pitfall's are the
    failures its own name and explanation state (facts.stated_symptoms), never its version's."""
    if packet["seg_kind"] == "curated-pitfall":
        found = [(t, i) for i in src.of("lever") + src.of("cause") for t, _ in stated_symptoms(i["text"])]
    else:
        prefix = "parent-" if packet["record_type"] == "strategy" else "capture-"
        items = src.of("bottleneck-type") + src.of(f"{prefix}symptom") + src.of(f"{prefix}stall")
        found = [(tag(i["text"]), i) for i in items if not _NOT_A_SYMPTOM.match(i["text"])]
    out: dict[str, Said] = {}
    for t, i in found:
        if t and t not in out:
            out[t] = Said(t, (i["id"],))
    return list(out.values())


def technique_claims(packet: dict, src: Sources) -> list[Said]:
    """The technique (what the lever or change is named), and the step record's category when the version's
    prose is this record's alone (an experiment or a listed item is not its episode's category)."""
    named = (src.of("lever") + src.of("lever-cause") + src.of("cause")) or src.of("change") or src.of("subject")
    named = named or src.of("category")
    out = [Said(technique(packet), tuple(i["id"] for i in named))] if technique(packet) and named else []
    category = src.of("category")
    if packet["seg_kind"] in OWN_CHANGE_KINDS and category:
        text = category[0]["text"]
        if text.lower() not in PROCESS_CATEGORIES and tag(text) and all(tag(text) != s.says for s in out):
            out.append(Said(tag(text), (category[0]["id"],)))
    return out


def retrieval(packet: dict, src: Sources, claims: Claims) -> dict:
    target, op = packet["target"], packet["agent_facing"]["operator"]
    scope = {k: target["scope"][k] for k in SCOPE_KEYS}  # the contract's order (the packet's is sorted)
    constants = {k: v for k, v in op["fixed_axes"].items() if isinstance(v, (str, int, float, bool))}
    if constants:
        scope["shape_signature"] = constants  # semantic constants; size axes go to shape_regime
    symptoms = symptom_claims(packet, src)
    where = segment_item(src)
    triggers = [
        Said(f"{s.says} {operator_name(packet)} kernel", s.cites + tuple(i["id"] for i in where)) for s in symptoms
    ]
    signals: dict[str, Any] = {
        "metrics": signal_metrics(packet),
        "shape_regime": {
            "predicate": "*",
            "var_axes": [a for a in op["variable_axes"] if isinstance(a, str)],
            "n_shapes": op["n_benchmarked_shapes"],
        },
        "symptoms": claims.put_list("retrieval.signals.symptoms", symptoms),
    }
    if (label := bottleneck_label(packet)) is not None:
        signals["bottleneck"] = label
    return {
        "scope": scope,
        "generality": {"arch": scope["arch"], "language": scope["dsl"], "workload_family": target["workload_family"]},
        "signals": signals,
        "technique_tags": claims.put_list("retrieval.technique_tags", technique_claims(packet, src)),
        "triggers": claims.put_list("retrieval.triggers", triggers),
    }


def measured_effect(packet: dict, **extra: Any) -> dict:
    """Absolute geomeans for auditing, human-only."""
    values = {"new_geomean_us": packet["agent_facing"]["measurements"].get("geomean_us"), **extra}
    values = {k: v for k, v in values.items() if v is not None}
    return {"basis": "measured" if measured(packet) else "qualitative", **values}


def evidence(packet: dict, src: Sources, claims: Claims, effect: dict) -> dict:
    op, target, prov = packet["agent_facing"]["operator"], packet["target"], packet["provenance"]
    measured_on = {
        "harness": op.get("harness"),
        "gpu": op["gpu"],
        "track": f"{target['scope']['arch']}/{target['scope']['dsl']}",
    }
    return {
        "summary": {
            "confidence": confidence(packet),
            "bottleneck_evidence": bottleneck_evidence(packet, src, claims),
            "measured_on": {k: v for k, v in measured_on.items() if isinstance(v, str) and v},
        },
        "raw": {
            "source_repo": prov["source_label"],
            "version": prov["version"],
            "git_commit": prov["commit"],
            "effect": effect,
        },
    }


def correctness(measurements: dict) -> dict:
    c = measurements.get("correctness") or {}
    out = {"gate": c["status"]} if isinstance(c.get("status"), str) else {}
    if type(c.get("max_abs_err")) in (int, float):
        out["max_diff"] = c["max_abs_err"]
    return {"correctness": out} if out else {}


def repeats(text: str, mechanism: Sequence[str]) -> bool:
    """The text says a mechanism sentence again (is one, holds one or is part of one): a goal that repeats
    the record's mechanism says nothing of its own."""
    mine = " ".join(text.split()).rstrip(".").lower()
    theirs = (" ".join(m.split()).rstrip(".").lower() for m in mechanism)
    return bool(mine) and any(t and (t in mine or mine in t) for t in theirs)


def aim_sentences(items: list[dict], not_this: str, mechanism: Sequence[str], intent: bool) -> list[Said]:
    """The sentences of the items (with `intent`, only those that say what was meant: INTENT), each citing
    its item; never a restatement of `not_this` (the change or lever) nor a repeat of the mechanism."""
    return [
        Said(s, (i["id"],))
        for i in items
        for s in sentences(i["text"])
        if servable(s)
        and (INTENT.search(s) or not intent)
        and lever_key(s) != lever_key(not_this)
        and not repeats(s, mechanism)
    ]


def stated_aims(src: Sources, not_this: str, prose_kinds: tuple[str, ...], mechanism: Sequence[str] = ()) -> list[Said]:
    """What the step record expected the change to do, else the sentences of intent of its prose: at most
    two sentences, never a restatement of `not_this` and never a sentence the record's mechanism already
    says (when the expected impact is the step's only causal text it is the mechanism, and the goal falls
    to the next source)."""
    aims = aim_sentences(src.of("expected-impact"), not_this, mechanism, intent=False)
    return (aims or aim_sentences(src.of(*prose_kinds), not_this, mechanism, intent=True))[:2]


def floor_goal(packet: dict) -> str:
    """The goal every step of a ladder has when its trace states none of its own (reported thin)."""
    return f"Beat the floor of the {operator_name(packet)} operator on {packet['agent_facing']['operator']['gpu']}"


def purpose_of(lever_item: dict) -> Said | None:
    """The purpose a lever's own name states (`X to keep two blocks resident per SM`), as a sentence."""
    text = " ".join(lever_item["text"].split())
    m = PURPOSE.search(text)
    if not m or m.start() == 0:
        return None
    aim = text[m.end() :].rstrip(".")
    return Said(aim[0].upper() + aim[1:] + ".", (lever_item["id"],)) if servable(aim) else None


def first_sentences(items: list[dict], n: int = 1) -> list[Said]:
    """The first n sentences of the items, each citing its item."""
    out: list[Said] = []
    for i in items:
        for s in sentences(i["text"]):
            if servable(s) and len(out) < n:
                out.append(Said(s, (i["id"],)))
    return out
