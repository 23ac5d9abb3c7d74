"""The honest twins (test_claims runs them): true rewordings, reordered sentences, synonyms that keep
polarity and direction, numbers with their slots. Every one must pass all 19 gates.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.adversarial.claim_attacks import (
    A,
    Case,
    Ctx,
    R,
    S,
    add,
    edit,
    has,
    inexact,
    measured_anti,
    num,
    push,
    setto,
    slower_anti,
    status,
)
from tests.adversarial.provenance_kinds import PROVENANCE_TWINS
from tests.adversarial.round9_kinds import ROUND9_TWINS
from tests.adversarial.round11_kinds import ROUND11_TWINS

# --- honest twins: true rewordings that must pass ------------------------------------------------


def first_sentence_swap(text: str, c: Ctx) -> str:
    from optrace.wording import sentences

    parts = sentences(text)
    return " ".join(parts[1:] + parts[:1])


SYN = (
    (r"\bshared memory\b", "smem"),
    (r"\bloads\b", "accesses"),
    (r"\breads\b", "loads"),
    (r"\bdoes not\b", "doesn't"),
    (r"\bcannot\b", "can not"),
    (r"\bthread block\b", "CTA"),
)


def synonym(pattern: str, repl: str) -> Callable:
    return edit("payload.mechanism", lambda t, c: re.sub(pattern, repl, t, count=1))


TWINS = [
    Case(
        "t the mechanism's sentences reordered",
        0,
        S,
        edit("payload.mechanism", first_sentence_swap),
        (),
        has("payload.mechanism", r"\. \S"),
    ),
    Case(
        "t a cause's sentences reordered",
        0,
        A,
        edit("payload.established_fact.mechanism", first_sentence_swap),
        (),
        has("payload.established_fact.mechanism", r"\. \S"),
    ),
    Case(
        "t faster than the version it builds on",
        0,
        S,
        add("payload.goal", "It is faster than the version it builds on."),
        (),
    ),
    Case(
        "t the gain with its slot",
        0,
        S,
        add("payload.goal", lambda c: f"It is {num(c.m['improve_pct_vs_floor'])}% faster than the floor."),
        (),
    ),
    Case(
        "t the gain rounded to one decimal",
        0,
        S,
        add("payload.goal", lambda c: f"It is about {c.m['improve_pct_vs_floor']:.1f}% faster."),
        (),
    ),
    Case(
        "t the gain as lower latency",
        0,
        S,
        add("payload.goal", lambda c: f"The geomean latency is {num(c.m['improve_pct_vs_floor'])}% lower."),
        (),
    ),
    Case(
        "t the floor and the new geomean",
        0,
        S,
        add(
            "payload.goal",
            lambda c: f"The geomean went from {num(c.m['floor_before_us'])} us to {num(c.m['geomean_us'])} us.",
        ),
        (),
    ),
    Case(
        "t the floor named as the previous best",
        0,
        S,
        add("payload.goal", lambda c: f"The previous best ran at {num(c.m['floor_before_us'])} us."),
        (),
    ),
    Case(
        "t the new geomean",
        0,
        S,
        add("payload.goal", lambda c: f"It now runs at {num(c.m['geomean_us'])} us geomean."),
        (),
    ),
    Case(
        "t one shape's latency",
        0,
        S,
        add(
            "payload.goal",
            lambda c: (
                f"It takes {num(c.m['per_shape_latency'][0]['latency_us'])} us on {c.m['per_shape_latency'][0]['shape']}."
            ),
        ),
        (),
        lambda c: bool(c.m["per_shape_latency"]),
    ),
    Case(
        "t the measured shape count",
        0,
        S,
        add("payload.goal", lambda c: f"Measured on {c.m['shapes_measured']} shapes."),
        (),
    ),
    Case("t the step called kept", 0, S, add("payload.goal", "The change was kept."), ()),
    Case(
        "t the lever called not kept",
        0,
        A,
        add("payload.lesson", "The change was not kept."),
        (),
        lambda c: c.packet.data["seg_kind"] != "curated-pitfall",  # a pitfall is no change
    ),
    Case(
        "t slower on a slower attempt",
        0,
        A,
        add("payload.lesson", "The attempt made the kernel slower."),
        (),
        slower_anti,
    ),
    Case(
        "t the attempt's change with its slot",
        0,
        A,
        add(
            "payload.lesson",
            lambda c: f"It measured {num(c.m['improve_pct_vs_floor'])}% against the floor it was tried against.",
        ),
        (),
        measured_anti,
    ),
    Case("t shared memory as smem", 0, S, synonym(*SYN[0]), (), has("payload.mechanism", SYN[0][0])),
    Case("t loads as accesses", 0, S, synonym(*SYN[1]), (), has("payload.mechanism", SYN[1][0])),
    Case("t reads as loads", 0, S, synonym(*SYN[2]), (), has("payload.mechanism", SYN[2][0])),
    Case(
        "t never as does not",
        0,
        S,
        edit("payload.mechanism", lambda t, c: re.sub(r"\bnever (\w+?)s\b", r"does not \1", t, count=1)),
        (),
        has("payload.mechanism", r"\bnever \w+s\b"),
    ),
    Case(
        "t the first letter upper-cased",
        0,
        A,
        edit("payload.established_fact.mechanism", lambda t, c: t[0].upper() + t[1:]),
        (),
    ),
    Case(
        "t a sentence of the mechanism left out",
        0,
        S,
        edit("payload.mechanism", lambda t, c: first_sentence_swap(t, c).split(". ", 1)[1]),
        (),
        has("payload.mechanism", r"\.\s+[A-Z]"),
    ),
    Case(
        "t a symptom dropped",
        0,
        S,
        lambda r, c: (r["retrieval"]["signals"]["symptoms"].pop(), r["retrieval"]["triggers"].pop()),
        (),
        lambda c: (
            len(c.record["retrieval"]["signals"]["symptoms"]) >= 2 and len(c.record["retrieval"]["triggers"]) >= 2
        ),
    ),
    Case(
        "t the goal's change as the subject's words",
        0,
        S,
        add("payload.goal", lambda c: next(i["text"] for i in c.agent["evidence"] if i["kind"] == "subject") + "."),
        (),
        lambda c: any(i["kind"] == "subject" for i in c.agent["evidence"]),
    ),
    Case(
        "t do not retry as avoid retrying",
        0,
        A,
        setto("payload.lesson", "Avoid retrying this lever while that cause holds."),
        (),
    ),
    Case(
        "t the lever named in the goal", 0, A, setto("payload.goal", lambda c: f"Do not retry: {c.pl['attempted']}"), ()
    ),
    Case(
        "t an effect note that is true",
        0,
        S,
        setto(
            "evidence.raw.effect.note", lambda c: f"{num(c.m['improve_pct_vs_floor'])}% faster than the floor it beat"
        ),
        (),
    ),
    Case(
        "t a gain note that is true", 0, S, setto("worth.gain.note", "faster than the previous best kept version"), ()
    ),
    Case(
        "t measured over the measured shapes",
        0,
        S,
        setto(
            "worth.gain.metrics",
            lambda c: [
                {
                    **c.record["worth"]["gain"]["metrics"][0],
                    "measured_over": f"the {c.m['shapes_measured']} shapes this version measured",
                }
            ],
        ),
        (),
    ),
    Case(
        "t the reference kernel's goal reworded",
        0,
        R,
        add("payload.goal", "It is the fastest version this run kept."),
        (),
        lambda c: c.packet.data["seg_kind"] == "final-kernel",
    ),
    Case(
        "t a tag made of the change's words",
        0,
        S,
        push(
            "retrieval.technique_tags",
            lambda c: "-".join(re.findall(r"(?<![\w.])[a-z]{3,}(?![\w.])", c.pl["change"].lower())[:2]),
        ),
        (),
        lambda c: len(re.findall(r"(?<![\w.])[a-z]{3,}(?![\w.])", c.pl["change"].lower())) >= 2,
    ),
]
TWINS += [
    Case(
        "t the gain spelled percent",
        0,
        S,
        add("payload.goal", lambda c: f"It is {num(c.m['improve_pct_vs_floor'])} percent faster."),
        (),
    ),
    Case(
        "t the gain to two decimals",
        0,
        S,
        add("payload.goal", lambda c: f"About {c.m['improve_pct_vs_floor']:.2f}% better than the floor."),
        (),
    ),
    Case(
        "t passed its correctness check",
        0,
        S,
        add("payload.goal", "It passed the correctness check against the reference output."),
        (),
        status("PASS"),
    ),
    Case(
        "t its largest error with its slot",
        0,
        S,
        add(
            "payload.goal",
            lambda c: f"Its max_abs_err against the reference is {num(c.m['correctness']['max_abs_err'])}.",
        ),
        (),
        inexact,
    ),
    Case(
        "t failed its correctness check",
        0,
        A,
        add("payload.lesson", "It failed the correctness check."),
        (),
        status("FAIL"),
    ),
    Case(
        "t a root cause upper-cased",
        0,
        A,
        edit("payload.root_cause", lambda t, c: t[0].upper() + t[1:]),
        (),
        lambda c: bool(c.pl.get("root_cause")),
    ),
    Case("t the goal's first letter lower-cased", 0, S, edit("payload.goal", lambda t, c: t[0].lower() + t[1:]), ()),
    Case("t extra white space", 0, A, edit("payload.lesson", lambda t, c: "  " + t.replace(" ", "  ") + " "), ()),
]

TWINS += [
    Case(
        "t a failed lever's shape regime written without spaces",
        0,
        A,
        edit("payload.established_fact.condition.shape_regime", lambda t, c: t.replace(" ", "")),
        (),
        has("payload.established_fact.condition.shape_regime", r" "),
    ),
]
TWINS += [
    Case(
        "t cannot written as can't",
        0,
        A,
        edit("payload.root_cause", lambda t, c: t.replace("cannot", "can't", 1)),
        (),
        has("payload.root_cause", r"\bcannot\b"),
    ),
]


def _new_side_only(r, c) -> None:
    impl = r["payload"]["implementation"]
    impl["snippet"] = "\n".join(
        ln for ln in impl["snippet"].splitlines() if not (ln.startswith("-") and ln[:3] != "---")
    )


TWINS += [
    Case(
        "t a diff snippet of its new side only",
        0,
        S,
        _new_side_only,
        (),
        has("payload.implementation.snippet", r"(?m)^-(?!--)\s*\S"),
    ),
    Case(
        "t an arrow written as to",
        0,
        A,
        edit("payload.root_cause", lambda t, c: t.replace(" -> ", " to ", 1)),
        (),
        has("payload.root_cause", r"\d%? -> \d"),
    ),
]
TWINS += PROVENANCE_TWINS + ROUND9_TWINS + ROUND11_TWINS
