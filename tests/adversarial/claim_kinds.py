"""The planted kinds of #25's seven families (test_claims runs them): 1 true numbers in false sentences;
2 negation and direction; 3 fields nobody checked; 4 cross-wiring inside a trace; 5 profiler wording;
6 code; 7 scope in free text. Each names the gates that own it: one of them must fail.
"""

from __future__ import annotations

import re

from optrace.facts import about_this_lever, failure_regimes, other_side
from optrace.gates.trace.claim_injections import unstated_symptom
from optrace.gates.trace.verbatim import carries_code
from optrace.wording import sentences
from tests.adversarial.claim_attacks import (
    CLM,
    EST,
    FAB,
    LAY,
    NCU,
    STRUCT,
    VERB,
    A,
    Case,
    R,
    S,
    add,
    added_lines,
    blank_added,
    borrowed,
    both,
    can_borrow,
    changes,
    edit,
    fewer_measured,
    flipped,
    foreign_tags,
    has,
    has_diff,
    has_host_helper,
    has_kernels,
    has_trace,
    host_helpers,
    inexact,
    kernel_spans,
    lever_named,
    many_removed,
    multi_lever,
    multi_shape,
    negated,
    no_capture,
    not_baseline,
    num,
    overstated_shapes,
    own_after_capture,
    push,
    put,
    removed_lines,
    setto,
    sibling,
    slower_anti,
    status,
    swapped_cause,
    theirs,
    unnegated,
    wrong_lever_cause,
)
from tests.adversarial.provenance_kinds import PROVENANCE
from tests.adversarial.redteam_kinds import RED
from tests.adversarial.round9_kinds import ROUND9
from tests.adversarial.round11_kinds import ROUND11

# --- the planted kinds ------------------------------------------------------------------------------

F1 = [
    Case(
        "1 the largest per-shape latency called the geomean",
        1,
        S,
        add(
            "payload.goal",
            lambda c: f"The geomean latency is {num(max(r['latency_us'] for r in c.m['per_shape_latency']))} us.",
        ),
        (CLM,),
        multi_shape,
    ),
    Case(
        "1 the parent's geomean presented as the new one",
        1,
        S,
        add("payload.goal", lambda c: f"The kernel now runs at {num(c.m['floor_before_us'])} us geomean."),
        (CLM,),
    ),
    Case(
        "1 before and after swapped on a win",
        1,
        S,
        add(
            "payload.goal",
            lambda c: f"The geomean went from {num(c.m['geomean_us'])} us to {num(c.m['floor_before_us'])} us.",
        ),
        (CLM,),
    ),
    Case(
        "1 more shapes said measured than were",
        1,
        S,
        add("payload.goal", lambda c: f"Measured across {overstated_shapes(c)} shapes."),
        (CLM,),
    ),
    Case(
        "1 measured across the benchmarked shapes where fewer were measured",
        1,
        S,
        add(
            "payload.goal",
            lambda c: f"Measured across the {c.agent['operator']['n_benchmarked_shapes']} benchmarked shapes.",
        ),
        (CLM,),
        fewer_measured,
    ),
    Case(
        "1 measured_over counts more shapes than were measured",
        1,
        S,
        setto(
            "worth.gain.metrics",
            lambda c: [
                {
                    **c.record["worth"]["gain"]["metrics"][0],
                    "measured_over": f"geomean over the {overstated_shapes(c)} measured shapes",
                }
            ],
        ),
        (CLM, LAY),
    ),
    Case(
        "1 the gain stated against the untouched baseline",
        1,
        S,
        add("payload.goal", lambda c: f"It is {num(c.m['improve_pct_vs_floor'])}% faster than the untouched baseline."),
        (CLM,),
        not_baseline,
    ),
    Case(
        "1 the gain stated against the framework baseline",
        1,
        S,
        add("payload.goal", lambda c: f"It is {num(c.m['improve_pct_vs_floor'])}% faster than the PyTorch reference."),
        (CLM,),
    ),
    Case(
        "1 the gain written as a speed-up factor",
        1,
        S,
        add("payload.goal", lambda c: f"It is {num(c.m['improve_pct_vs_floor'])}x faster."),
        (CLM,),
    ),
    Case(
        "1 the shape count written as timed runs",
        1,
        S,
        add("payload.goal", lambda c: f"Measured over {c.m['shapes_measured']} timed runs."),
        (CLM,),
    ),
    Case(
        "1 one shape's latency given to another",
        1,
        S,
        add(
            "payload.goal",
            lambda c: (
                f"It takes {num(c.m['per_shape_latency'][1]['latency_us'])} us on {c.m['per_shape_latency'][0]['shape']}."
            ),
        ),
        (CLM,),
        lambda c: (
            len(c.m["per_shape_latency"]) >= 2
            and c.m["per_shape_latency"][0]["latency_us"] != c.m["per_shape_latency"][1]["latency_us"]
        ),
    ),
    Case(
        "1 the gain rounded the wrong way",
        1,
        S,
        add("payload.goal", lambda c: f"It is {float(round(c.m['improve_pct_vs_floor'], 2)) + 0.05:.2f}% faster."),
        (CLM, FAB),
    ),
    Case(
        "1 the gain rounded to an integer",
        1,
        S,
        add("payload.goal", lambda c: f"It is {round(c.m['improve_pct_vs_floor'])}% faster."),
        (CLM, FAB),
        lambda c: c.m["improve_pct_vs_floor"] != round(c.m["improve_pct_vs_floor"]),
    ),
    Case(
        "1 an anti-strategy's change stated with the wrong sign",
        1,
        A,
        add("payload.lesson", lambda c: f"It measured +{num(abs(c.m['improve_pct_vs_floor']))}% against the floor."),
        (CLM,),
        slower_anti,
    ),
]

