"""A strategy: a measured milestone, in the trace's own words.

- change: the step record's description of the change, else the commit subject's;
- goal: what the step set out to do: its expected impact, else a sentence of intent of its own prose, else
  (reported thin) one derived from what is this step's alone: the problem its subject or step record
  states, the effect its mechanism states, its category and change, else its change against the floor;
  never the change restated, never a sentence of its mechanism again, never a sentence about no intent
  ("Nothing else changed."), never the one sentence every step of the ladder would share;
- mechanism: why it is faster, the causal sentences of its own statements in order of authority (the
  commit body, what its experiments found, the step record's evidence summary and expected impact, the
  bottleneck its subject states),
  never a restatement of the change and never its own after-profile (that diagnoses the next step);
- next_steps: the run's open directions the packet still offers (packets drop the ones already taken);
- the gain, its basis and the cost are measured or derived, never written.
"""

from __future__ import annotations

import re

from optrace.distill.claims import Claims, Said, Sources, each, said, servable
from optrace.distill.common import (
    PROCESS_CATEGORIES,
    correctness,
    floor_goal,
    measured_effect,
    problem,
    repeats,
    stated_aims,
    technique_claims,
)
from optrace.distill.draft import Draft
from optrace.facts import CONNECTIVE, causal_sentences
from optrace.kernelcode import cost_of, diff_snippet

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
MECHANISM_KINDS = ("body", "experiment", "evidence-summary", "expected-impact", "stated-bottleneck", "subject")
MAX_MECHANISM_SENTENCES = 3


def mechanism(src: Sources, change: str) -> list[Said]:
    """The causal sentences of the first statement kind that has any (see the module doc)."""
    for kind in MECHANISM_KINDS:
        found: list[Said] = []
        for item in src.of(kind):
            for s in causal_sentences(item["text"], change):
                if servable(s) and len(found) < MAX_MECHANISM_SENTENCES:
                    found.append(Said(s, (item["id"],)))
        if found:
            return found
    return []


# an effect its mechanism's first sentence states after (`X, so Y`) or before (`X, since Y`) its cause
EFFECT_AFTER = re.compile(r",\s+so(?: that)?\s+(?P<effect>[^;:]+)$", re.I)
EFFECT_BEFORE = re.compile(r"^(?P<effect>[^;:,]+?),?\s+(?:since|because)\s+", re.I)


# a stated problem written as a clause ("score-matrix traffic is most of the DRAM bytes"), not a noun phrase
CLAUSE_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|runs?|issues?(?= (?:one|a|an|\d))|stays?|dominates?|scales?|waits?)\b", re.I
)


def effect_of(why: list[Said]) -> Said | None:
    """The effect the first mechanism sentence states beside its cause, as what the step set out to get
    ("Get to a kernel where <effect>."); None when it states no such clause."""
    if not why:
        return None
    # the sentence's own first clause: a "so" after a colon is inside its explanation, not its effect
    first = why[0].says.split(";")[0].split(":")[0].rstrip(".")
    m = EFFECT_AFTER.search(first) or EFFECT_BEFORE.search(first)
    if not m:
        return None
    effect = re.sub(r"\bnow\s+", "", m.group("effect").strip().rstrip(".,"))
    if len(effect.split()) < 4:
        return None
    # no connective: the goal states the effect aimed at, not a cause of it
    return Said(f"Get to a kernel where {effect}.", why[0].cites)


