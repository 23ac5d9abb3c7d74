"""Gate `self-contained`: a record read alone is complete, and its gain is normalised.

Every record: non-blank goal, problem.statement and problem.target; problem.operator on operator-level
strategies and reference kernels; a gain basis; no absolute latency in gain's text. Every gain metric
(and regression): a source, something measured (delta_pct, before, after or a note), no time unit,
no absolute latency in its note or scope, and no before/after on latency. A measured strategy has a
delta_pct; gain.pct is the primary metric's delta_pct (or null when it has none). Strategies and
reference kernels state what they built on, carry their snippet when the format promises one, and
label a diff as a diff.
"""

from __future__ import annotations

import re
from typing import Any

from optrace.facts import ABSOLUTE_LATENCY
from optrace.gates.store.model import Gate, GateContext, RecordView, obj, text

TIME_UNIT = re.compile(r"^\s*(?:us|µs|μs|ms|s|sec|ns|cycles?)\s*$", re.I)
LINEAGE_TYPES = ("strategy", "reference-kernel")
DIFF_FORMAT_PREFIX = "unified-diff"


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def metric_problems(where: str, metric: dict) -> list[str]:
    out = []
    if "source" not in metric:
        out.append(f"{where}: no source")
    if all(metric.get(k) is None for k in ("delta_pct", "before", "after", "note")):
        out.append(f"{where}: states no delta_pct, before, after or note")
    unit = metric.get("unit")
    if isinstance(unit, str) and TIME_UNIT.match(unit):
        out.append(f"{where}.unit: time unit {unit!r} on a gain metric")
    if metric.get("metric") == "latency" and (metric.get("before") is not None or metric.get("after") is not None):
        out.append(f"{where}: latency metric carries absolute before/after")
    for key in ("note", "measured_over"):
        value = metric.get(key)
        m = ABSOLUTE_LATENCY.search(value) if isinstance(value, str) else None
        if m:
            out.append(f"{where}.{key}: absolute latency {m.group(0)!r}")
    return out


def gain_problems(record: dict) -> list[str]:
    gain = obj(record, "worth", "gain")
    out = [] if "basis" in gain else ["worth.gain.basis: missing"]
    for key, value in gain.items():
        m = ABSOLUTE_LATENCY.search(value) if isinstance(value, str) else None
        if m:
            out.append(f"worth.gain.{key}: absolute latency {m.group(0)!r}")
    metrics = listed if isinstance(listed := gain.get("metrics"), list) else []
    for key in ("metrics", "regressions"):
        items = listed if isinstance(listed := gain.get(key), list) else []
        for i, metric in enumerate(items):
            if isinstance(metric, dict):
                out += metric_problems(f"worth.gain.{key}[{i}]", metric)
    deltas = [m.get("delta_pct") for m in metrics if isinstance(m, dict) and _number(m.get("delta_pct"))]
    if record.get("type") == "strategy" and gain.get("basis") == "measured" and not deltas:
        out.append("worth.gain: a measured strategy needs a metric with a delta_pct")
    headline = [
        m["delta_pct"]
        for m in metrics
        if isinstance(m, dict)
        and _number(m.get("delta_pct"))
        and "primary" in gain
        and m.get("metric") == gain["primary"]
    ]
    pct = gain.get("pct")
    if "pct" not in gain or pct is None:
        if headline:
            out.append(f"worth.gain.pct: {pct!r} but the primary metric's delta_pct is {headline[0]!r}")
    elif not any(_number(pct) and pct == h for h in headline):
        out.append(f"worth.gain.pct: {pct!r} is not the primary metric's delta_pct")
    return out


def lineage_problems(payload: dict) -> list[str]:
    out = []
    if not text(obj(payload, "trace", "builds_on").get("approach")):
        out.append("payload.trace.builds_on.approach: blank")
    implementation = obj(payload, "implementation")
    fmt, snippet = implementation.get("format"), implementation.get("snippet")
    if fmt != "none" and not text(snippet):
        out.append(f"payload.implementation.snippet: blank although format is {fmt!r}")
    first = text(snippet).splitlines()[0] if text(snippet) else ""
    if first.startswith(("+", "-", "@@")) and not (isinstance(fmt, str) and fmt.startswith(DIFF_FORMAT_PREFIX)):
        out.append(f"payload.implementation.format: the snippet is a diff but format is {fmt!r}")
    return out


def check(view: RecordView, ctx: GateContext) -> list[str]:
    record = view.record
    payload = obj(record, "payload")
    problem = obj(payload, "problem")
    out = [] if text(payload.get("goal")) else ["payload.goal: blank"]
    out += [f"payload.problem.{k}: blank" for k in ("statement", "target") if not text(problem.get(k))]
    lineage = record.get("type") in LINEAGE_TYPES
    if lineage and record.get("level") == "operator" and not text(problem.get("operator")):
        out.append("payload.problem.operator: required on an operator-level strategy or reference kernel")
    out += gain_problems(record)
    if lineage:
        out += lineage_problems(payload)
    return [f"{view.relpath}: {m}" for m in out]


GATE = Gate("self-contained", "payload complete on its own, gain normalised (no absolute latency)", check=check)
