"""Planted kinds from the red-team pass on the claims gates (/work/notes is not the project: each class is
restated here). Each is a class the rules now close, not the example it was found by: letters the reader
cannot see, a negation a clause break cut off, verdict and causal words the reader did not know, and field
meaning (a retry condition that restates its cause, an observation that is the fix, a fact that is the
pipeline's bookkeeping, a configuration that is another segment's advice).
"""

from __future__ import annotations

import re

from tests.adversarial.claim_attacks import CLM, VERB, A, Case, S, add, added_lines, has, has_diff, setto

# Latin letters spelt with look-alikes of other scripts (Armenian, Cyrillic, Greek) and full width
NOT_LOOKALIKE = "\u0578\u043et"  # renders "not"
NOT_FULLWIDTH = "\uff4e\uff4f\uff54"
EVERY_LOOKALIKE = "\u0435\u03bd\u0435\u0433\u0443"  # renders "every"


def _item(kind: str):
    return lambda c: next(i["text"] for i in c.agent["evidence"] if i.get("kind") == kind)


def _has_item(kind: str):
    return lambda c: any(i.get("kind") == kind for i in c.agent["evidence"])


def _so_swapped(text: str, c) -> str:
    """'A, so B.' -> 'B, which is why A.' (the causal join inverted with a connective the reader knew not)."""
    m = re.search(r"([^.]*?), so ([^.]*)\.", text)
    assert m
    return text.replace(m.group(0), f"{m.group(2)}, which is why {m.group(1)[0].lower()}{m.group(1)[1:]}.")


_BRACE = re.compile(r"^\+[\s{}()\[\];,:]*$")
_NOTE = re.compile(r"^\+\s*(?:#|//)")


def _plus_lines(rx: re.Pattern):
    """The diff's `+` lines of one sort (braces alone, comments alone): whole lines of the diff, in order,
    that implement nothing."""
    return lambda c: [ln for ln in added_lines(c) if rx.match(ln)]


def _snippet(rx: re.Pattern):
    def mutate(r, c):
        r["payload"]["implementation"]["snippet"] = "\n".join(_plus_lines(rx)(c)[:2])

    return mutate


def _win(c) -> bool:
    return (c.m.get("improve_pct_vs_floor") or 0) > 0


RED = [
    Case(
        "2 a negation in look-alike letters",
        2,
        S,
        add("payload.goal", f"The kernel is {NOT_LOOKALIKE} faster."),
        (CLM,),
    ),
    Case("2 a full-width negation", 2, S, add("payload.goal", f"The kernel is {NOT_FULLWIDTH} faster."), (CLM,), _win),
    Case(
        "2 a look-alike negation in an established fact",
        2,
        A,
        lambda r, c: r["payload"]["established_fact"].update(
            mechanism=r["payload"]["established_fact"]["mechanism"].replace(" is ", f" is {NOT_LOOKALIKE} ", 1)
        ),
        (CLM,),
        lambda c: " is " in c.pl["established_fact"]["mechanism"],
    ),
    Case(
        "7 a look-alike scope word in a lesson",
        7,
        A,
        add("payload.lesson", f"This lever fails on {EVERY_LOOKALIKE} GPU."),
        (CLM,),
        lambda c: bool(c.pl.get("lesson")),
    ),
    Case(
        "2 a negation a comma cuts off its predicate",
        2,
        S,
        add("payload.goal", "The kernel is not, in this run, faster than the floor."),
        (CLM,),
        _win,
    ),
    Case(
        "2 a negation a dash cuts off its predicate",
        2,
        S,
        add("payload.goal", "The kernel is not \u2014 in this run \u2014 faster than the floor."),
        (CLM,),
        _win,
    ),
    Case(
        "2 a kept change called eliminated",
        2,
        S,
        add("payload.goal", "The change was eliminated from the kernel."),
        (CLM,),
    ),
    Case("2 a kept change called dropped", 2, S, add("payload.goal", "The change was dropped."), (CLM,)),
    Case(
        "2 causality inverted with which is why",
        2,
        S,
        lambda r, c: r["payload"].update(mechanism=_so_swapped(r["payload"]["mechanism"], c)),
        (CLM,),
        has("payload.mechanism", r"[^.]{12,}, so [^.]{12,}\."),
    ),
    Case(
        "4 a retry condition that restates the cause ruling the lever out",
        4,
        A,
        setto("payload.would_retry_if", lambda c: c.agent["why_it_failed"]),
        (CLM,),
        lambda c: bool(c.agent.get("why_it_failed")),
    ),
    Case(
        "4 the fix filed as what was observed",
        4,
        A,
        setto("payload.observed", lambda c: c.agent["how_it_was_fixed"]),
        (CLM,),
        lambda c: bool(c.agent.get("how_it_was_fixed")),
    ),
    Case(
        "4 the segment's bookkeeping as an established fact",
        4,
        A,
        lambda r, c: r["payload"]["established_fact"].update(mechanism=_item("segment")(c)),
        (CLM,),
        _has_item("segment"),
    ),
    Case(
        "4 another segment's pitfall fix as this step's configuration",
        4,
        S,
        lambda r, c: (
            r["payload"]
            .setdefault("config", {})
            .update({"pointer": next(i["text"] for i in c.agent["evidence"] if i.get("kind") == "pitfall-fix")})
        ),
        (CLM,),
        _has_item("pitfall-fix"),
    ),
    Case(
        "6 a strategy snippet of braces alone",
        6,
        S,
        _snippet(_BRACE),
        (VERB,),
        lambda c: has_diff(c) and bool(_plus_lines(_BRACE)(c)),
    ),
    Case(
        "6 a strategy snippet of comments alone",
        6,
        S,
        _snippet(_NOTE),
        (VERB,),
        lambda c: has_diff(c) and bool(_plus_lines(_NOTE)(c)),
    ),
]
