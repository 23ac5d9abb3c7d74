"""Gate `structured-facts`: the facts the pipeline derives from the packet are the record's, unchanged.

The drafter fills them from the packet (optrace.pipeline_facts, optrace.kernelcode) and an agent may
copy or leave them out, never change them:
- an anti-strategy's payload.verdict is the pipeline's (api-limitation when its own statements say the
  toolchain cannot build it, accuracy when it failed its correctness check or says so, else
  not-worth-it-here: `performance-ceiling` is a claim about the hardware no single run establishes);
- evidence.summary.confidence is `measured` exactly when the packet measured a geomean, else `inferred`;
- with the capture the record is entitled to (a strategy's: the capture of the version it builds on,
  which shows what the step attacked; any other record's: its own version's), every
  retrieval.signals.metrics key is a throughput, occupancy or register number of that capture with its
  value, and retrieval.signals.bottleneck is the label that capture's symptoms give, or absent (without
  such a capture, the ncu-attribution gate fails both);
- payload.cost.risk and risk_basis are what the diff's size and the correctness check give;
- payload.cost exists only where a diff gives it (a record without a diff has no edit to size);
- every gain metric's source is `step-record` (a mined number is the trace's step record, never a
  profiler's or a PR's), its unit, when written, `%` (the delta's);
- `comparable` (worth.gain, evidence.raw.effect) is the store's comparability, which no packet carries:
  the pipeline leaves it out, so a record that writes it states what nothing measured;
- evidence.raw.file_paths name only files the packet's diff or code file names (a capture's file under
  profiles/ and a number glued to a word are ncu-attribution's and no-fabrication's to judge);
- payload.trace.rediscovered is the number of times the run tried the lever (times_tried; 1 for a
  strategy), payload.trace.n_operators is 1;
- a mined record is `active` (superseding or deprecating a record is the store's decision, not a trace's);
- a gain metric is the one thing a trace measures, `latency` (`lower-better`), once; regressions and
  evidence.summary.mechanism_metrics are what the pipeline derives none of, so a mined record has none
  (without a usable capture, mechanism metrics are ncu-attribution's to refuse).
"""

from __future__ import annotations

import re

from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.trace.model import PacketEvidence, needs_packet
from optrace.gates.trace.ncu_attribution import has_usable_capture
from optrace.kernelcode import cost_of
from optrace.pipeline_facts import anti_verdict, bottleneck_label, capture_for_signals, confidence, signal_metrics


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    record, packet = view.record, ev.packet.data
    payload, out = obj(record, "payload"), []
    if record.get("type") == "anti-strategy" and "verdict" in payload:
        want = anti_verdict(packet)
        if payload["verdict"] != want:
            out.append(f"payload.verdict: {payload['verdict']!r}, but the packet's statements give {want!r}")
    summary = obj(record, "evidence", "summary")
    if "confidence" in summary and summary["confidence"] != confidence(packet):
        out.append(f"evidence.summary.confidence: {summary['confidence']!r} is not {confidence(packet)!r}")
    signals = obj(record, "retrieval", "signals")
    if capture_for_signals(packet) is not None:
        metrics, want_metrics = obj(signals, "metrics"), signal_metrics(packet)
        for key, value in metrics.items():
            if key not in want_metrics or value != want_metrics[key] or type(value) is not type(want_metrics[key]):
                out.append(f"retrieval.signals.metrics.{key}: {value!r} is not the capture's {want_metrics.get(key)!r}")
        label = signals.get("bottleneck")
        if label is not None and label != bottleneck_label(packet):
            out.append(
                f"retrieval.signals.bottleneck: {label!r} is not the label the capture's symptoms give "
                f"({bottleneck_label(packet)!r})"
            )
    cost = obj(payload, "cost")
    code_file = ev.packet.code_file or ""
    if cost and not code_file.endswith(".diff"):
        out.append("payload.cost: the packet has no diff, so there is no edit whose size or risk it could give")
    out += _provenance_fields(record, ev)
    if cost and code_file.endswith(".diff"):
        status = obj(ev.packet.agent_facing, "measurements", "correctness").get("status")
        derived = cost_of(ev.packet.code, status)
        for key in ("risk", "risk_basis"):
            if key in cost and cost[key] != derived[key]:
                out.append(
                    f"payload.cost.{key}: {cost[key]!r} is not what the diff and its check give ({derived[key]!r})"
                )
    out += _underived_fields(record, ev)
    trace = obj(payload, "trace")
    tried = ev.packet.agent_facing.get("times_tried", 1)
    if trace.get("rediscovered") is not None and trace.get("rediscovered") != tried:
        out.append(f"payload.trace.rediscovered: {trace.get('rediscovered')!r}, but the run tried it {tried!r} times")
    if trace.get("n_operators") not in (None, 1):
        out.append(f"payload.trace.n_operators: {trace.get('n_operators')!r}, but one trace measures one operator")
    return [f"{view.relpath}: {m}" for m in out]