def goal_claims(packet: dict, src: Sources, change: str, why: list[Said]) -> tuple[list[Said], bool]:
    """(the goal's sentences, whether the trace states none of its own: see the module doc); never a
    sentence of the mechanism `why` again. Where the step states no aim, the goal is derived from what is
    this step's own: the problem its subject or step record states ("Take on <bottleneck>."), the effect
    its mechanism states ("Get to a kernel where <effect>."), its category with its change, else its
    change: never one sentence every step of a ladder shares."""
    mechanism = [w.says for w in why]
    aims = stated_aims(src, change, ("body", "subject", "experiment"), mechanism)
    if aims:
        return aims, False
    where = tuple(i["id"] for i in src.of("segment")[:1])
    # the problem the step states it attacked: its subject's bottleneck, else its step record's evidence
    # (one that joins a cause to it is a mechanism, not the problem)
    stated = [
        i
        for i in src.of("stated-bottleneck") + src.of("evidence-summary")
        if servable(i["text"]) and not repeats(i["text"], mechanism) and not CONNECTIVE.search(i["text"])
    ][:1]
    if stated:
        problem_text = " ".join(stated[0]["text"].split()).rstrip(".")
        lead = "Beat the floor where" if CLAUSE_VERB.search(problem_text) else "Take on"
        return [Said(f"{lead} {problem_text}.", where * (lead != "Take on") + (stated[0]["id"],))], True
    effect = effect_of(why)
    if effect is not None:
        return [Said(effect.says, where + effect.cites)], True
    category = [i for i in src.of("category") if i["text"].lower() not in PROCESS_CATEGORIES][:1]
    changed = src.first("change", "subject")[:1]
    what = " ".join(changed[0]["text"].split()).rstrip(".") if changed else ""
    cites = where + tuple(i["id"] for i in changed)
    if category:
        kind = category[0]["text"].replace("_", " ")
        a = "an" if kind[:1].lower() in "aeiou" else "a"
        text = f"Beat the floor with {a} {kind} change" + (f" ({what})." if what else ".")
        return [Said(text, cites + (category[0]["id"],))], True
    return [Said(f"Beat the floor with {what}." if what else f"{floor_goal(packet)}.", cites)], True


def draft(packet: dict, code: str | None, src: Sources, claims: Claims) -> Draft | str:
    a = packet["agent_facing"]
    m = a["measurements"]
    pct = m.get("improve_pct_vs_floor")
    if type(pct) not in (int, float):
        return "no measured gain over the previous floor"
    change_items = src.first("change", "subject")
    if not change_items:
        return "nothing servable says what changed (absent, or only with absolute latencies)"
    snippet = diff_snippet(code)
    if snippet is None:
        return "no diff against the kernel this step edited to quote"
    thin = []
    change_said = said(change_items)
    assert change_said is not None  # first() returns servable items
    change = claims.put("payload.change", [change_said])
    base = a.get("builds_on") or {}
    approach_items = [i for i in src.of("previous-approach") if servable(i["text"])]
    if approach_items:
        approach = claims.put("payload.trace.builds_on.approach", [said(approach_items)])  # type: ignore[list-item]
    else:
        thin.append("trace.builds_on.approach")
        segment = src.of("segment")[:1]
        text = (
            "The untouched baseline kernel." if base.get("was_the_untouched_baseline") else "The previous kept kernel."
        )
        approach = claims.put("payload.trace.builds_on.approach", [Said(text, tuple(i["id"] for i in segment))])
    why = mechanism(src, change)
    if not why:
        thin.append("mechanism")
    goal, goal_thin = goal_claims(packet, src, change, why)
    if goal_thin:
        thin.append("goal")
    directions = each(src.of("direction"))
    if not directions:
        thin.append("next_steps")
    status = (m.get("correctness") or {}).get("status")
    shapes = m.get("shapes_measured") or 0
    over = (
        Said(
            f"geomean over the {shapes} measured shape{'s' if shapes != 1 else ''}",
            ("measurements.shapes_measured",),
            ((str(shapes), "measurements.shapes_measured"),),
        )
        if shapes
        else Said("geomean over the measured shapes", ("measurements.geomean_us",))
    )
    technique_here = [t for t in technique_claims(packet, src)[:1]]
    payload = {
        "goal": claims.put("payload.goal", goal),
        "problem": problem(packet, src, claims),
        "trace": {
            "builds_on": {"approach": approach, "is_baseline": bool(base.get("was_the_untouched_baseline"))},
            "technique_here": claims.put_list("payload.trace.technique_here", technique_here),
        },
        "change": change,
        "mechanism": claims.put("payload.mechanism", why) if why else "",
        "implementation": {"format": DIFF_FORMAT, "snippet": snippet},
        "cost": cost_of(code, status),
        "next_steps": claims.put_list("payload.next_steps", directions),
    }
    gain = {
        "basis": "measured",
        "kind": "performance",
        "primary": "latency",
        "pct": pct,
        "metrics": [
            {
                "metric": "latency",
                "direction": "lower-better",
                "source": "step-record",
                "delta_pct": pct,
                "measured_over": claims.put("worth.gain.metrics[0].measured_over", [over]),
            }
        ],
        **correctness(m),
    }
    effect = measured_effect(packet, parent_geomean_us=m.get("floor_before_us"), delta_pct=pct)
    return Draft(payload, gain, effect, thin)
