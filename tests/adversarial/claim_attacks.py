"""What the planted kinds and honest twins of test_claims are made of: a case (its family, the record
type it edits, the edit, the gates that own it, which record it applies to), the record it edits with
its packet, the edits, and what a case needs of its record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from optrace.gates.trace.claims import names
from optrace.kernelcode import kernel_functions
from optrace.pipeline_facts import capture_for_signals
from optrace.wording import content_words

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
    _rel, rec = next(
        (rel, rec) for rel, rec in c.others(A) if c.bench.packet_at(rel).provenance.get("version") == version
    )
    return rec["payload"]["established_fact"]["mechanism"]


def lever_named(c: Ctx) -> bool:
    return multi_lever(c) and wrong_lever_cause(c) != c.pl["established_fact"]["mechanism"]


def foreign_tags(c: Ctx) -> list[str]:
    """Tags of other segments that say something this packet does not (a tag every packet supports,
    `one-kernel`, is no fabrication)."""

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
