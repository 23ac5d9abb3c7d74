"""Gate `established-fact`: an anti-strategy is kept only as an established fact.

Three things must hold (the store's established-fact criteria): a checkable condition (arch, shape
regime, dtype or toolchain), a causal mechanism of at least 40 characters that is not bookkeeping,
noise or an asserted ceiling, and a concluding verdict. The phrase list is the union of the store's
and the admission gate's, which disagreed in both directions.

Records mined from a trace (RecordView.from_trace: the real store's curated records have no raw
provenance and are judged by the store's rules alone) must also be established, not asserted:
- every condition value is checkable: not a placeholder (`unknown`, `n/a`, `none`, `any`, `all`, `*`,
  `tbd`, `various`, `-`, `?`);
- the mechanism and the condition are not speculative (may, might, maybe, possibly, perhaps, probably,
  likely, presumably, seems, appears to, suspect, unclear, not sure);
- the mechanism states a cause, as optrace.facts judges a stated-cause field for partition and the
  drafter too: not a measurement, an outcome, an account of what was done or a restatement of
  `attempted` (the claims gate judges each sentence by the structure its cited evidence has), and is
  not bookkeeping or
  an asserted ceiling: "lever exhausted", "retired", "dead-end recorded", "Nth dead-end", "hardware/hw
  floor", "at the floor", "already optimal", "nothing left to gain", "no further gain".
(That the condition is within the record's scope and the mechanism is the packet's own text are trace
gates' rules: layout and claims.)
"""

from __future__ import annotations

import re

from optrace.facts import MIN_MECHANISM_CHARS, MINED_NON_MECHANISM, NON_MECHANISM, SPECULATION, judge
from optrace.gates.store.model import Gate, GateContext, RecordView, obj, text

CONDITION_KEYS = ("sm_arch", "shape_regime", "dtype", "toolchain")
INCONCLUSIVE_VERDICTS = ("unknown", "unstable")
PLACEHOLDER = re.compile(r"^\s*(?:unknown|n/?a|none|null|any|all|\*|tbd|various|unspecified|-+|\?+)\s*$", re.I)


def mined_problems(fact: dict, attempted: object) -> list[str]:
    where = "payload.established_fact"
    condition = c if isinstance(c := fact.get("condition"), dict) else {}
    out = [
        f"{where}.condition.{k}: {v!r} is a placeholder, not a checkable condition"
        for k, v in condition.items()
        if isinstance(v, str) and PLACEHOLDER.match(v)
    ]
    texts = [(f"{where}.condition.{k}", v) for k, v in condition.items() if isinstance(v, str)]
    mechanism = fact.get("mechanism")
    if isinstance(mechanism, str):
        texts.append((f"{where}.mechanism", mechanism))
        m = MINED_NON_MECHANISM.search(mechanism)
        if m:
            out.append(f"{where}.mechanism: {m.group(0)!r} is bookkeeping or an asserted ceiling, not a cause")
        lever = attempted if isinstance(attempted, str) else None
        judged = judge(mechanism, lever, labelled=True)  # the field states the cause; is it one?
        if not judged.states_cause and not m:
            out.append(f"{where}.mechanism: states no cause ({judged.reason})")
    out += [
        f"{loc}: {m.group(0)!r} is speculation, not an established fact"
        for loc, value in texts
        for m in [SPECULATION.search(value)]
        if m
    ]
    return out


def condition_problems(condition: object) -> list[str]:
    where = "payload.established_fact.condition"
    if not isinstance(condition, dict):
        return [f"{where}: missing or not an object"]
    out = [f"{where}.{k}: not one of {', '.join(CONDITION_KEYS)}" for k in condition if k not in CONDITION_KEYS]
    out += [
        f"{where}.{k}: must be a string or null"
        for k in CONDITION_KEYS
        if condition.get(k) is not None and not isinstance(condition.get(k), str)
    ]
    if not any(text(condition.get(k)) for k in CONDITION_KEYS):
        out.append(f"{where}: no checkable condition (arch, shape regime, dtype or toolchain)")
    return out


def mechanism_problems(mechanism: object) -> list[str]:
    where = "payload.established_fact.mechanism"
    if not isinstance(mechanism, str):
        return [f"{where}: missing or not a string"]
    if len(mechanism.strip()) < MIN_MECHANISM_CHARS:
        return [f"{where}: {len(mechanism.strip())} characters, a causal mechanism needs {MIN_MECHANISM_CHARS}"]
    m = NON_MECHANISM.search(mechanism)
    return [f"{where}: {m.group(0)!r} reports an outcome, not a cause"] if m else []


def check(view: RecordView, ctx: GateContext) -> list[str]:
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
        if view.from_trace:
            out += mined_problems(fact, payload.get("attempted"))
    return [f"{view.relpath}: {m}" for m in out]


def is_anti_strategy(view: RecordView) -> bool:
    return view.record.get("type") == "anti-strategy"


GATE = Gate(
    "established-fact",
    "anti-strategies state a condition, a cause and a conclusion",
    check=check,
    applies=is_anti_strategy,
)