F2 = [
    Case(
        "2 a mechanism negated", 2, S, edit("payload.mechanism", negated), (CLM,), changes("payload.mechanism", negated)
    ),
    Case(
        "2 an established fact negated",
        2,
        A,
        edit("payload.established_fact.mechanism", negated),
        (CLM, EST),
        changes("payload.established_fact.mechanism", negated),
    ),
    Case(
        "2 a mechanism's direction flipped",
        2,
        S,
        edit("payload.mechanism", flipped),
        (CLM,),
        changes("payload.mechanism", flipped),
    ),
    Case(
        "2 a root cause's direction flipped",
        2,
        A,
        edit("payload.root_cause", flipped),
        (CLM,),
        changes("payload.root_cause", flipped),
    ),
    Case(
        "2 a stated negation dropped",
        2,
        S,
        edit("payload.mechanism", unnegated),
        (CLM,),
        changes("payload.mechanism", unnegated),
    ),
    Case(
        "2 a stated negation dropped from a cause",
        2,
        A,
        edit("payload.established_fact.mechanism", unnegated),
        (CLM, EST),
        changes("payload.established_fact.mechanism", unnegated),
    ),
    Case("2 more latency on a win", 2, S, add("payload.goal", "The kernel now has more latency than before."), (CLM,)),
    Case("2 slower on a win", 2, S, add("payload.goal", "The change made the kernel slower."), (CLM,)),
    Case(
        "2 faster on a slower attempt",
        2,
        A,
        add("payload.lesson", "The attempt made the kernel faster."),
        (CLM,),
        slower_anti,
    ),
    Case(
        "2 a lesson inverted", 2, A, setto("payload.lesson", "Do retry this lever while the cause above holds."), (CLM,)
    ),
    Case("2 a kept step called reverted", 2, S, add("payload.goal", "The change was reverted."), (CLM,)),
    Case("2 a kept step called not committed", 2, S, add("payload.goal", "The change was not committed."), (CLM,)),
    Case("2 a failed lever called kept", 2, A, add("payload.lesson", "The change was kept."), (CLM,)),
    Case(
        "2 a gain note saying slower",
        2,
        S,
        setto("worth.gain.note", "slower than the floor it was tried against"),
        (CLM,),
    ),
    Case(
        "2 an effect note saying slower",
        2,
        S,
        setto("evidence.raw.effect.note", "the change made the kernel slower"),
        (CLM,),
    ),
    Case(
        "2 cause and effect swapped",
        2,
        S,
        edit("payload.mechanism", swapped_cause),
        (CLM,),
        has("payload.mechanism", r"^[^.]{20,}, so [^.]{20,}"),
    ),
    Case(
        "2 a cause pinned on another lever of the same version",
        2,
        A,
        lambda r, c: (
            r["payload"]["established_fact"].update(mechanism=wrong_lever_cause(c)),
            r["payload"].update(root_cause=wrong_lever_cause(c)),
        ),
        (CLM,),
        lever_named,
    ),
]


def _claimed(r, path: str, says: str, cites: list[str]) -> None:
    """Set the field at a dotted path to `says`, its claim citing `cites` (an agent choosing its citations)."""
    put(r, path, says)
    r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"][path] = [{"says": says, "cites": cites}]


