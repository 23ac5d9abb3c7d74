"""Gate `no-fabrication`: every number a record serves is a number of its packet.

Served numbers: JSON numbers and number tokens in the strings of payload, retrieval, evidence.summary
and worth.gain (object keys are field names, not claims; quoted code is the verbatim gate's). The
packet's numbers: the same from its agent_facing layer and its code file (a diff's ---/+++/@@ header
lines are positions, not evidence).

A number token is a run of digits, optionally with a fraction and an exponent (`18.54`, `.5`, `1e-5`),
that is not the tail of an identifier: preceded by no letter, digit, `_` or `.`, and not by a letter
and a hyphen. So `sm_90`, `fp16`, `bf16`, `H100`, `e4m3`, `v2`, `float32` and `shape-3` hold no
number, while `4096-wide`, `8 KB`, `2x`, `[4, 1024]` and `-3.3%` do. A unit may follow (`8KB`, `41us`).
Signs are dropped (a slowdown is written both as -3.3% and as "3.3% slower"). Every number counts,
small integers included: the reference dropped identifiers' digits into both pools, so 1, 2, 4, 90...
almost always matched something.

A record number matches when its value equals a packet number (22 = 22.0), or when it is written with
at least one decimal and a packet number rounds to it at that precision (18.5 from 18.54; never 19
from 18.54). One exception, for derived percentages: a percentage (a token followed by `%`, or a JSON
number under a key ending in `pct`) that the packet does not contain is accepted when it is the
relative change between two measurements the record itself records in evidence.raw.effect --
(parent_geomean_us - new_geomean_us) / parent_geomean_us, or the same against baseline_geomean_us --
both of which are packet numbers, rounded to the precision written. The derivation is then auditable
from the record alone, and its inputs are measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from functools import cached_property, lru_cache
from typing import Any, Iterator

from ..storegates.model import CODE_KEYS, Gate, RecordView, format_loc, obj
from .model import Evidence, Packet, needs_packet

# (the lookahead first lets the engine skip non-digits before trying the lookbehinds: ~35% faster)
NUMBER = re.compile(r"(?=[\d.])(?<![\w.])(?<![A-Za-z]-)(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
PERCENT_SIGN = re.compile(r"\s*%")
DIFF_HEADER = re.compile(r"^(?:--- |\+\+\+ |@@ ).*$", re.M)
SERVED = (("payload",), ("retrieval",), ("evidence", "summary"), ("worth", "gain"))
EFFECT_REFERENCES = ("parent_geomean_us", "baseline_geomean_us")


@lru_cache(maxsize=1 << 16)  # a trace's packets repeat the same constants and measurements
def magnitude(token: str) -> Decimal | None:
    try:
        value = abs(Decimal(token))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def decimals(value: Decimal) -> int:
    return max(0, -value.as_tuple().exponent)


def rounds_to(value: Decimal, target: Decimal) -> bool:
    quantum = Decimal(1).scaleb(-decimals(target))
    try:
        return any(value.quantize(quantum, rounding=mode) == target for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN))
    except InvalidOperation:  # more digits than the context holds: an absurd token, not a rounding
        return False


def tokens(text: str) -> Iterator[tuple[str, bool]]:
    """(number token, followed by a percent sign) for every number token in text."""
    for m in NUMBER.finditer(text):
        yield m.group(0), PERCENT_SIGN.match(text, m.end()) is not None


def leaves(value: Any, out: list, path: tuple | None = None) -> list:
    """Append every string and number of a JSON value to out, code values left out; with a path,
    append (path, value) instead (the slower walk, for saying where a bad number is)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in CODE_KEYS:
                leaves(item, out, None if path is None else path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            leaves(item, out, None if path is None else path + (i,))
    elif isinstance(value, str) or type(value) in (int, float):
        out.append(value if path is None else (path, value))
    return out


def number_tokens(path: tuple, value: Any) -> Iterator[tuple[str, bool]]:
    """The number tokens of one leaf; a JSON number under a `*pct` key is a percentage."""
    if isinstance(value, str):
        yield from tokens(value)
    else:
        yield repr(value), isinstance(path[-1] if path else None, str) and path[-1].endswith("pct")


def matches(values: frozenset[Decimal], value: Decimal) -> bool:
    if value in values:
        return True
    return decimals(value) > 0 and any(decimals(v) > decimals(value) and rounds_to(v, value) for v in values)


def magnitudes(found: set[str]) -> frozenset[Decimal]:
    # tokens repeat a lot (a kernel's constants, per-shape tables): convert each distinct one once
    return frozenset(v for v in map(magnitude, found) if v is not None)


@dataclass(frozen=True)
class Pool:
    """The magnitudes a packet states. Records draw their numbers from the agent-facing layer, so the
    code file (the bulk of the text) is scanned only when that layer lacks one."""

    packet: Packet

    @cached_property
    def stated(self) -> frozenset[Decimal]:
        texts, found = [], set()
        for value in leaves(self.packet.agent_facing, []):
            if isinstance(value, str):
                texts.append(value)
            else:
                found.add(repr(value))
        found.update(NUMBER.findall("\n".join(texts)))
        return magnitudes(found)

    @cached_property
    def in_code(self) -> frozenset[Decimal]:
        code = self.packet.code or ""
        if (self.packet.code_file or "").endswith(".diff"):
            code = DIFF_HEADER.sub("", code)
        return magnitudes(set(NUMBER.findall(code)))

    def supports(self, value: Decimal) -> bool:
        return matches(self.stated, value) or matches(self.in_code, value)


def derived_percentages(record: dict, pool: Pool) -> list[Decimal]:
    """Relative changes between measurements the record's effect records and the packet states."""
    effect = obj(record, "evidence", "raw", "effect")
    new = effect.get("new_geomean_us")
    out = []
    for key in EFFECT_REFERENCES:
        ref = effect.get(key)
        if all(type(v) in (int, float) for v in (ref, new)) and ref > 0:
            ref_d, new_d = magnitude(repr(ref)), magnitude(repr(new))
            if ref_d is not None and new_d is not None and pool.supports(ref_d) and pool.supports(new_d):
                out.append(abs(ref_d - new_d) / ref_d * 100)
    return out


def unsupported(record: dict, pool: Pool, path: tuple, value: Any) -> list[str]:
    """The number tokens of one served leaf that the packet does not support."""
    out, derived = [], None  # derived: computed on the first percentage the packet lacks
    for token, is_pct in number_tokens(path, value):
        number = magnitude(token)
        if number is None or pool.supports(number):
            continue
        if is_pct:
            derived = derived_percentages(record, pool) if derived is None else derived
            if any(rounds_to(d, number) for d in derived):
                continue
        out.append(f"{format_loc(path)}: {token!r} is not a number of the packet"
                   + (" nor derived from the measurements in evidence.raw.effect" if is_pct else ""))
    return out


@needs_packet
def check(view: RecordView, ev: Evidence) -> list[str]:
    pool = Pool(ev.packet)
    out = []
    for prefix in SERVED:
        part = obj(view.record, *prefix[:-1]).get(prefix[-1])
        for path, value in leaves(part, [], prefix):
            out += [f"{view.relpath}: {problem}" for problem in unsupported(view.record, pool, path, value)]
    return out


GATE = Gate("no-fabrication", "every served number (small integers too) is a number of the packet", check=check)
