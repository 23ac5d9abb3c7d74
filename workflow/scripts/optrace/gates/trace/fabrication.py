"""Gate `no-fabrication`: every number, every gain and every stated cause of a record is its packet's.

Four rules, for records mined from a trace (this is a trace gate: the real store's curated records
never meet it).

1. **Numbers.** Every string and every object key of the whole record is read with the number reader
   of gates.trace.numbers (digits glued to letters, after hyphens or dots, in CJK text, full-width,
   vulgar fractions, number words), and every JSON number is a number; each must be a number of the
   packet: of its agent-facing layer (strings, keys and numbers) or its code file (a diff's ---/+++/@@
   header lines are positions, not evidence). A record number matches when its value equals a packet
   number (22 = 22.0), or it is written with at least one decimal and a packet number rounds to it at
   that precision (18.5 from 18.54, never 19 from 18.54). Signs are dropped in text (a slowdown is
   written both as -3.3% and as "3.3% slower"); rule 2 binds the signed fields. A percentage the packet
   does not state may still be the packet's own improvement (rule 2's value) rounded to the precision
   written. Nothing the record itself says is trusted as an input.
   A unit is part of the claim: a number the record writes as a percentage, a factor (`4x`, "twice",
   "halved", "an order of magnitude") or a time (`ns`, `us`, `ms`) -- in text, or as the JSON value of
   a key ending in `pct`, `_us`, `_ms`, `_ns` -- must be one the packet writes with that unit (its text
   and code, or its numbers under such keys); a percentage may also be the improvement as above. So a
   geomean of 21.3 us is not "21.3% faster", 17.35 us is not "17.35 ms", and 13.41% is not "13.41x".
   A string holding a bidirectional control character (U+202A-202E, U+2066-2069, LRM/RLM/ALM) fails:
   it displays its digits in another order than the one read.
   Left out, because another gate binds them byte for byte: payload.implementation.snippet and
   dispatch_snippet (verbatim), and the fields bound to the packet's value for them -- schema, id,
   episode_key, level, type, retrieval.scope.<target's keys> (layout), evidence.raw.source_repo,
   version and git_commit (provenance): any other value fails that gate. A string that is one of the contract's enumerated values
   (`one-line`, `lower-better`) is a category, not a claim. Everything else is read: keys, evidence.raw,
   a `snippet` key anywhere but under payload.implementation, the rank.
2. **Gains.** The packet measures one improvement: measurements.improve_pct_vs_floor, i.e.
   (floor_before_us - geomean_us) / floor_before_us x 100. A strategy's gain is that improvement:
   basis `measured`, kind `performance`, primary `latency` (a latency metric `lower-better`), gain.pct and every metric's (and
   regression's) delta_pct equal to it with the same sign -- either exactly improve_pct_vs_floor, or the
   exact improvement rounded half-even to the decimals written (at least one). An anti-strategy or a
   reference kernel claims no gain: kind `none`, pct null, no delta_pct/before/after. Basis `measured`
   needs a measured geomean in the packet; `reported` is never a mined record's basis (its numbers are
   the trace's own measurements). gain.correctness is the packet's: gate = correctness.status,
   max_diff = correctness.max_abs_err. evidence.raw.effect holds the packet's measurements only:
   basis (`measured` exactly when the packet has a geomean), new_geomean_us = geomean_us, and on a
   strategy parent_geomean_us = floor_before_us and delta_pct as gain.pct; any other number in it
   (baseline_geomean_us: the packet states none) fails.
3. **Rank.** worth.rank is the stage's to compute: a distilled record carries the unranked
   {score: 0.0, tier: provisional} and nothing else (a staged copy, under records/, is the stage's).
4. **Causes.** The prose that explains -- payload.mechanism, payload.problem.bottleneck,
   payload.established_fact.mechanism and every established_fact.condition value -- and the prose that
   recounts the step -- payload.change, attempted, lesson, trace.builds_on.approach, problem.statement and every item of
   payload.next_steps, retrieval.triggers and retrieval.signals.symptoms -- uses only words the packet
   uses (a change the step never made, "uses TMA multicast", or a symptom nobody observed fails): every word of 4+ letters (lower-cased, a plural's trailing `s` ignored), grammar words
   that join a cause to its effect (because, since, which, ... : GRAMMAR) aside, appears in the
   packet's agent-facing text or code. A cause copied or condensed from the packet passes; one that
   names a mechanism the packet never mentions ("bank conflicts", "register spills") fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from functools import cached_property, lru_cache
from typing import Any, TypeGuard

from optrace.gates.store.model import Gate, RecordView, format_loc, obj
from optrace.gates.store.schema import CONTRACT
from optrace.gates.trace.model import Packet, PacketEvidence, needs_packet
from optrace.gates.trace.ncu_attribution import QUOTED_CODE
from optrace.gates.trace.numbers import BIDI_CONTROL, comparable, decimals, magnitude, number_tokens, unit_tokens

DIFF_HEADER = re.compile(r"^(?:--- |\+\+\+ |@@ ).*$", re.M)
UNRANKED = {"score": 0.0, "tier": "provisional"}
GROUNDED_PROSE = (
    ("payload", "mechanism"),
    ("payload", "problem", "bottleneck"),
    ("payload", "established_fact", "mechanism"),
)
# what the record says was done, tried, built on, learned and observed: the packet's account, not a new one
GROUNDED_ACCOUNT = (
    ("payload", "change"),
    ("payload", "attempted"),
    ("payload", "lesson"),
    ("payload", "trace", "builds_on", "approach"),
    ("payload", "problem", "statement"),
)
GROUNDED_LISTS = (("payload", "next_steps"), ("retrieval", "triggers"), ("retrieval", "signals", "symptoms"))
CONDITION = ("payload", "established_fact", "condition")
WORD = re.compile(r"[a-z]{4,}")
# Grammar, not content: the words that join a cause to its effect carry no claim of their own.
GRAMMAR = frozenset(
    [
        "because",
        "since",
        "which",
        "that",
        "this",
        "these",
        "those",
        "when",
        "where",
        "while",
        "with",
        "without",
        "from",
        "into",
        "onto",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "each",
        "only",
        "also",
        "more",
        "less",
        "most",
        "much",
        "many",
        "some",
        "such",
        "over",
        "under",
        "both",
        "does",
        "done",
        "would",
        "could",
        "should",
        "cannot",
        "have",
        "having",
        "been",
        "being",
        "were",
        "what",
        "whose",
        "other",
        "same",
        "very",
        "thus",
        "hence",
        "therefore",
        "cause",
        "causes",
        "caused",
        "result",
        "results",
        "resulting",
        "leads",
        "lead",
        "leading",
        "makes",
        "make",
        "made",
        "reason",
        "through",
        "across",
        "after",
        "before",
        "about",
        "between",
        "within",
        "here",
        "just",
        "even",
        "still",
        "already",
        "once",
        "every",
        "first",
        "second",
    ]
) | frozenset(
    # the imperative of a lesson ("do not retry this lever while the cause above holds; keep the kernel
    # without it; try instead ..."): advice, which names no mechanism and states no fact of its own
    ["retry", "keep", "above", "holds", "instead", "avoid"]
)
EFFECT_NUMBERS = ("new_geomean_us", "parent_geomean_us", "baseline_geomean_us", "delta_pct")


def tokens(text: str) -> Iterator[tuple[str, bool]]:
    """(number token, is a percentage) for every number the text states."""
    yield from number_tokens(text)


@lru_cache(maxsize=1)
def enum_strings() -> frozenset[str]:
    """Every string the contract enumerates (enum members and consts): categories, not claims."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum" and isinstance(value, list):
                    found.update(v for v in value if isinstance(v, str))
                elif key == "const" and isinstance(value, str):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(CONTRACT.read_text(encoding="utf-8")))
    return frozenset(found)


