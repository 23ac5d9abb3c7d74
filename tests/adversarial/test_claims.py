"""Issue #25: claims bound to their evidence. Fabrications of seven families planted into the drafter's
passing records of the realistic traces (tests/adversarial/realistic_benches.py), each by an editor that
also rewrites its citations (tests/adversarial/citations.py: every changed sentence cites what its field
cited, or every item the field may rest on, and names the slot of every number it writes), so a defect
fails by what it claims. Every planted kind must fail on every trace it applies to, on at least three
traces, naming a gate that owns its family; every honest twin (a true rewording) must pass all 19 gates.

Families (the issue's): 1 true numbers in false sentences; 2 negation and direction; 3 fields nobody
checked; 4 cross-wiring inside a trace; 5 profiler wording; 6 code; 7 scope in free text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from optrace.gates.trace.claims import names
from optrace.gates.trace.injection import validate_records
from optrace.gates.trace.store_overlap import LiveStore
from optrace.kernelcode import kernel_functions
from optrace.pipeline_facts import capture_for_signals
from tests.adversarial.citations import resync
from tests.adversarial.realistic_benches import NAMES

S, A, R = "strategy", "anti-strategy", "reference-kernel"
CLM, STRUCT, LAY, NCU, VERB, FAB, EST = (
    "claims",
    "structured-facts",
    "layout",
    "ncu-attribution",
    "verbatim",
    "no-fabrication",
    "established-fact",
)
CRASH = re.compile(r"could not read this record")


@dataclass(frozen=True)
class Case:
    name: str
    family: int
    rtype: str
    mutate: Callable  # (record, ctx) -> None
    gates: tuple[str, ...]  # one of these must fire
    applies: Callable | None = None  # (ctx) -> bool
    cite: bool = True  # the editor rewrites its citations (False: the attack is on the citations)


@dataclass
class Ctx:
    """One record of a bench, with what the mutations read."""

    bench: object
    i: int
    rel: str
    record: dict

    @property
    def packet(self):
        return self.bench.packet_at(self.rel)

    @property
    def agent(self) -> dict:
        return self.packet.agent_facing

    @property
    def m(self) -> dict:
        return self.agent["measurements"]

    @property
    def pl(self) -> dict:
        return self.record["payload"]

    def others(self, rtype: str | None = None) -> list[tuple[str, dict]]:
        """The other records of the trace (of a type)."""
        return [
            (rel, rec) for rel, rec in self.bench.records if rel != self.rel and (rtype is None or rec["type"] == rtype)
        ]


def num(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


# --- edits ------------------------------------------------------------------------------------------


def at(record: dict, path: str):
    node = record
    for key in path.split("."):
        node = node[key]
    return node


def put(record: dict, path: str, value) -> None:
    *head, last = path.split(".")
    node = record
    for key in head:
        node = node.setdefault(key, {})
    node[last] = value


def add(path: str, text: Callable[[Ctx], str] | str) -> Callable:
    """Append a sentence to a string field."""

    def mutate(r, c):
        extra = text(c) if callable(text) else text
        put(r, path, f"{at(r, path).rstrip()} {extra}".strip())

    return mutate


def setto(path: str, value) -> Callable:
    def mutate(r, c):
        put(r, path, value(c) if callable(value) else value)

    return mutate


def edit(path: str, fn: Callable[[str, Ctx], str]) -> Callable:
    def mutate(r, c):
        put(r, path, fn(at(r, path), c))

    return mutate


def push(path: str, value) -> Callable:
    def mutate(r, c):
        node = r
        for key in path.split(".")[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(path.split(".")[-1], []).append(value(c) if callable(value) else value)

    return mutate


# --- what a case needs of its record ---------------------------------------------------------------


def multi_shape(c: Ctx) -> bool:
    rows = c.m["per_shape_latency"]
    return len(rows) >= 2 and max(r["latency_us"] for r in rows) != c.m["geomean_us"]


def overstated_shapes(c: Ctx) -> int:
    """More shapes than the version measured: the benchmark's, when it measured fewer, else one more."""
    n, measured = c.agent["operator"]["n_benchmarked_shapes"], c.m["shapes_measured"]
    return n if n > measured else measured + 1