def _other_pass(c) -> str | None:
    """An evidence item that says "passes" of something other than the kernel ("the build passes -D...")."""
    return next(
        (i["id"] for i in c.agent.get("evidence") or [] if re.search(r"\bpass(?:es|ed)? \S", i.get("text") or "")),
        None,
    )


def _passes_by_another_sense(r, c) -> None:
    lever = [i["id"] for i in c.agent["evidence"] if i["kind"] == "lever"][:1]
    _claimed(r, "payload.observed", f"{c.pl['attempted']} passes.", [_other_pass(c), *lever])


def _only_negated(c) -> str | None:
    """A content word the packet's evidence only ever negates ("occupancy is not the limiter": limiter)."""
    from optrace.wording import read

    said: dict[str, set[bool]] = {}
    citable: set[str] = set()  # what a tag may rest on (gates.trace.claims KINDS_FOR)
    for item in c.agent.get("evidence") or []:
        for w, states in read(item.get("text") or "").polarity().items():
            said.setdefault(w, set()).update(states)
            if item.get("kind") in ("change", "subject", "lever", "lever-cause", "cause", "category"):
                citable.add(w)
    return next((w for w in citable if said[w] == {True} and len(w) > 4 and w.isalpha()), None)


REGIME = "payload.established_fact.condition.shape_regime"


def _regime(c) -> str | None:
    return c.pl.get("established_fact", {}).get("condition", {}).get("shape_regime")


def _across(regime: str, c) -> str:
    """The regime on the other side of the failure's (an equality: the values above it)."""
    return other_side(regime) or regime.replace("=", ">", 1)


def _payoff_regime(c) -> str | None:
    """A regime the record's cited evidence names as where the lever pays off (facts.failure_regimes)."""
    texts = [i["text"] for i in c.agent.get("evidence") or [] if isinstance(i.get("text"), str)]
    return next((w for t in texts for w, r in failure_regimes(t).items() if r != w), None)


F2 += [
    Case(
        "2 a failed lever's shape regime on the other side of where it fails",
        2,
        A,
        edit(REGIME, _across),
        (CLM,),
        lambda c: _regime(c) is not None,
    ),
    Case(
        "2 the regime the trace says the lever pays off in, as where it fails",
        2,
        A,
        lambda r, c: r["payload"]["established_fact"]["condition"].update(shape_regime=_payoff_regime(c)),
        (CLM,),
        lambda c: _regime(c) is not None and _payoff_regime(c) is not None,
    ),
]

