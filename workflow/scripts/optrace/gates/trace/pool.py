"""What a packet states, as the no-fabrication gate reads it: its numbers (with their units), and its one
measured improvement.

    Pool(packet).supports(value)        a number of the agent-facing layer or the code file
    Pool(packet).supports_unit(v, unit) ... written with that unit (`%`, `x`, `ns`/`us`/`ms`)
    Pool(packet).is_improvement(value)  the packet's improvement: same sign, exactly as stated or rounded
                                        half-even to the decimals written (at least one)

A record number matches when its value equals a packet number (22 = 22.0), or it is written with at least
one decimal and a packet number rounds to it at that precision (18.5 from 18.54, never 19 from 18.54).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from functools import cached_property, lru_cache
from typing import Any, TypeGuard

from optrace.gates.store.model import obj
from optrace.gates.trace.model import Packet
from optrace.gates.trace.numbers import comparable, decimals, magnitude, number_tokens, unit_tokens

DIFF_HEADER = re.compile(r"^(?:--- |\+\+\+ |@@ ).*$", re.M)


KEY_UNITS = (("pct", "%"), ("_us", "us"), ("_ms", "ms"), ("_ns", "ns"))


def suffix_unit(key: str) -> str | None:
    return next((unit for suffix, unit in KEY_UNITS if key.endswith(suffix)), None)


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


def number(v: Any) -> TypeGuard[int | float]:
    return type(v) in (int, float)


def _dec(v: float | int) -> Decimal:
    return Decimal(repr(v))


@dataclass(frozen=True)
class Pool:
    """What a packet states: its numbers, its words and its one measured improvement."""

    packet: Packet

    @cached_property
    def _texts(self) -> tuple[list[str], list[tuple[str, int | float]]]:
        """Every string and object key of the agent-facing layer (the leaves no-fabrication reads of a
        record), and every JSON number with the nearest object key above it (which says its unit); no paths
        are built. The evidence list is left out: its texts are the layer's own sentences, and its ids
        (`e19`) no number."""
        texts: list[str] = []
        numbers: list[tuple[str, int | float]] = []
        stack = [("", {k: v for k, v in self.packet.agent_facing.items() if k != "evidence"})]
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
    def _text_tokens(self) -> tuple[set[str], dict[str, set[str]]]:
        """(number tokens, unit -> the tokens written with it) of the layer's texts, in one pass over them
        (a record with a number asks for both)."""
        numbers: set[str] = set()
        units: dict[str, set[str]] = {}
        for text in self._texts[0]:
            for token, _ in number_tokens(text):
                numbers.add(token)
            for token, unit in unit_tokens(text):
                units.setdefault(unit, set()).add(token)
        return numbers, units

    @cached_property
    def stated(self) -> frozenset[Decimal]:
        _, numbers = self._texts
        return magnitudes({repr(value) for _, value in numbers} | self._text_tokens[0])

    @cached_property
    def code(self) -> str:
        code = self.packet.code or ""
        if (self.packet.code_file or "").endswith(".diff"):
            code = DIFF_HEADER.sub("", code)
        return code

    @cached_property
    def with_unit(self) -> dict[str, frozenset[Decimal]]:
        """unit -> the numbers the packet writes with that unit (text, code, keys ending pct/_us/...)."""
        found = {unit: set(tokens) for unit, tokens in self._text_tokens[1].items()}
        for key, value in self._texts[1]:
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
        if not number(pct):
            return None
        exact = None
        if number(floor) and number(geo) and floor > 0:
            exact = (_dec(floor) - _dec(geo)) / _dec(floor) * 100
        return _dec(pct), exact

    def is_improvement(self, value: Any) -> bool:
        """value is the packet's improvement: same sign, exactly as stated or the exact value rounded
        half-even to the decimals written (at least one)."""
        if not number(value) or self.improvement is None:
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