def not_baseline(c: Ctx) -> bool:
    return not (c.agent.get("builds_on") or {}).get("was_the_untouched_baseline")


def fewer_measured(c: Ctx) -> bool:
    return 0 < c.m["shapes_measured"] < c.agent["operator"]["n_benchmarked_shapes"]


AUX = re.compile(r"\b(is|are|was|were|can|does|do|has|have|will)\b(?! not\b| no\b| never\b)")
DIRECTION_SWAP = (
    ("fewer", "more"),
    ("less", "more"),
    ("lower", "higher"),
    ("falls", "rises"),
    ("fall", "rise"),
    ("halves", "doubles"),
    ("reduces", "increases"),
    ("removes", "adds"),
    ("shrinks", "grows"),
    ("more", "fewer"),
    ("higher", "lower"),
    ("increases", "reduces"),
)
NEGATORS = re.compile(r"\b(?:never|not|no longer)\s+(?=[a-z]{4,})")  # a negation of a word that carries content


def has(path: str, pattern: str | re.Pattern) -> Callable:
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern

    def applies(c: Ctx) -> bool:
        try:
            value = at(c.record, path)
        except (KeyError, TypeError):
            return False
        return isinstance(value, str) and bool(rx.search(value))

    return applies


def changes(path: str, fn: Callable[[str, Ctx], str]) -> Callable:
    """The field is there and the edit changes it."""

    def applies(c: Ctx) -> bool:
        try:
            value = at(c.record, path)
        except (KeyError, TypeError):
            return False
        return isinstance(value, str) and fn(value, c) != value

    return applies


def both(*preds) -> Callable:
    return lambda c: all(p(c) for p in preds)


def negated(text: str, c: Ctx) -> str:
    return AUX.sub(lambda m: m.group(1) + " not", text, count=1)


def flipped(text: str, c: Ctx) -> str:
    for a, b in DIRECTION_SWAP:
        if re.search(rf"\b{a}\b", text):
            return re.sub(rf"\b{a}\b", b, text, count=1)
    return text


def unnegated(text: str, c: Ctx) -> str:
    return NEGATORS.sub("", text, count=1)


def swapped_cause(text: str, c: Ctx) -> str:
    first, _, rest = text.partition(", so ")
    rest, dot, tail = rest.partition(". ")
    return f"{rest.rstrip('.')}, so {first[0].lower()}{first[1:]}.{' ' + tail if dot else ''}"


def status(value: str | None) -> Callable:
    return lambda c: c.m["correctness"]["status"] == value


def inexact(c: Ctx) -> bool:
    err = c.m["correctness"].get("max_abs_err")
    return isinstance(err, (int, float)) and err > 0


def no_capture(c: Ctx) -> bool:
    from optrace.gates.trace.model import Evidence
    from optrace.gates.trace.ncu_attribution import has_usable_capture

    return not has_usable_capture(Evidence(c.packet, c.bench.trace))


def with_capture(c: Ctx) -> bool:
    return capture_for_signals(c.packet.data) is not None


def own_after_capture(c: Ctx) -> bool:
    """A strategy with its own after-profile conclusion, which is not its parent's."""
    own = c.agent["profiler"]
    return bool(own.get("ncu_measured_the_kernel_under_test") and own.get("conclusion"))


def measured_anti(c: Ctx) -> bool:
    return isinstance(c.m.get("improve_pct_vs_floor"), (int, float)) and c.packet.data["seg_kind"] != "curated-pitfall"


def slower_anti(c: Ctx) -> bool:
    return measured_anti(c) and c.m["improve_pct_vs_floor"] < 0


def has_trace(c: Ctx) -> bool:
    return "trace" in c.pl


def has_diff(c: Ctx) -> bool:
    return (c.packet.code_file or "").endswith(".diff") and "snippet" in c.pl.get("implementation", {})


def removed_lines(c: Ctx) -> list[str]:
    return [
        ln for ln in c.packet.code.splitlines() if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()
    ]


def added_lines(c: Ctx) -> list[str]:
    return [
        ln for ln in c.packet.code.splitlines() if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip()
    ]


