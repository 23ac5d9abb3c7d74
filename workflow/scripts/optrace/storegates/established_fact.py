"""Gate `established-fact`: an anti-strategy is kept only as an established fact.

Three things must hold (the store's established-fact criteria): a checkable condition (arch, shape
regime, dtype or toolchain), a causal mechanism of at least 40 characters that is not bookkeeping,
noise or an asserted ceiling, and a concluding verdict. The phrase list is the union of the store's
and the admission gate's, which disagreed in both directions.
"""

from __future__ import annotations

import re

from .model import Gate, RecordView, obj, text

CONDITION_KEYS = ("sm_arch", "shape_regime", "dtype", "toolchain")
INCONCLUSIVE_VERDICTS = ("unknown", "unstable")
MIN_MECHANISM_CHARS = 40
NON_MECHANISM = re.compile(
    r"no improvement (?:found|over)|flat[- ]within[- ]noise|within noise"
    r"|all (?:\w+\s+){0,3}(?:approaches|trials|variants|attempts) (?:tested|were|failed|flat)"
    r"|tested \d+ approaches|reverted to an earlier|hw floor (?:confirmed|reconfirmed)|no kernel change"
    r"|sanity[_ ]bench|stall[_ ]count|consecutive (?:dead-end|stall|revert)", re.I)


def condition_problems(condition) -> list[str]:
    where = "payload.established_fact.condition"
    if not isinstance(condition, dict):
        return [f"{where}: missing or not an object"]
    out = [f"{where}.{k}: not one of {', '.join(CONDITION_KEYS)}" for k in condition if k not in CONDITION_KEYS]
    out += [f"{where}.{k}: must be a string or null" for k in CONDITION_KEYS
            if condition.get(k) is not None and not isinstance(condition.get(k), str)]
    if not any(text(condition.get(k)) for k in CONDITION_KEYS):
        out.append(f"{where}: no checkable condition (arch, shape regime, dtype or toolchain)")
    return out


def mechanism_problems(mechanism) -> list[str]:
    where = "payload.established_fact.mechanism"
    if not isinstance(mechanism, str):
        return [f"{where}: missing or not a string"]
    if len(mechanism.strip()) < MIN_MECHANISM_CHARS:
        return [f"{where}: {len(mechanism.strip())} characters, a causal mechanism needs {MIN_MECHANISM_CHARS}"]
    m = NON_MECHANISM.search(mechanism)
    return [f"{where}: {m.group(0)!r} reports an outcome, not a cause"] if m else []


def check(view: RecordView, ctx) -> list[str]:
    payload = obj(view.record, "payload")
    out = []
    verdict = payload.get("verdict")
    if isinstance(verdict, str) and verdict in INCONCLUSIVE_VERDICTS:
        out.append(f"payload.verdict: {verdict!r} concludes nothing")
    fact = payload.get("established_fact")
    if not isinstance(fact, dict):
        out.append("payload.established_fact: missing or not an object")
    else:
        out += condition_problems(fact.get("condition")) + mechanism_problems(fact.get("mechanism"))
    return [f"{view.relpath}: {m}" for m in out]


def is_anti_strategy(view: RecordView) -> bool:
    return view.record.get("type") == "anti-strategy"


GATE = Gate("established-fact", "anti-strategies state a condition, a cause and a conclusion", check=check,
            applies=is_anti_strategy)