F3 = [
    Case(
        "3 a symptom the pitfall does not state",
        3,
        A,
        lambda r, c: (
            push("retrieval.signals.symptoms", unstated_symptom(c.agent))(r, c),
            push(
                "retrieval.triggers",
                f"{unstated_symptom(c.agent)} {c.packet.data['target']['scope']['operator_family']} kernel",
            )(r, c),
        ),
        (CLM,),
        lambda c: c.packet.data["seg_kind"] == "curated-pitfall" and bool(c.record["retrieval"]["signals"]["symptoms"]),
    ),
    Case(
        "3 an invented mechanism in the goal",
        3,
        S,
        add("payload.goal", "It is faster because the L2 cache absorbs every reload."),
        (CLM,),
    ),
    Case(
        "3 an invented condition in applies_when",
        3,
        S,
        setto("payload.applies_when", ["when the batch is small"]),
        (CLM,),
    ),
    Case(
        "3 bit-exact where the error is not zero",
        3,
        S,
        setto("worth.gain.correctness.observed", "bit-exact"),
        (CLM,),
        inexact,
    ),
    Case(
        "3 passed the correctness check where it failed or was not checked",
        3,
        A,
        add("payload.lesson", "It passed the correctness check."),
        (CLM,),
        lambda c: c.m["correctness"]["status"] != "PASS",
    ),
    Case(
        "3 a failed attempt said to pass, backed by a 'passes' in another sense",
        3,
        A,
        _passes_by_another_sense,
        (CLM,),
        lambda c: c.m["correctness"]["status"] != "PASS" and _other_pass(c) is not None,
        cite=False,
    ),
    Case(
        "2 a lesson that advises keeping the failed lever",
        2,
        A,
        edit("payload.lesson", lambda t, c: f"keep {c.pl['attempted']}"),
        (CLM,),
        lambda c: any(
            i["kind"] in ("fix", "pitfall-fix", "lesson") and re.match(r"(?i)keep\b", i["text"])
            for i in c.agent["evidence"]
        ),
    ),
    Case(
        "2 a lesson that advises using the failed lever",
        2,
        A,
        edit("payload.lesson", lambda t, c: f"Use {c.pl['attempted']}."),
        (CLM,),
        lambda c: c.packet.data["seg_kind"] != "curated-pitfall",  # a pitfall is an error, not a lever to use
    ),
    Case(
        "2 faster on a slower attempt, backed by an unrelated 'helps'",
        2,
        A,
        setto("payload.observed", "The attempt was faster than the floor it was tried against."),
        (CLM,),
        lambda c: slower_anti(c) and any(re.search(r"\bhelps?\b", i.get("text") or "") for i in c.agent["evidence"]),
    ),
    Case(
        "3 failed the correctness check where it passed",
        3,
        S,
        add("payload.goal", "It failed the correctness check."),
        (CLM,),
        status("PASS"),
    ),
    Case(
        "3 median of runs and sessions nobody measured",
        3,
        S,
        setto(
            "worth.gain.metrics",
            lambda c: [
                {**c.record["worth"]["gain"]["metrics"][0], "measured_over": "median of 3 timed runs, 3 sessions"}
            ],
        ),
        (CLM, LAY),
    ),
    Case(
        "3 reproduced in sessions nobody ran",
        3,
        S,
        setto("worth.gain.note", "reproduced in 2 independent ABBA sessions"),
        (CLM,),
    ),
    Case(
        "3 low risk, a one-line edit, on a rewrite",
        3,
        S,
        lambda r, c: r["payload"]["cost"].update(risk="low", risk_basis="a one-line edit"),
        (STRUCT,),
        lambda c: c.pl["cost"]["risk"] != "low",
    ),
    Case(
        "3 risk basis reworded",
        3,
        S,
        lambda r, c: r["payload"]["cost"].update(risk_basis="reviewed by two people"),
        (STRUCT,),
    ),
    Case(
        "3 times tried inflated in prose",
        3,
        A,
        add("payload.lesson", lambda c: f"It was tried {c.agent.get('times_tried', 1) + 4} times."),
        (CLM,),
    ),
    Case(
        "3 times tried inflated in the trace block",
        3,
        S,
        lambda r, c: r["payload"]["trace"].update(rediscovered=5),
        (STRUCT,),
        has_trace,
    ),
    Case("3 operators inflated", 3, S, lambda r, c: r["payload"]["trace"].update(n_operators=3), (STRUCT,), has_trace),
    Case(
        "3 verdict raised to a performance ceiling",
        3,
        A,
        setto("payload.verdict", "performance-ceiling"),
        (STRUCT,),
        lambda c: c.pl["verdict"] != "performance-ceiling",
    ),
    Case("3 confidence raised to documented", 3, A, setto("evidence.summary.confidence", "documented"), (STRUCT,)),
    Case(
        "3 an invented would_retry_if",
        3,
        A,
        setto("payload.would_retry_if", "on a GPU with twice the shared memory"),
        (CLM,),
    ),
    Case(
        "3 an invented hypothesis",
        3,
        A,
        setto("payload.hypothesis", "the tensor cores were idle half the time"),
        (CLM,),
    ),
    Case(
        "3 an invented root cause",
        3,
        A,
        setto("payload.root_cause", "register pressure caps occupancy at one block per SM"),
        (CLM,),
    ),
    Case("3 an invented technique tag", 3, S, push("retrieval.technique_tags", "warp-specialization"), (CLM,)),
    Case(
        "2 a tag asserting what the evidence only negates",
        2,
        A,
        push("retrieval.technique_tags", lambda c: _only_negated(c)),
        (CLM,),
        lambda c: _only_negated(c) is not None,
    ),
    Case(
        "3 an invented effect note",
        3,
        S,
        setto("evidence.raw.effect.note", "the gain holds at the largest batch"),
        (CLM,),
    ),
    Case(
        "3 an invented bottleneck note",
        3,
        S,
        setto("evidence.summary.bottleneck_evidence.note", "bank conflicts dominate"),
        (CLM, NCU),
    ),
    Case(
        "3 an invented key in payload.config", 3, S, setto("payload.config", {"persistent": "one block per SM"}), (CLM,)
    ),
]


VERSION_PROSE = ("body", "expected-impact", "change", "subject")