def leaves(value: Any, path: tuple, out: list) -> list:
    """(path, leaf) for every string, number and object key of a JSON value; a key's path ends in
    `(key,)` plus the marker "<key>" so a message can say that a key was read."""
    stack = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                out.append((where + (key, "<key>"), key))
                stack.append((where + (key,), item))
        elif isinstance(node, list):
            stack.extend((where + (i,), item) for i, item in enumerate(node))
        elif isinstance(node, str) or type(node) in (int, float):
            out.append((where, node))
    return out


KEY_UNITS = (("pct", "%"), ("_us", "us"), ("_ms", "ms"), ("_ns", "ns"))


def key_unit(path: tuple) -> str | None:
    """The unit of a JSON number from its key (`delta_pct` -> %, `geomean_us` -> us), or None."""
    return suffix_unit(next((p for p in reversed(path) if isinstance(p, str)), ""))


def suffix_unit(key: str) -> str | None:
    return next((unit for suffix, unit in KEY_UNITS if key.endswith(suffix)), None)


def leaf_units(path: tuple, value: Any) -> Iterator[tuple[str, str]]:
    """(number token, unit) for every number of one leaf that is written with a unit."""
    if isinstance(value, str):
        yield from unit_tokens(value)
    elif (unit := key_unit(path)) is not None and path[-1:] != ("<key>",):
        yield repr(value), unit


