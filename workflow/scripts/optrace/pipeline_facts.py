"""The facts of a record the pipeline derives from its packet, never the agent: the drafter fills them and
the `structured-facts` gate checks the record holds exactly these (or leaves them out).

    capture_for_signals(packet) -> the profiler block a record's signals and bottleneck come from
    signal_metrics(packet)      -> retrieval.signals.metrics
    bottleneck_label(packet)    -> retrieval.signals.bottleneck (one of the contract's labels, or None)
    anti_verdict(packet)        -> payload.verdict of an anti-strategy
    confidence(packet)          -> evidence.summary.confidence

A strategy's signals and bottleneck are those of the capture of the version it builds on (the problem the
step attacked), never its own after-profile, which diagnoses what the next step should attack; every
other record's are its own version's.
"""

from __future__ import annotations

import re

# Capture numbers served as retrieval signals (never the duration: absolute latency is provenance only).
SIGNAL_METRICS = (
    "sm_throughput_pct",
    "memory_throughput_pct",
    "l2_hit_rate_pct",
    "achieved_occupancy_pct",
    "registers_per_thread",
)
# a capture symptom (classify_ncu's SYMPTOMS) -> the contract's bottleneck label it is evidence for
SYMPTOM_LABELS = {
    "launch-bound": "launch-overhead",
    "launch-overhead": "launch-overhead",
    "tail-effect": "tail-effect",
    "occupancy-limited": "occupancy-register-capped",
    "register-limited": "occupancy-register-capped",
    "register-capped": "occupancy-register-capped",
    "compute-bound": "alu-saturated",
    "alu-bound": "alu-saturated",
    "host-sync": "host-sync-stall",
    "sync-stall": "host-sync-stall",
}
ACCURACY_RE = re.compile(r"mismatch|max_(?:abs|rel)_err|accuracy|precision|numerical|\bnan\b|incorrect|tolerance", re.I)
API_RE = re.compile(
    r"unsupported|not supported|does not support|not implemented|cannot (?:express|be expressed|lower|compile)"
    r"|can not (?:express|be expressed|lower|compile)|compile error|COMPILE_ERROR|do(?:es)? not compile"
    r"|fail(?:s|ed)? to (?:compile|build)|d(?:id|oes|o) not (?:compile|build)"
    # an instruction the toolchain emits only for other architectures (`only emitted for sm_80 and newer`)
    r"|only (?:emitted|available|exists?) for|exists? only for",
    re.I,
)

# the launch itself refused by the runtime: a limit of the API, not of this kernel's speed
LAUNCH_RE = re.compile(r"invalid (?:configuration|launch)|too many resources requested|launch fails", re.I)
# a kernel that faults or never finishes fails its correctness check, whatever it would have cost
FAULT_RE = re.compile(
    r"misaligned address|illegal (?:memory )?(?:access|address)|segmentation fault|\bfaults?\b|\bhangs?\b"
    r"|deadlocks?|waits? forever|out[- ]of[- ]bounds",
    re.I,
)


def _usable(profiler: object) -> dict | None:
    return (
        profiler if isinstance(profiler, dict) and profiler.get("ncu_measured_the_kernel_under_test") is True else None
    )


def capture_for_signals(packet: dict) -> dict | None:
    agent = packet.get("agent_facing") or {}
    if packet.get("record_type") == "strategy":
        return _usable((agent.get("builds_on") or {}).get("parent_profiler"))
    return _usable(agent.get("profiler"))


def signal_metrics(packet: dict) -> dict:
    metrics = (capture_for_signals(packet) or {}).get("metrics") or {}
    return {k: metrics[k] for k in SIGNAL_METRICS if type(metrics.get(k)) in (int, float)}


def bottleneck_label(packet: dict) -> str | None:
    """The one label the capture's symptoms give evidence for; None when they give none or several."""
    symptoms = (capture_for_signals(packet) or {}).get("metrics", {}).get("symptoms") or []
    labels = {SYMPTOM_LABELS[s] for s in symptoms if isinstance(s, str) and s in SYMPTOM_LABELS}
    return labels.pop() if len(labels) == 1 else None


def verdict_texts(packet: dict) -> list[str]:
    """The statements a failed lever's verdict is read from: its own items (lever, cause, what was seen,
    fix, lesson) and,
    where the version's prose is the lever's alone, its gate verdict and commit body."""
    own = {"lever", "lever-cause", "cause", "observed", "fix", "lesson"}
    if packet.get("seg_kind") == "deadend-prose":
        own |= {"gate-verdict", "body"}
    items = (packet.get("agent_facing") or {}).get("evidence") or []
    return [i["text"] for i in items if isinstance(i, dict) and i.get("kind") in own and isinstance(i.get("text"), str)]


def anti_verdict(packet: dict) -> str:
    """api-limitation when its statements say the toolchain cannot build or express it or the runtime
    refuses its launch; accuracy when it failed its correctness check or says so, or faults or hangs (a
    pitfall's own failure, never its kept version's: a misaligned address is no not-worth-it); else not
    worth it here. (performance-ceiling is a claim about
    the hardware no single run establishes.)"""
    joined = " ".join(verdict_texts(packet))
    status = ((packet.get("agent_facing") or {}).get("measurements") or {}).get("correctness", {}).get("status")
    if API_RE.search(joined) or LAUNCH_RE.search(joined):
        return "api-limitation"
    if (status and status != "PASS") or ACCURACY_RE.search(joined) or FAULT_RE.search(joined):
        return "accuracy-gate/ceiling"
    return "not-worth-it-here"


def confidence(packet: dict) -> str:
    measured = ((packet.get("agent_facing") or {}).get("measurements") or {}).get("geomean_us") is not None
    return "measured" if measured else "inferred"