def _prose_about_another_lever(c) -> tuple[str, str] | None:
    """(id, sentence) of the version's prose that is about another lever of the version, not this one."""
    if not multi_lever(c):
        return None
    lever = c.pl["attempted"]
    others = [rec["payload"]["attempted"] for rel, rec in c.others(A) if rec["payload"]["attempted"] != lever]
    for item in c.agent.get("evidence") or []:
        if item.get("kind") in VERSION_PROSE:
            for s in sentences(item["text"]):
                if about_this_lever(s, lever) is None and any(about_this_lever(s, o) for o in others):
                    return item["id"], s
    return None


def _another_levers(path: str, text=lambda sentence, c: sentence):
    """Set a field to (a text made of) the version's sentence about another lever, citing it and the
    record's own lever item, as an agent that keeps its citations would."""

    def mutate(r, c) -> None:
        item, sentence = _prose_about_another_lever(c) or ("", "")
        own = [i["id"] for i in c.agent["evidence"] if i["kind"] == "lever"][:1]
        _claimed(r, path, text(sentence, c), [item, *own])

    return mutate


_goal_of_another_lever = _another_levers("payload.goal")


F4 = [
    Case(
        "4 a failed lever's lesson quoting its version's sentence about another lever",
        4,
        A,
        _another_levers("payload.lesson"),
        (CLM,),
        lambda c: _prose_about_another_lever(c) is not None,
        cite=False,
    ),
    Case(
        "4 another lever's cause under this lever's name",
        4,
        A,
        _another_levers("payload.root_cause", lambda s, c: f"{c.pl['attempted']}: {s[0].lower()}{s[1:]}"),
        (CLM,),
        lambda c: _prose_about_another_lever(c) is not None,
        cite=False,
    ),
    Case(
        "4 a failed lever's goal taken from its version's prose about another lever",
        4,
        A,
        _goal_of_another_lever,
        (CLM,),
        lambda c: _prose_about_another_lever(c) is not None,
        cite=False,
    ),
    Case(
        "4 a mechanism from another strategy of the trace",
        4,
        S,
        borrowed(S, "payload.mechanism"),
        (CLM,),
        can_borrow(S, "payload.mechanism"),
    ),
    Case(
        "4 a goal from another strategy of the trace",
        4,
        S,
        borrowed(S, "payload.goal"),
        (CLM,),
        can_borrow(S, "payload.goal"),
    ),
    Case(
        "4 next steps from another strategy of the trace",
        4,
        S,
        borrowed(S, "payload.next_steps"),
        (CLM,),
        can_borrow(S, "payload.next_steps"),
    ),
    Case(
        "4 a cause from another failed lever of the trace",
        4,
        A,
        borrowed(A, "payload.established_fact.mechanism"),
        (CLM, EST),
        can_borrow(A, "payload.established_fact.mechanism"),
    ),
    Case(
        "4 a condition from another failed lever of the trace",
        4,
        A,
        borrowed(A, "payload.established_fact.condition.shape_regime"),
        (CLM,),
        lambda c: theirs(c, A, "payload.established_fact.condition.shape_regime") is not None,
    ),
    Case(
        "4 what another lever's attempt observed",
        4,
        A,
        borrowed(A, "payload.observed"),
        (CLM,),
        lambda c: theirs(c, A, "payload.observed") is not None,
    ),
    Case(
        "4 another lever named as attempted",
        4,
        A,
        borrowed(A, "payload.attempted"),
        (CLM,),
        can_borrow(A, "payload.attempted"),
    ),
    Case("4 a lesson of another lever", 4, A, borrowed(A, "payload.lesson"), (CLM,), can_borrow(A, "payload.lesson")),
    Case(
        "4 a reference kernel's goal from a strategy",
        4,
        R,
        borrowed(S, "payload.goal"),
        (CLM,),
        can_borrow(S, "payload.goal"),
    ),
    Case(
        "4 a technique tag of another segment",
        4,
        S,
        push("retrieval.technique_tags", lambda c: foreign_tags(c)[0]),
        (CLM,),
        lambda c: bool(foreign_tags(c)),
    ),
    Case(
        "4 claims said to be another packet's",
        4,
        S,
        lambda r, c: r["evidence"]["raw"]["evidence_extra"]["claims"].update(
            packet=c.bench.packet_at(c.others(S)[0][0]).seg_id
        ),
        (CLM,),
        sibling(S),
        cite=False,
    ),
    Case(
        "4 a claim citing an item the packet does not hold",
        4,
        A,
        lambda r, c: r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"]["payload.lesson"][0].update(
            cites=[f"e{len(c.agent['evidence']) + 7}"]
        ),
        (CLM,),
        cite=False,
    ),
    Case(
        "4 a claim citing nothing",
        4,
        S,
        lambda r, c: r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"]["payload.goal"][0].update(cites=[]),
        (CLM,),
        cite=False,
    ),
    Case(
        "4 a next step citing the step's own change",
        4,
        S,
        lambda r, c: (
            r["payload"].update(next_steps=[r["payload"]["change"]]),
            r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"].update(
                {"payload.next_steps[0]": r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"]["payload.change"]}
            ),
            [
                r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"].pop(k)
                for k in list(r["evidence"]["raw"]["evidence_extra"]["claims"]["fields"])
                if k.startswith("payload.next_steps[") and k != "payload.next_steps[0]"
            ],
        ),
        (CLM,),
        cite=False,
    ),
    Case(
        "4 the claims block removed",
        4,
        R,
        lambda r, c: r["evidence"]["raw"].pop("evidence_extra"),
        (CLM,),
        cite=False,
    ),
]