def leaf_tokens(path: tuple, value: Any) -> Iterator[tuple[str, bool]]:
    """The number tokens of one leaf; a JSON number under a `*pct` key is a percentage."""
    if isinstance(value, str):
        yield from number_tokens(value)
    else:
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        yield repr(value), key.endswith("pct")


def rounds_to(value: Decimal, target: Decimal) -> bool:
    if not (comparable(value) and comparable(target)):
        return False
    quantum = Decimal(1).scaleb(-decimals(target))
    try:
        return any(value.quantize(quantum, rounding=mode) == target for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN))
    except ArithmeticError:  # more digits than the context holds: an absurd token, not a rounding
        return False


@lru_cache(maxsize=1 << 12)  # keyed by the packet's numbers themselves: no state crosses packets
def roundings(values: frozenset[Decimal], places: int) -> frozenset[Decimal]:
    """Every value v with more decimals than `places` rounded to `places` as rounds_to rounds it: a
    target of `places` decimals is in this set exactly when rounds_to(v, target) for some v."""
    quantum, out = Decimal(1).scaleb(-places), set()
    for v in values:
        if decimals(v) <= places or not comparable(v):
            continue
        try:  # rounds_to tries half-up first: when that cannot be computed it is False for v
            out.add(v.quantize(quantum, rounding=ROUND_HALF_UP))
            out.add(v.quantize(quantum, rounding=ROUND_HALF_EVEN))
        except ArithmeticError:
            continue
    return frozenset(out)


def matches(values: frozenset[Decimal], value: Decimal) -> bool:
    if value in values:
        return True
    places = decimals(value)
    return places > 0 and comparable(value) and value in roundings(values, places)


def magnitudes(found: set[str]) -> frozenset[Decimal]:
    # tokens repeat a lot (a kernel's constants, per-shape tables): convert each distinct one once
    return frozenset(v for v in map(magnitude, found) if v is not None)


def _number(v: Any) -> TypeGuard[int | float]:
    return type(v) in (int, float)


def _dec(v: float | int) -> Decimal:
    return Decimal(repr(v))