MINED_STATUS = "active"
MEASURED = ("latency", "lower-better")  # what a trace's step records measure: the kernel's time


def _underived_fields(record: dict, ev: PacketEvidence) -> list[str]:
    """Fields whose values the pipeline derives from nothing in a packet but these: a new record's status,
    and the one measured gain metric."""
    out = []
    if "status" in record and record["status"] != MINED_STATUS:
        out.append(f"status: {record['status']!r}, but a record mined from a trace is {MINED_STATUS!r}")
    gain = obj(record, "worth", "gain")
    metrics = gain.get("metrics")
    named = [m for m in metrics if isinstance(m, dict)] if isinstance(metrics, list) else []
    for i, metric in enumerate(named):
        if (metric.get("metric"), metric.get("direction", MEASURED[1])) != MEASURED:
            out.append(
                f"worth.gain.metrics[{i}]: {metric.get('metric')!r} ({metric.get('direction')!r}), but a trace "
                f"measures {MEASURED[0]} ({MEASURED[1]}) only"
            )
    if len(named) > 1:
        out.append(f"worth.gain.metrics: {len(named)} metrics, but the packet measured one change")
    if gain.get("regressions"):
        out.append("worth.gain.regressions: the pipeline derives no regression from a packet; a mined record has none")
    if obj(record, "evidence", "summary").get("mechanism_metrics") and has_usable_capture(ev):
        out.append(
            "evidence.summary.mechanism_metrics: the pipeline derives none from a capture; a mined record has none"
        )
    return out


MINED_SOURCE = "step-record"
GAIN_UNITS = frozenset({"%"})  # a gain metric is a delta in percent (self-contained refuses time units)


def _paths_named(code: str | None, code_file: str | None) -> set[str]:
    named = {code_file} if code_file else set()
    for line in (code or "").splitlines():
        if line.startswith(("--- ", "+++ ")):
            path = line[4:].strip()
            named |= {path, path[2:] if path[:2] in ("a/", "b/") else path}
    return named


def _provenance_fields(record: dict, ev: PacketEvidence) -> list[str]:
    """Where the numbers came from and what files they rest on: the pipeline's, never free text."""
    out = []
    gain = obj(record, "worth", "gain")
    for key in ("metrics", "regressions"):
        items = gain.get(key)
        for i, metric in enumerate(items if isinstance(items, list) else []):
            if not isinstance(metric, dict):
                continue
            if "source" in metric and metric["source"] != MINED_SOURCE:
                out.append(
                    f"worth.gain.{key}[{i}].source: {metric['source']!r}, but a mined record's numbers are the "
                    f"trace's step records ({MINED_SOURCE!r})"
                )
            unit = metric.get("unit")
            # a number in it is no-fabrication's to judge; the words around it are this rule's
            if unit is not None and unit not in GAIN_UNITS and not re.fullmatch(r"[\d.,]+\s*%", str(unit)):
                out.append(
                    f"worth.gain.{key}[{i}].unit: {str(metric['unit'])[:60]!r} is not the unit of a gain's delta "
                    f"({', '.join(sorted(GAIN_UNITS))})"
                )
    for where, node in (("worth.gain", gain), ("evidence.raw.effect", obj(record, "evidence", "raw", "effect"))):
        if "comparable" in node:
            out.append(
                f"{where}.comparable: no packet measures comparability with the store; the pipeline leaves it out"
            )
    paths = obj(record, "evidence", "raw").get("file_paths")
    named = _paths_named(ev.packet.code, ev.packet.code_file)
    for path in paths if isinstance(paths, list) else []:
        if str(path).startswith("profiles/"):
            continue  # a capture's file: ncu-attribution judges whether the record may speak of it
        # a path-like string the code does not name is an invented file; other glued numbers (a
        # "speedup37.77%") are no-fabrication's
        path_like = re.search(r"/|\.[A-Za-z]{1,4}$", str(path))
        if path not in named and (path_like or not re.search(r"[a-z]\d|\d[a-z%]", str(path), re.I)):
            out.append(f"evidence.raw.file_paths: {str(path)[:60]!r} is not a file the packet's code names")
    return out


GATE = Gate(
    "structured-facts",
    "verdict, confidence, capture signals, cost and counts are the pipeline's, unchanged",
    check=check,
)