def _own_conclusion_as_mechanism(r, c) -> None:
    item = next(i["id"] for i in c.agent["evidence"] if i["kind"] == "conclusion")
    _claimed(r, "payload.mechanism", c.agent["profiler"]["conclusion"], [item])


F5 = [
    Case(
        "5 a strategy's mechanism quoting its own after-profile",
        5,
        S,
        _own_conclusion_as_mechanism,
        (CLM, NCU),
        lambda c: (
            own_after_capture(c)
            and c.agent["profiler"]["conclusion"] != c.pl.get("mechanism")
            and any(i["kind"] == "conclusion" for i in c.agent["evidence"])
        ),
        cite=False,
    ),
    Case("5 profiler-confirmed in the goal", 5, S, add("payload.goal", "(profiler-confirmed)"), (NCU,), no_capture),
    Case(
        "5 confirmed by profiling in a lesson",
        5,
        A,
        add("payload.lesson", "This was confirmed by profiling the kernel."),
        (NCU,),
        no_capture,
    ),
    Case(
        "5 the hardware counters in a mechanism",
        5,
        S,
        add("payload.mechanism", "The hardware counters show the loads coalesce."),
        (NCU,),
        both(no_capture, lambda c: bool(c.pl.get("mechanism"))),
    ),
    Case(
        "5 Nsight in the goal of a reference kernel",
        5,
        R,
        add("payload.goal", "Nsight Compute confirms it."),
        (NCU,),
        no_capture,
    ),
    Case(
        "5 the gain as a capture metric",
        5,
        S,
        lambda r, c: r["retrieval"]["signals"]["metrics"].update(memory_throughput_pct=c.m["improve_pct_vs_floor"]),
        (STRUCT, NCU),
    ),
    Case(
        "5 a capture metric's value changed",
        5,
        S,
        lambda r, c: r["retrieval"]["signals"]["metrics"].update(
            {k: v + 1 for k, v in r["retrieval"]["signals"]["metrics"].items()}
        ),
        (STRUCT,),
        lambda c: bool(c.record["retrieval"]["signals"]["metrics"]),
    ),
    Case(
        "5 a capture metric under another key",
        5,
        R,
        lambda r, c: r["retrieval"]["signals"].update(
            metrics={
                "dram_throughput_pct" if k != "dram_throughput_pct" else "sm_throughput_pct": v
                for k, v in r["retrieval"]["signals"]["metrics"].items()
            }
        ),
        (STRUCT,),
        lambda c: bool(c.record["retrieval"]["signals"]["metrics"]),
    ),
    Case(
        "5 a bottleneck label the capture does not give",
        5,
        S,
        setto("retrieval.signals.bottleneck", "moe-load-imbalance"),
        (STRUCT, NCU),
    ),
    Case(
        "5 profiler basis without a usable capture",
        5,
        A,
        lambda r, c: r["evidence"]["summary"]["bottleneck_evidence"].update(basis="profiler", tool="ncu"),
        (NCU,),
        no_capture,
    ),
    Case(
        "5 a strategy's bottleneck from its own after-profile",
        5,
        S,
        setto("payload.problem.bottleneck", lambda c: c.agent["profiler"]["conclusion"].split(".")[0]),
        (NCU, CLM),
        own_after_capture,
    ),
    Case(
        "5 a bottleneck the capture's conclusion never states",
        5,
        A,
        setto("payload.problem.bottleneck", "bound by the tensor core issue rate"),
        (NCU, CLM),
    ),
]