@dataclass(frozen=True)
class Pool:
    """What a packet states: its numbers, its words and its one measured improvement."""

    packet: Packet

    @cached_property
    def _texts(self) -> tuple[list[str], list[tuple[str, int | float]]]:
        """Every string and object key of the agent-facing layer (the leaves `leaves` reads), and every
        JSON number with the nearest object key above it (which says its unit); no paths are built."""
        texts: list[str] = []
        numbers: list[tuple[str, int | float]] = []
        stack = [("", self.packet.agent_facing)]
        while stack:
            key, node = stack.pop()
            if isinstance(node, dict):
                for k, item in node.items():
                    texts.append(k)
                    stack.append((k, item))
            elif isinstance(node, list):
                stack.extend((key, item) for item in node)
            elif isinstance(node, str):
                texts.append(node)
            elif type(node) in (int, float):
                numbers.append((key, node))
        return texts, numbers

    @cached_property
    def stated(self) -> frozenset[Decimal]:
        texts, numbers = self._texts
        found = {repr(value) for _, value in numbers}
        for t in texts:
            found.update(tok for tok, _ in number_tokens(t))
        return magnitudes(found)

    @cached_property
    def code(self) -> str:
        code = self.packet.code or ""
        if (self.packet.code_file or "").endswith(".diff"):
            code = DIFF_HEADER.sub("", code)
        return code

    @cached_property
    def with_unit(self) -> dict[str, frozenset[Decimal]]:
        """unit -> the numbers the packet writes with that unit (text, code, keys ending pct/_us/...)."""
        found: dict[str, set[str]] = {}
        texts, numbers = self._texts
        for text in texts:
            for token, unit in unit_tokens(text):
                found.setdefault(unit, set()).add(token)
        for key, value in numbers:
            if (key_unit := suffix_unit(key)) is not None:
                found.setdefault(key_unit, set()).add(repr(value))
        for token, unit in unit_tokens(self.code):
            found.setdefault(unit, set()).add(token)
        return {unit: magnitudes(tokens) for unit, tokens in found.items()}

    def supports_unit(self, value: Decimal, unit: str) -> bool:
        return matches(self.with_unit.get(unit, frozenset()), value) or (
            unit == "%" and self.is_improvement_magnitude(value)
        )

    @cached_property
    def in_code(self) -> frozenset[Decimal]:
        return magnitudes({tok for tok, _ in number_tokens(self.code)})

    @cached_property
    def words(self) -> frozenset[str]:
        texts, _ = self._texts
        # the target's scope names the operator the statement describes (dense-gemm-shape-sweep)
        scope = [v for v in obj(self.packet.target, "scope").values() if isinstance(v, str)]
        # a packet repeats its words: stem each distinct one once (the same set)
        return frozenset(map(stem, set(WORD.findall(("\n".join(texts + scope) + "\n" + self.code).lower()))))

    def supports(self, value: Decimal) -> bool:
        return matches(self.stated, value) or matches(self.in_code, value)

    @cached_property
    def measurements(self) -> dict:
        return obj(self.packet.agent_facing, "measurements")

    @cached_property
    def improvement(self) -> tuple[Decimal, Decimal | None] | None:
        """(improve_pct_vs_floor as stated, the exact improvement from floor and geomean or None)."""
        m = self.measurements
        pct, floor, geo = m.get("improve_pct_vs_floor"), m.get("floor_before_us"), m.get("geomean_us")
        if not _number(pct):
            return None
        exact = None
        if _number(floor) and _number(geo) and floor > 0:
            exact = (_dec(floor) - _dec(geo)) / _dec(floor) * 100
        return _dec(pct), exact

    def is_improvement(self, value: Any) -> bool:
        """value is the packet's improvement: same sign, exactly as stated or the exact value rounded
        half-even to the decimals written (at least one)."""
        if not _number(value) or self.improvement is None:
            return False
        stated, exact = self.improvement
        v = _dec(value)
        if not v.is_finite() or (v > 0) != (stated > 0) or (v < 0) != (stated < 0):
            return False
        if v == stated:
            return True
        d = decimals(v)
        return (
            exact is not None
            and 1 <= d <= 12
            and comparable(v)
            and exact.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_EVEN) == v
        )

    def is_improvement_magnitude(self, value: Decimal) -> bool:
        """A percentage in prose that is the improvement's magnitude, rounded to its precision."""
        if self.improvement is None:
            return False
        stated, exact = self.improvement
        return any(
            x is not None and (abs(x) == value or (decimals(value) > 0 and rounds_to(abs(x), value)))
            for x in (stated, exact)
        )


def stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 4 else word


# --- rule 1: numbers --------------------------------------------------------------------------


def bound_fields(packet: Packet) -> dict[tuple, Any]:
    """Fields another gate binds to the packet, with the packet's value for each."""
    target, prov = packet.target, packet.provenance
    bound = {
        ("schema",): target.get("schema"),
        ("id",): target.get("id"),
        ("episode_key",): target.get("episode_key"),
        ("level",): target.get("level"),
        ("type",): packet.data.get("record_type"),
        ("evidence", "raw", "source_repo"): prov.get("source_label"),
        ("evidence", "raw", "version"): prov.get("version"),
        ("evidence", "raw", "git_commit"): prov.get("commit"),
    }
    bound.update({("retrieval", "scope", k): v for k, v in obj(target, "scope").items()})
    return bound


