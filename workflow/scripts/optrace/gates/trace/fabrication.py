"""Gate `no-fabrication`: every number and every gain of a record is its packet's.

Three rules, for records mined from a trace (this is a trace gate: the real store's curated records
never meet it). What each sentence says with those numbers is the claims gate's rule.

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
   a `snippet` key anywhere but under payload.implementation, the rank; the claims block
   (evidence.raw.evidence_extra.claims) is the claims gate's, which reads its numbers with their slots.
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
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from optrace.gates.store.model import Gate, RecordView, format_loc, obj
from optrace.gates.store.schema import CONTRACT
from optrace.gates.trace.model import Packet, PacketEvidence, needs_packet
from optrace.gates.trace.ncu_attribution import QUOTED_CODE
from optrace.gates.trace.numbers import BIDI_CONTROL, magnitude, number_tokens, unit_tokens
from optrace.gates.trace.pool import Pool, suffix_unit
from optrace.gates.trace.pool import number as _number

UNRANKED = {"score": 0.0, "tier": "provisional"}
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


def leaves(view: RecordView) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) for every string, number and object key of the record but its claims block (the
    claims gate reads it: each number by the slot it names); a key's path ends in `(key,)` plus the
    marker "<key>" so a message can say that a key was read."""
    for where, value, is_key in view.leaves:
        yield (where + (value, "<key>") if is_key else where), value


def key_unit(path: tuple) -> str | None:
    """The unit of a JSON number from its key (`delta_pct` -> %, `geomean_us` -> us), or None."""
    return suffix_unit(next((p for p in reversed(path) if isinstance(p, str)), ""))


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


@lru_cache(maxsize=1 << 15)  # a trace's records repeat their keys and many of their strings
def string_numbers(text: str) -> tuple[bool, tuple[tuple[str, bool], ...], tuple[tuple[str, str], ...]]:
    """(holds a bidirectional control, its number tokens, its numbers written with a unit) of a string."""
    return BIDI_CONTROL.search(text) is not None, number_tokens(text), unit_tokens(text)


def number_problems(view: RecordView, pool: Pool) -> list[str]:
    bound = bound_fields(pool.packet)
    staged = view.relpath.startswith("records/")
    out = []
    for path, value in leaves(view):
        if is_exempt(path, value, bound, staged):
            continue
        if isinstance(value, str):
            bidi, found, with_units = string_numbers(value)
            if not (bidi or found or with_units):  # most strings state no number: nothing to judge
                continue
        else:
            bidi, found, with_units = False, tuple(leaf_tokens(path, value)), tuple(leaf_units(path, value))
        if bidi:
            out.append(
                f"{format_loc(path)}: holds a bidirectional control character, which shows a reader other "
                "text than the gates read"
            )
        for token, is_pct in found:
            number = magnitude(token)
            if number is None:
                out.append(f"{format_loc(path)}: {token!r} is not a finite number")
                continue
            if pool.supports(number) or (is_pct and pool.is_improvement_magnitude(number)):
                continue
            out.append(f"{format_loc(path)}: {token!r} is not a number of the packet")
        for token, unit in with_units:
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


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    pool = Pool(ev.packet)
    problems = number_problems(view, pool) + gain_problems(view.record, pool) + rank_problems(view)
    return [f"{view.relpath}: {p}" for p in problems]


GATE = Gate("no-fabrication", "every number (small integers too), gain and cause is the packet's", check=check)