def many_removed(c: Ctx) -> bool:
    return has_diff(c) and len(removed_lines(c)) >= 3 and len(added_lines(c)) >= 1


def blank_added(c: Ctx) -> bool:
    return has_diff(c) and any(ln.startswith("+") and not ln[1:].strip() for ln in c.packet.code.splitlines())


def kernel_spans(c: Ctx):
    return kernel_functions((c.packet.code or "").splitlines())


def has_kernels(c: Ctx) -> bool:
    return bool(c.pl.get("implementation", {}).get("core_kernel_name")) and bool(kernel_spans(c))


def host_helpers(c: Ctx) -> list[str]:
    """Functions of the source that are not kernel functions (`run`, a launcher)."""
    kernels = {s.name for s in kernel_spans(c)}
    return [n for n in re.findall(r"(?m)^def (\w+)\(", c.packet.code or "") if n not in kernels]


def has_host_helper(c: Ctx) -> bool:
    return has_kernels(c) and bool(host_helpers(c))


def sibling(rtype: str, need: Callable[[dict], bool] = lambda r: True) -> Callable:
    return lambda c: any(need(rec) for _, rec in c.others(rtype))


def other_of(c: Ctx, rtype: str, need: Callable[[dict], bool] = lambda r: True) -> dict:
    return next(rec for _, rec in c.others(rtype) if need(rec))


def has_mechanism(rec: dict) -> bool:
    return bool(rec["payload"].get("mechanism"))


def multi_lever(c: Ctx) -> bool:
    """A failed lever listed with others in one version: their packets share that version's prose."""
    version = c.packet.provenance.get("version")
    return c.packet.data["seg_kind"] in ("deadend-item", "deadend-experiment") and any(
        c.bench.packet_at(rel).provenance.get("version") == version for rel, _ in c.others(A)
    )


def wrong_lever_cause(c: Ctx) -> str:
    """The cause sentence the trace states about another lever of the same version."""
    version = c.packet.provenance.get("version")
    rel, rec = next(
        (rel, rec) for rel, rec in c.others(A) if c.bench.packet_at(rel).provenance.get("version") == version
    )
    return rec["payload"]["established_fact"]["mechanism"]


def lever_named(c: Ctx) -> bool:
    return multi_lever(c) and wrong_lever_cause(c) != c.pl["established_fact"]["mechanism"]


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

