"""An anti-strategy: a failed lever or a recorded pitfall, written only as an established fact.

Its cause is read from the trace's own statements in order of authority: the lever's own stated cause (a
pitfall's explanation, an experiment's evidence, a revert's reason), the reason written beside the lever,
its fix, then the version's gate verdict, commit body and evidence summary (where one version lists
several levers, only what it says about this one: the sentence or bracket that names it). The one judge
of a cause is optrace.facts. The goal is what the lever was meant to achieve: the purpose its name states,
its own step record's expected impact or a sentence of intent, else the lever tried to beat the floor
("Beat the floor with <lever>."; a pitfall: what the run recorded). The condition is what the statements scope it to: the toolchain, the
architecture only when the cause is bound to it, a shape regime or dtype they state. The lesson is the
trace's: its lesson, its fix, a sentence saying when the lever pays off, else the run's next direction.
"""

from __future__ import annotations

import re

from optrace.distill.claims import Claims, Said, Sources, servable
from optrace.distill.common import (
    lever_key,
    measured_effect,
    problem,
    purpose_of,
    stated_aims,
    symptom_claims,
)
from optrace.distill.draft import Draft
from optrace.distill.strategy import DIFF_FORMAT
from optrace.facts import (
    DTYPE_RE,
    MIN_MECHANISM_CHARS,
    NAMES_THE_LEVER,
    about_this_lever,
    cause_arch_bound,
    failure_regime,
    failure_regimes,
    judge_sentence,
    pitfall_about,
    single_match,
    stated_cause,
)
from optrace.kernelcode import diff_snippet
from optrace.pipeline_facts import anti_verdict
from optrace.wording import overlap, sentences

PAYS_OFF = re.compile(r"\bonly (?:pays off|helps|works|wins|overlaps)\b|\bpays off only\b", re.I)
# a sentence saying where a lever belongs or what must hold for it
SCOPES = re.compile(r"\bbelongs? to\b|\bmust\b|\bonly (?:when|if|for|once)\b|\bunless\b", re.I)


def restates(part: str, lever: str) -> bool:
    """The lever's own text (its change description) is what was tried, never what to learn."""
    return lever_key(part) == lever_key(lever)


def advises(part: str, lever: str) -> bool:
    return bool(PAYS_OFF.search(part)) or judge_sentence(part, lever).kind == "advice"


def cause_sources(packet: dict, src: Sources, lever: str) -> list[tuple[str, str, str]]:
    """(kind, text, item id) of every item that may state why the lever failed (facts.CAUSE_ORDER), a
    recorded pitfall only with the explanation of one that names this lever."""
    out = [(i["kind"], i["text"], i["id"]) for i in src.items if i["kind"] != "pitfall"]
    for p in packet["agent_facing"].get("pitfalls_recorded_here") or []:
        wanted = set(pitfall_about(p.get("pitfall"), lever))
        out += [("pitfall", i["text"], i["id"]) for i in src.of("pitfall") if i["text"] in wanted]
    return out


def cause_claims(packet: dict, src: Sources, lever: str, own_prose: bool) -> list[Said]:
    """The causal sentences of the first source that states a cause of at least 40 characters (facts)."""
    return [Said(s, (item,)) for s, item in stated_cause(cause_sources(packet, src, lever), lever, own_prose)]