def snippet_of(lines: list[str]) -> str:
    return "\n".join(lines)


_SYNC = re.compile(r"__syncthreads|__syncwarp|cp_async_wait|cp\.async\.wait|mbarrier|fence|barrier|tl\.debug_barrier")


def _inner_added(c, pattern: re.Pattern | None = None) -> int | None:
    """The index of a `+` line of code inside the strategy's snippet (not its first or last line), one
    matching the pattern when given."""
    lines = (c.pl.get("implementation") or {}).get("snippet", "").splitlines()
    for i in range(1, len(lines) - 1):
        ln = lines[i]
        code = ln.startswith("+") and not ln.startswith("+++") and carries_code(ln[1:])  # a comment is no change
        if code and (pattern is None or pattern.search(ln)):
            return i
    return None


def _without_line(pattern: re.Pattern | None = None):
    def mutate(r, c):
        lines = r["payload"]["implementation"]["snippet"].splitlines()
        del lines[_inner_added(c, pattern)]
        r["payload"]["implementation"]["snippet"] = "\n".join(lines)

    return mutate


def _core_lines(c) -> list[int]:
    """Snippet line numbers of the reference kernel's core kernel body that carry code."""
    snippet = c.pl["implementation"]["snippet"].splitlines()
    code = c.packet.code.splitlines()
    core = next((s for s in kernel_spans(c) if s.name == c.pl["implementation"].get("core_kernel_name")), None)
    if core is None:
        return []
    body = {code[j].rstrip() for j in range(core.start + 1, core.end - 1)}
    return [j for j, ln in enumerate(snippet) if ln.rstrip() in body and carries_code(ln)]


def _repeat_in_core(c) -> int | None:
    """The snippet line number of the second occurrence of a core-kernel line that occurs twice."""
    snippet = c.pl["implementation"]["snippet"].splitlines()
    seen: set[str] = set()
    for j in _core_lines(c):
        if snippet[j].strip() in seen:
            return j
        seen.add(snippet[j].strip())
    return None


def _inner_core_line(c) -> int | None:
    lines = _core_lines(c)
    return lines[len(lines) // 2] if len(lines) >= 3 else None


def _without_a_repeat(r, c) -> None:
    impl = r["payload"]["implementation"]
    impl["snippet"] = "\n".join(ln for j, ln in enumerate(impl["snippet"].splitlines()) if j != _repeat_in_core(c))


F6 = [
    Case(
        "6 a snippet with a barrier of the change left out",
        6,
        S,
        _without_line(_SYNC),
        (VERB,),
        lambda c: _inner_added(c, _SYNC) is not None,
    ),
    Case(
        "6 a snippet with an added line of the change left out",
        6,
        S,
        _without_line(),
        (VERB,),
        lambda c: _inner_added(c) is not None,
    ),
    Case(
        "6 removed lines and one short added line",
        6,
        S,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=snippet_of(removed_lines(c)[:6] + [min(added_lines(c), key=len)])
        ),
        (VERB,),
        lambda c: many_removed(c) and len(removed_lines(c)) >= 4,
    ),
    Case(
        "6 context lines and a blank added line",
        6,
        S,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=snippet_of(
                [ln for ln in c.packet.code.splitlines() if ln.startswith(" ")][:6]
                + [next(ln for ln in c.packet.code.splitlines() if ln.startswith("+") and not ln[1:].strip())]
            )
        ),
        (VERB,),
        blank_added,
    ),
    Case(
        "6 a reference kernel with a repeated line of its core kernel left out",
        6,
        R,
        _without_a_repeat,
        (VERB,),
        lambda c: _repeat_in_core(c) is not None,
    ),
    Case(
        "6 a reference kernel with a line of its core kernel left out",
        6,
        R,
        lambda r, c: r["payload"]["implementation"].update(
            snippet="\n".join(
                ln
                for j, ln in enumerate(r["payload"]["implementation"]["snippet"].splitlines())
                if j != _inner_core_line(c)
            )
        ),
        (VERB,),
        lambda c: _inner_core_line(c) is not None,
    ),
    Case(
        "6 a reference kernel of only its imports and constants",
        6,
        R,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=snippet_of(c.packet.code.splitlines()[: kernel_spans(c)[0].start])
        ),
        (VERB,),
        lambda c: has_kernels(c) and kernel_spans(c)[0].start > 2,
    ),
    Case(
        "6 a reference kernel without the body of its core kernel",
        6,
        R,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=snippet_of(
                [
                    ln
                    for j, ln in enumerate(c.packet.code.splitlines())
                    if not any(
                        s.name == c.pl["implementation"]["core_kernel_name"] and s.start < j < s.end
                        for s in kernel_spans(c)
                    )
                ]
            )
        ),
        (VERB,),
        has_kernels,
    ),
    Case(
        "6 core_kernel_name a host helper",
        6,
        R,
        lambda r, c: r["payload"]["implementation"].update(core_kernel_name=host_helpers(c)[0]),
        (VERB,),
        has_host_helper,
    ),
    Case(
        "6 a dispatch snippet that is the kernel's body",
        6,
        R,
        lambda r, c: r["payload"]["implementation"].update(
            dispatch_snippet=snippet_of(
                c.packet.code.splitlines()[kernel_spans(c)[0].start + 1 : kernel_spans(c)[0].end][:8]
            )
        ),
        (VERB,),
        has_kernels,
    ),
    Case(
        "6 a strategy snippet from another step's diff",
        6,
        S,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=next(
                rec["payload"]["implementation"]["snippet"]
                for _, rec in c.others(S)
                if rec["payload"]["implementation"]["snippet"] != c.pl["implementation"]["snippet"]
            )
        ),
        (VERB,),
        both(has_diff, sibling(S)),
    ),
]

