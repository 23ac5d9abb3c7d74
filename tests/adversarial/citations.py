"""What a careful fabricating agent does after editing a record: it rewrites the citations too, so the
claims block says exactly what the record now says, and cites as much as it may.

`resync(record, packet)` is that agent. For every claim string of the record whose claims no longer say
it, it writes one claim per sentence, each citing every item the field's old claims cited and every
item of a kind the field may rest on (as much support as the rules allow) and, for every number it
writes, the slot of the packet that holds that value; claims at paths the record no longer holds are
dropped. An edit the claims gate catches after resync is caught by what the sentence says, not by a
stale or thin citation. The honest twins are written by the same agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

from optrace.gates.trace.claim_rules import DIGITS, Cited, matches_value, slot_use
from optrace.gates.trace.claims import CLAIMS_AT, claim_strings, collapsed, kinds_for
from optrace.gates.trace.model import Packet
from optrace.gates.trace.numbers import normalize
from optrace.slots import kind_of, resolve
from optrace.wording import sentences


def slot_names(agent: dict) -> Iterator[str]:
    """Every measurement slot the packet holds a number in."""
    fixed = (
        "measurements.geomean_us",
        "measurements.floor_before_us",
        "measurements.improve_pct_vs_floor",
        "measurements.shapes_measured",
        "operator.n_benchmarked_shapes",
        "times_tried",
        "measurements.correctness.max_abs_err",
        "measurements.correctness.max_rel_err",
    )
    yield from fixed
    for row in (agent.get("measurements") or {}).get("per_shape_latency") or []:
        yield f"measurements.per_shape_latency[{row['shape']}].latency_us"
        for axis in row.get("axes") or {}:
            yield f"measurements.per_shape_latency[{row['shape']}].axes.{axis}"
    for axis in (agent.get("operator") or {}).get("fixed_axes") or {}:
        yield f"operator.fixed_axes.{axis}"
    for base, prof in (
        ("profiler", agent.get("profiler")),
        ("builds_on.parent_profiler", (agent.get("builds_on") or {}).get("parent_profiler")),
    ):
        metrics = (prof or {}).get("metrics") or {}
        for key, value in metrics.items():
            if type(value) in (int, float):
                yield f"{base}.metrics.{key}"
        for key in metrics.get("stall_reasons") or {}:
            yield f"{base}.metrics.stall_reasons.{key}"


def number_slots(text: str, agent: dict) -> dict[str, str]:
    """number as written -> a slot holding that value, the one whose meaning fits the number's clause
    best (several slots may hold one value: a one-shape trace's geomean is its shape's latency)."""
    out = {}
    names = [n for n in slot_names(agent) if kind_of(n) is not None and resolve(agent, n) is not None]
    norm = normalize(text)
    cited = Cited((), (), frozenset(), frozenset(), None, {}, False)
    m_ = agent.get("measurements") or {}
    floor, geo = m_.get("floor_before_us"), m_.get("geomean_us")
    exact = (
        (Decimal(repr(floor)) - Decimal(repr(geo))) / Decimal(repr(floor)) * 100
        if all(type(v) in (int, float) for v in (floor, geo)) and floor
        else None
    )
    for m in DIGITS.finditer(norm):
        token = m.group(1)
        fits = [
            n
            for n in names
            if matches_value(token, resolve(agent, n), exact if n == "measurements.improve_pct_vs_floor" else None)  # type: ignore[arg-type]
        ]
        if fits:
            out[token] = min(fits, key=lambda n: len(slot_use(norm, m.start(1), m.end(1), kind_of(n), cited, n)))  # type: ignore[arg-type]
    return out


def resync(record: dict, packet: Packet) -> dict:
    agent = packet.agent_facing
    node = record
    for key in CLAIMS_AT[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict):
        return record
    block = node.setdefault("claims", {"packet": packet.seg_id, "fields": {}})
    fields = block.setdefault("fields", {}) if isinstance(block, dict) else {}
    if not isinstance(fields, dict):
        return record
    strings = dict(claim_strings(record))
    items = [i for i in agent.get("evidence") or [] if isinstance(i, dict)]
    for path in [p for p in fields if p not in strings]:
        del fields[path]
    for path, text in strings.items():
        entries = fields.get(path)
        said = (
            " ".join(e.get("says", "") for e in entries if isinstance(e, dict)) if isinstance(entries, list) else None
        )
        if said is not None and collapsed(said) == collapsed(text):
            continue
        old = (
            [c for e in entries if isinstance(e, dict) for c in e.get("cites") or []]
            if isinstance(entries, list)
            else []
        )
        allowed = kinds_for(path, record.get("type"))
        cites = list(dict.fromkeys(old + [i["id"] for i in items if allowed is None or i.get("kind") in allowed]))
        parts = sentences(text) if not re.search(r"\n", text) else [text]
        if " ".join(parts) != collapsed(text):
            parts = [text]
        rebuilt = []
        for part in parts:
            slots = number_slots(part, agent)
            entry = {"says": part, "cites": list(dict.fromkeys(cites + sorted(set(slots.values()))))}
            if slots:
                entry["slots"] = slots
            rebuilt.append(entry)
        fields[path] = rebuilt
    return record