def condition_claims(packet: dict, src: Sources, lever_item: dict, why: list[Said]) -> dict[str, Said]:
    """The toolchain, the ISA when the cause is bound to the architecture, and a shape regime (where the
    lever fails: facts.failure_regime) or dtype the lever or its cause states once, each citing where it
    is stated."""
    scope = packet["target"]["scope"]
    isa = packet["agent_facing"]["operator"].get("isa")
    where = src.of("segment")[:1]
    out: dict[str, Said] = {}
    if scope["dsl"] != "any" and where:
        out["toolchain"] = Said(scope["dsl"], (where[0]["id"],))
    stated = [(lever_item["text"], (lever_item["id"],))] + [(w.says, w.cites) for w in why]
    text = " ".join(t for t, _ in stated)
    if (
        isa
        and where
        and cause_arch_bound(" ".join(w.says for w in why), lever_item["text"])
        and isa in where[0]["text"]
    ):
        out["sm_arch"] = Said(isa, (where[0]["id"],))
    regime = failure_regime(text)
    if regime:  # cited where the regime it derives from is written
        written = {w for w, r in failure_regimes(text).items() if r == regime}
        out["shape_regime"] = Said(
            regime, tuple(dict.fromkeys(c for t, cs in stated if any(w in t for w in written) for c in cs))
        )
    dtype = single_match(DTYPE_RE, text)
    if dtype:
        out["dtype"] = Said(dtype, tuple(dict.fromkeys(c for t, cs in stated if dtype in t for c in cs)))
    return out


def lesson_claims(packet: dict, src: Sources, lever: str, why: list[Said], own_prose: bool) -> list[Said]:
    """The trace's lesson, its fix (or the fix of a pitfall its version recorded about it), a sentence of its
    own saying when the lever pays off or what to do instead (facts judges it advice), the run's next
    direction, else: do not retry the lever while its cause holds (the pipeline's statement of the
    segment)."""
    mechanism = {w.says for w in why}
    for kind in ("lesson", "fix"):  # the sentences the mechanism does not already say
        found = [Said(s, (i["id"],)) for i in src.of(kind) for s in sentences(i["text"]) if s not in mechanism]
        if found and all(servable(f.says) for f in found):
            return found

    # a pitfall's fix is this lever's lesson only where the lever's cause is that pitfall's explanation
    # (else the fix answers another failure, and the pitfall's own record carries it)
    def explains(p: dict) -> bool:
        said = " ".join((p.get("pitfall") or "").split())
        return any(" ".join(w.says.split()).rstrip(".") in said for w in why)

    for p in packet["agent_facing"].get("pitfalls_recorded_here") or []:
        if p.get("pitfall") != lever and overlap(lever, p.get("pitfall") or "") >= NAMES_THE_LEVER and explains(p):
            wanted = set(sentences(p.get("fix")))
            found = [Said(i["text"], (i["id"],)) for i in src.of("pitfall-fix") if i["text"] in wanted]
            if found and all(servable(f.says) for f in found):
                return found
    for kind in ("cause", "lever-cause", "change", "body", "gate-verdict"):  # when it pays off, what to do
        for item in src.of(kind):
            for s in sentences(item["text"]):
                part = s if own_prose or kind in ("cause", "lever-cause") else about_this_lever(s, lever)
                if not part or part in mechanism or not servable(part) or restates(part, lever):
                    continue
                if advises(part, lever):
                    return [Said(part, (item["id"],))]
    # a cause of several sentences whose later one says where the lever belongs or what must hold: that
    # sentence is the trace's own lesson (the first states the cause)
    for w in why[1:]:
        if advises(w.says, lever) or SCOPES.search(w.says):
            return [w]
    # a clause of the cause that says when the lever pays off ("X only helps batch_size >= 1024: ...") is
    # the trace's own lesson, said apart from the rest of the cause
    for w in why:
        for clause in re.split(r"[:;]\s+", w.says):
            clause = clause.strip().rstrip(".")
            if clause != w.says.rstrip(".") and PAYS_OFF.search(clause) and len(clause.split()) >= 5:
                return [Said(f"{clause[0].upper()}{clause[1:]}.", w.cites)]
    directions = [i for i in src.of("direction") if servable(i["text"])]
    if directions:
        return [Said(f"Try instead: {' '.join(directions[0]['text'].split())}", (directions[0]["id"],))]
    where = src.of("segment")[:1]
    held = holding_condition(why)
    if held is not None:  # the segment's "do not retry this lever while that cause holds", with its cause
        return [Said(f"Do not retry this lever while {held.says}.", tuple(i["id"] for i in where) + held.cites)]
    return [Said("Do not retry this lever while the cause above holds.", tuple(i["id"] for i in where))]