F3 = [
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


def foreign_tags(c: Ctx) -> list[str]:
    """Tags of other segments that say something this packet does not (a tag every packet supports,
    `one-kernel`, is no fabrication)."""
    from optrace.wording import content_words

    here = set().union(*(content_words(i["text"]) for i in c.agent["evidence"]))
    return [
        tag
        for _, rec in c.others(S)
        for tag in rec["retrieval"]["technique_tags"]
        if tag not in c.record["retrieval"]["technique_tags"] and not content_words(tag.replace("-", " ")) <= here
    ]


def subject_of(record: dict) -> str:
    """What a record is about: its lever, change or the kernel's approach."""
    pl = record["payload"]
    return pl.get("attempted") or pl.get("change") or pl.get("trace", {}).get("builds_on", {}).get("approach", "")


def theirs(c: Ctx, rtype: str, path: str):
    """The value at path of a record of the trace about something else (not a pitfall of this very
    lever), one that differs from this record's."""
    mine = at(c.record, path) if has_path(c.record, path) else None
    own = subject_of(c.record)
    for _, rec in c.others(rtype):
        if names(subject_of(rec), own) or names(own, subject_of(rec)):
            continue
        value = at(rec, path) if has_path(rec, path) else None
        if value and value != mine and value != TEMPLATE_LESSON:  # the pipeline's lesson is true of any lever
            return value
    return None


TEMPLATE_LESSON = "Do not retry this lever while the cause above holds."


def has_path(record: dict, path: str) -> bool:
    try:
        at(record, path)
    except (KeyError, TypeError):
        return False
    return True


def borrowed(rtype: str, path: str, into: str | None = None) -> Callable:
    """Set `into` (default: path) to another record's value at path."""
    return lambda r, c: put(r, into or path, theirs(c, rtype, path))


def can_borrow(rtype: str, path: str, into: str | None = None) -> Callable:
    return lambda c: has_path(c.record, into or path) and theirs(c, rtype, path) is not None


F4 = [
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

F5 = [
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


F6 = [
    Case(
        "6 removed lines and one short added line",
        6,
        S,
        lambda r, c: r["payload"]["implementation"].update(
            snippet=snippet_of(["@@"] + removed_lines(c)[:6] + [min(added_lines(c), key=len)])
            if False
            else snippet_of(removed_lines(c)[:6] + [min(added_lines(c), key=len)])
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

CASES = F1 + F2 + F3 + F4 + F5 + F6 + F7


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
    Case("t one symptom left out", 0, S, edit("retrieval.signals.symptoms", lambda t, c: t), (), lambda c: False),
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
TWINS = [t for t in TWINS if t.name != "t one symptom left out"] + [
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


# --- running them -----------------------------------------------------------------------------------


def contexts(bench, case: Case):
    """The first record of the case's type it applies to, as a Ctx (or None)."""
    for i, (rel, rec) in enumerate(bench.records):
        if rec["type"] != case.rtype:
            continue
        c = Ctx(bench, i, rel, rec)
        try:
            if case.applies is None or case.applies(c):
                return c
        except (KeyError, IndexError, StopIteration, TypeError, AttributeError):
            continue
    return None


def verdict(bench, c: Ctx, case: Case):
    rows = [[rel, copy.deepcopy(rec)] for rel, rec in bench.records]
    case.mutate(rows[c.i][1], Ctx(bench, c.i, c.rel, copy.deepcopy(c.record)))
    if case.cite:
        resync(rows[c.i][1], c.packet)
    return validate_records(bench, rows, LiveStore())[c.i]


def params(cases):
    return [pytest.param(t, case, id=f"{t}-{case.name}") for case in cases for t in NAMES]


@pytest.mark.parametrize("trace, case", params(CASES))
def test_a_planted_fabrication_fails(realistic, trace, case):
    if trace not in realistic:
        pytest.skip(f"{trace}: ../shared/data is absent")
    c = contexts(realistic[trace], case)
    if c is None:
        pytest.skip(f"{trace} has no {case.rtype} record this kind applies to")
    v = verdict(realistic[trace], c, case)
    messages = [m for g in v.failed for m in v.gates[g][1]]
    assert set(v.failed) & set(case.gates), (case.name, v.failed, messages[:4])
    assert not any(CRASH.search(m) for m in messages), messages


@pytest.mark.parametrize("trace, case", params(TWINS))
def test_an_honest_twin_passes(realistic, trace, case):
    if trace not in realistic:
        pytest.skip(f"{trace}: ../shared/data is absent")
    c = contexts(realistic[trace], case)
    if c is None:
        pytest.skip(f"{trace} has no {case.rtype} record this twin applies to")
    v = verdict(realistic[trace], c, case)
    assert v.failed == [], (case.name, [m for g in v.failed for m in v.gates[g][1]][:4])


def test_at_least_70_kinds_and_30_twins_each_on_three_realistic_traces(realistic):
    """The issue's count: kinds (and twins) that apply on three or more realistic traces, every family
    among them; the others (a multi-lever revert, a capture, next steps: what only some traces hold)
    run where they apply, beyond the count."""
    if len(realistic) < 3:
        pytest.skip("../shared/data is absent")
    on = {case.name: [t for t in realistic if contexts(realistic[t], case) is not None] for case in CASES + TWINS}
    kinds = [case for case in CASES if len(on[case.name]) >= 3]
    twins = [case for case in TWINS if len(on[case.name]) >= 3]
    assert len(kinds) >= 70 and len(twins) >= 30, (len(kinds), len(twins))
    assert {case.family for case in kinds} == {1, 2, 3, 4, 5, 6, 7}
    assert all(on[case.name] for case in CASES + TWINS), [n for n, ts in on.items() if not ts]


def test_every_drafted_record_of_every_realistic_trace_passes(realistic):
    for name, bench in realistic.items():
        for v in validate_records(bench, bench.records, LiveStore()):
            assert v.failed == [], (name, [m for g in v.failed for m in v.gates[g][1]][:4])