def is_exempt(path: tuple, value: Any, bound: dict[tuple, Any], staged: bool) -> bool:
    if path in QUOTED_CODE:
        return True
    if path in bound and isinstance(value, str):  # its gate fails any other value
        return True
    if staged and path[:2] == ("worth", "rank"):
        return True
    return isinstance(value, str) and value in enum_strings()


def number_problems(view: RecordView, pool: Pool) -> list[str]:
    bound = bound_fields(pool.packet)
    staged = view.relpath.startswith("records/")
    out = []
    for path, value in leaves(view.record, (), []):
        if is_exempt(path, value, bound, staged):
            continue
        if isinstance(value, str) and BIDI_CONTROL.search(value):
            out.append(
                f"{format_loc(path)}: holds a bidirectional control character, which shows a reader other "
                "text than the gates read"
            )
        for token, is_pct in leaf_tokens(path, value):
            number = magnitude(token)
            if number is None:
                out.append(f"{format_loc(path)}: {token!r} is not a finite number")
                continue
            if pool.supports(number) or (is_pct and pool.is_improvement_magnitude(number)):
                continue
            out.append(f"{format_loc(path)}: {token!r} is not a number of the packet")
        for token, unit in leaf_units(path, value):
            number = magnitude(token)
            if number is not None and not pool.supports_unit(number, unit):
                out.append(
                    f"{format_loc(path)}: {token!r} is written in {unit!r}, but the packet never states {token} {unit}"
                )
    return out


# --- rule 2: gains ----------------------------------------------------------------------------


def metric_lists(gain: dict) -> Iterator[tuple[str, dict]]:
    for key in ("metrics", "regressions"):
        items = gain.get(key)
        for i, metric in enumerate(items if isinstance(items, list) else []):
            if isinstance(metric, dict):
                yield f"worth.gain.{key}[{i}]", metric


def gain_problems(record: dict, pool: Pool) -> list[str]:
    gain = obj(record, "worth", "gain")
    measured = _number(pool.measurements.get("geomean_us"))
    out = []
    basis, kind = gain.get("basis"), gain.get("kind")
    if basis == "reported":
        out.append("worth.gain.basis: 'reported', but a mined record's numbers are the trace's own measurements")
    if basis == "measured" and not measured:
        out.append("worth.gain.basis: 'measured', but the packet measured no geomean")
    if record.get("type") == "strategy":
        if pool.improvement is None:
            return out + ["worth.gain: a strategy's gain needs the packet's measured improvement, and it has none"]
        if "basis" in gain and basis != "measured":
            out.append(f"worth.gain.basis: {basis!r}, but the packet measured this gain")
        if "kind" in gain and kind != "performance":  # absent: the profile's patch gain-kind fails it
            out.append(f"worth.gain.kind: {kind!r}, but the packet's measured gain is a latency improvement")
        for where, metric in metric_lists(gain):
            if metric.get("metric") == "latency" and metric.get("direction", "lower-better") != "lower-better":
                out.append(f"{where}.direction: {metric.get('direction')!r}, but lower latency is better")
        if gain.get("primary") != "latency":
            out.append(f"worth.gain.primary: {gain.get('primary')!r}, but the packet measures latency")
        if not pool.is_improvement(gain.get("pct")):
            out.append(
                f"worth.gain.pct: {gain.get('pct')!r} is not the packet's improvement "
                f"{pool.improvement[0]} (same sign, rounded half-even to the decimals written)"
            )
        for where, metric in metric_lists(gain):
            if metric.get("delta_pct") is not None and not pool.is_improvement(metric.get("delta_pct")):
                out.append(
                    f"{where}.delta_pct: {metric.get('delta_pct')!r} is not the packet's improvement "
                    f"{pool.improvement[0]}"
                )
            for key in ("before", "after"):
                if metric.get(key) is not None:
                    out.append(f"{where}.{key}: the packet measures no absolute {key} value to serve")
    else:
        if "kind" in gain and kind != "none":
            out.append(f"worth.gain.kind: {kind!r}, but a {record.get('type')} claims no gain")
        if gain.get("pct") is not None:
            out.append(f"worth.gain.pct: {gain.get('pct')!r}, but a {record.get('type')} claims no gain")
        for where, metric in metric_lists(gain):
            for key in ("delta_pct", "before", "after"):
                if metric.get(key) is not None:
                    out.append(f"{where}.{key}: {metric.get(key)!r}, but a {record.get('type')} claims no gain")
    out += correctness_problems(gain, pool)
    return out + effect_problems(record, pool)