# the cause part of a causal sentence: after "because"/"since", before "so"/"which"/a colon
_CAUSE_AFTER = re.compile(r"\b(?:because|since)\s+(?P<cause>[^;:]+)$", re.I)
_EFFECT_NEXT = re.compile(r",?\s+(?:so|which|so that|and so)\b|[:;]\s+|\.\s+", re.I)


# a toolchain's resource verdict ("out of resource: shared memory, Required: 245760, Hardware limit: 232448")
_OUT_OF = re.compile(
    r"out of resources?: (?P<what>[a-z ]+), Required: (?P<need>\d+), Hardware limit: (?P<limit>\d+)", re.I
)


def holding_condition(why: list[Said]) -> Said | None:
    """What must hold for the cause to hold, as the trace states it: the part of a causal sentence after
    "because"/"since", a resource verdict's need and limit, else the part before its effect ("X, so Y", "X: Y"), lower-cased where it opens
    with a plain word; None when that part is too short to say anything."""
    stated = [(m.group("cause"), w) for w in why if (m := _CAUSE_AFTER.search(w.says))]
    resource = [(f"its {m['what']} is over the hardware limit (Required: {m['need']}, Hardware limit: {m['limit']})", w)
                for w in why if (m := _OUT_OF.search(w.says))]  # fmt: skip
    for part, w in stated + resource + [(_EFFECT_NEXT.split(w.says, maxsplit=1)[0], w) for w in why]:
        part = part.strip().rstrip(".,") if not part.endswith(")") else part.strip()
        if len(part.split()) < 5:
            continue
        first = part.split()[0]
        if first[:1].isupper() and first[1:].islower() and first.isalpha():
            part = first.lower() + part[len(first) :]
        return Said(part, w.cites)
    return None


# a percentage change of the kernel's time, as a verdict states it ("geomean -2.8% vs HEAD", "3% slower")
MEASURED_CHANGE = re.compile(
    r"\b(?:geomean|latency|speedup|faster|slower)\b[^.;]*?[-+]?\d+(?:\.\d+)?\s?%"
    r"|[-+]?\d+(?:\.\d+)?\s?%[^.;]*?\b(?:geomean|latency|faster|slower|vs)\b",
    re.I,
)


def observed_claims(packet: dict, src: Sources, lever_item: dict, why: list[Said]) -> list[Said]:
    """What was seen when the lever was tried: a pitfall's own name (the error it is); else the lever's own
    gate verdict or cause where it states numbers, then its change against the floor it was tried
    against (a slot). Never the mechanism again."""
    if packet["seg_kind"] == "curated-pitfall":
        return [Said(" ".join(lever_item["text"].split()), (lever_item["id"],))]
    out: list[Said] = []
    mechanism = {w.says for w in why}
    own = packet["seg_kind"] in ("deadend-prose", "deadend-experiment")
    kinds = ("observed", "gate-verdict", "cause") if own else ("observed", "cause")
    pct = packet["agent_facing"]["measurements"].get("improve_pct_vs_floor")
    measured_here = type(pct) in (int, float)
    for item in [i for kind in kinds for i in src.of(kind)]:
        for s in sentences(item["text"]):
            # the change the pipeline measured is said once, from its slot: a verdict restating it
            # ("geomean -2.8% vs HEAD") adds only a second, differently rounded number
            restates_the_change = measured_here and MEASURED_CHANGE.search(s)
            if re.search(r"\d", s) and servable(s) and s not in mechanism and not restates_the_change and len(out) < 2:
                out.append(Said(s, (item["id"],)))
        if out:
            break
    if measured_here:
        slot = "measurements.improve_pct_vs_floor"
        text = f"The attempt measured {pct}% against the floor it was tried against" + (
            " (slower)." if pct < 0 else "."
        )
        measured = Said(text, (slot,), ((repr(abs(pct)) if isinstance(pct, float) else str(abs(pct)), slot),))
        # a quoted verdict without its full stop ("geomean -2.8% vs HEAD") would run into the next sentence
        out = [measured, *out] if out and not ends_sentence(out[-1].says) else [*out, measured]
    return out