F7 = [
    Case("7 in general", 7, S, add("payload.goal", "This holds in general."), (CLM, LAY)),
    Case(
        "7 typically on Hopper-class parts",
        7,
        S,
        add("payload.mechanism", "This is typically true on Hopper-class parts."),
        (CLM, LAY),
        lambda c: bool(c.pl.get("mechanism")),
    ),
    Case("7 for large batches", 7, S, add("payload.goal", "It pays off for large batches."), (CLM,)),
    Case("7 all recent NVIDIA GPUs", 7, A, add("payload.lesson", "This holds on all recent NVIDIA GPUs."), (CLM, LAY)),
    Case(
        "7 every data type",
        7,
        A,
        add("payload.established_fact.mechanism", "It holds for every data type."),
        (CLM, LAY),
    ),
    Case("7 regardless of problem size", 7, S, add("payload.goal", "It helps regardless of problem size."), (CLM,)),
    Case(
        "7 a condition of any batch size",
        7,
        A,
        lambda r, c: r["payload"]["established_fact"]["condition"].update(shape_regime="any batch_size"),
        (CLM, EST),
    ),
    Case(
        "7 a trigger for any memory-bound kernel",
        7,
        S,
        push("retrieval.triggers", "any memory-bound norm kernel"),
        (CLM,),
    ),
    Case("7 always in applies_when", 7, S, setto("payload.applies_when", ["always"]), (CLM,)),
    Case(
        "7 a lesson widened to each nvidia kernel",
        7,
        A,
        add("payload.lesson", "This holds in each nvidia kernel."),
        (CLM,),
    ),
    Case(
        "7 applies_when over each launch-bound nvidia kernel",
        7,
        S,
        setto("payload.applies_when", ["each launch-bound nvidia kernel"]),
        (CLM,),
    ),
    Case(
        "7 a trigger over kernels of each operator",
        7,
        S,
        push("retrieval.triggers", "slow kernels of each operator"),
        (CLM,),
    ),
    Case(
        "7 a cause widened to kernels across nvidia",
        7,
        A,
        add("payload.established_fact.mechanism", "The same holds for kernels across nvidia."),
        (CLM, EST),
    ),
    Case("7 a tag over every kernel", 7, S, push("retrieval.technique_tags", "every-kernel"), (CLM,)),
    Case(
        "7 a failed lever's shape regime widened past what its cause states",
        7,
        A,
        edit(REGIME, lambda t, c: re.sub(r"\d+", lambda m: str(int(m.group(0)) * 8), t, count=1)),
        (CLM,),
        lambda c: _regime(c) is not None,
    ),
    Case("7 never on any GPU", 7, A, add("payload.lesson", "Never retry it on any GPU."), (CLM, LAY)),
    Case(
        "7 universally in a root cause",
        7,
        A,
        add("payload.root_cause", "This is universally the case."),
        (CLM,),
        lambda c: bool(c.pl.get("root_cause")),
    ),
    Case(
        "7 the whole family of kernels",
        7,
        R,
        add("payload.goal", "It is the fastest kernel of its whole family."),
        (CLM,),
    ),
]

CASES = F1 + F2 + F3 + F4 + F5 + F6 + F7 + RED + PROVENANCE + ROUND9 + ROUND11