def correctness_problems(gain: dict, pool: Pool) -> list[str]:
    if "correctness" not in gain:
        return []
    claimed = gain.get("correctness")
    if not isinstance(claimed, dict):
        return ["worth.gain.correctness: not an object"]
    packet = pool.measurements.get("correctness") or {}
    packet = packet if isinstance(packet, dict) else {}
    out = []
    if "gate" in claimed and claimed["gate"] != packet.get("status"):
        out.append(
            f"worth.gain.correctness.gate: {claimed['gate']!r} is not the packet's correctness status "
            f"{packet.get('status')!r}"
        )
    if "max_diff" in claimed and not (
        _number(claimed["max_diff"]) and claimed["max_diff"] == packet.get("max_abs_err")
    ):
        out.append(
            f"worth.gain.correctness.max_diff: {claimed['max_diff']!r} is not the packet's max_abs_err "
            f"{packet.get('max_abs_err')!r}"
        )
    return out


def effect_problems(record: dict, pool: Pool) -> list[str]:
    effect = obj(record, "evidence", "raw", "effect")
    m = pool.measurements
    measured = _number(m.get("geomean_us"))
    out = []
    if effect.get("basis") != ("measured" if measured else "qualitative"):
        out.append(
            f"evidence.raw.effect.basis: {effect.get('basis')!r}, but the packet "
            f"{'measured' if measured else 'did not measure'} a geomean"
        )
    wanted = {"new_geomean_us": m.get("geomean_us")}
    if record.get("type") == "strategy":
        wanted["parent_geomean_us"] = m.get("floor_before_us")
    for key, value in effect.items():
        if key not in EFFECT_NUMBERS or value is None:
            continue
        if key == "delta_pct":
            ok = record.get("type") == "strategy" and pool.is_improvement(value)
        else:
            ok = key in wanted and _number(value) and _number(wanted[key]) and value == wanted[key]
        if not ok:
            out.append(
                f"evidence.raw.effect.{key}: {value!r} is not the packet's measurement"
                + (f" {wanted[key]!r}" if key in wanted else "")
            )
    return out


def rank_problems(view: RecordView) -> list[str]:
    if view.relpath.startswith("records/"):
        return []
    rank = obj(view.record, "worth").get("rank")
    if rank is not None and rank != UNRANKED:
        return [
            f"worth.rank: {json.dumps(rank)[:80]} is a self-score; a distilled record carries "
            f"{json.dumps(UNRANKED)} and the stage computes the rank"
        ]
    return []


# --- rule 4: causes ---------------------------------------------------------------------------


def grounded_texts(record: dict) -> Iterator[tuple[str, str]]:
    for path in GROUNDED_PROSE + GROUNDED_ACCOUNT:
        value = obj(record, *path[:-1]).get(path[-1])
        if isinstance(value, str):
            yield format_loc(path), value
    for path in GROUNDED_LISTS:
        items = obj(record, *path[:-1]).get(path[-1])
        for i, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, str):
                yield f"{format_loc(path)}[{i}]", item
    for key, value in obj(record, *CONDITION).items():
        if isinstance(value, str):
            yield format_loc(CONDITION + (key,)), value


def cause_problems(record: dict, pool: Pool) -> list[str]:
    out = []
    for where, value in grounded_texts(record):
        missing = sorted({w for w in WORD.findall(value.lower()) if w not in GRAMMAR and stem(w) not in pool.words})
        if missing:
            out.append(
                f"{where}: {', '.join(map(repr, missing[:5]))} appear nowhere in the packet: a cause must "
                "be the packet's own"
            )
    return out


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    pool = Pool(ev.packet)
    problems = (
        number_problems(view, pool)
        + gain_problems(view.record, pool)
        + rank_problems(view)
        + cause_problems(view.record, pool)
    )
    return [f"{view.relpath}: {p}" for p in problems]


GATE = Gate("no-fabrication", "every number (small integers too), gain and cause is the packet's", check=check)