def ends_sentence(text: str) -> bool:
    return text.rstrip().endswith((".", "!", "?", ";", ":", ")"))


def goal_claims(
    packet: dict, src: Sources, lever_item: dict, own_prose: bool, why: list[Said]
) -> tuple[list[Said], bool]:
    """(what the lever was meant to achieve, whether the trace states none of it: see the module doc); the
    version's prose only where it is this lever's alone, never a sentence of the cause `why` again."""
    lever = " ".join(lever_item["text"].split())
    pitfall = packet["seg_kind"] == "curated-pitfall"
    purpose = None if pitfall else purpose_of(lever_item)  # a pitfall names what went wrong, not an aim
    if purpose:
        return [purpose], False
    aims = stated_aims(src, lever, ("body",), [w.says for w in why]) if own_prose else []
    if aims:
        return aims, False
    cites = (lever_item["id"],) + tuple(i["id"] for i in src.of("segment")[:1])
    if pitfall:  # what the run recorded is the pitfall's own statement
        gpu = packet["agent_facing"]["operator"]["gpu"]
        return [Said(f"A pitfall this run recorded on {gpu}: {lever}", cites)], False
    # the lever itself, tried to beat the floor (what its segment says of it): each lever's own, never the
    # operator-and-GPU sentence every lever of the run would share
    return [Said(f"Beat the floor with {lever.rstrip('.')}.", cites)], True


def draft(packet: dict, code: str | None, src: Sources, claims: Claims) -> Draft | str:
    """An established fact or nothing. The packet's precheck is a hint: the drafter judges the cause and
    the condition itself, from the packet's statements."""
    levers = [i for i in src.of("lever") if servable(i["text"])]
    if not levers:
        return "the failed lever is absent or states absolute latencies"
    lever_item = levers[0]
    lever = " ".join(lever_item["text"].split())
    own = packet["seg_kind"] == "deadend-prose"
    why = cause_claims(packet, src, lever, own)
    if not why:
        return f"no causal sentence of at least {MIN_MECHANISM_CHARS} characters in the packet's statements"
    condition = condition_claims(packet, src, lever_item, why)
    if not condition:
        return "no checkable condition (arch, shape regime, dtype or toolchain)"
    mechanism = " ".join(w.says for w in why)
    goal, goal_thin = goal_claims(packet, src, lever_item, own, why)
    observed = observed_claims(packet, src, lever_item, why)
    payload: dict = {
        "goal": claims.put("payload.goal", goal),
        "problem": problem(packet, src, claims),
        "attempted": claims.put("payload.attempted", [Said(lever, (lever_item["id"],))]),
        "verdict": anti_verdict(packet),
        "lesson": claims.put("payload.lesson", lesson_claims(packet, src, lever, why, own)),
        **({"observed": claims.put("payload.observed", observed)} if observed else {}),
        "root_cause": claims.put("payload.root_cause", why),
    }
    snippet = diff_snippet(code) if packet["seg_kind"] != "curated-pitfall" else None
    if snippet:
        payload["implementation"] = {"format": DIFF_FORMAT, "snippet": snippet}
    payload["established_fact"] = {
        "condition": {k: claims.put(f"payload.established_fact.condition.{k}", [v]) for k, v in condition.items()},
        "mechanism": claims.put("payload.established_fact.mechanism", why),
    }
    assert payload["established_fact"]["mechanism"] == mechanism
    gain: dict = {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []}
    thin = ([] if observed else ["observed"]) + (["goal"] if goal_thin else [])
    if packet["seg_kind"] == "curated-pitfall" and not symptom_claims(packet, src):
        thin.append("signals.symptoms")  # a pitfall's symptoms are its own or none, never its version's capture
    return Draft(payload, gain, measured_effect(packet), thin)
