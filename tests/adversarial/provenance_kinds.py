"""Planted kinds and honest twins of the rules that read what no claim rule did: a gain metric's source and
unit, `comparable`, raw.file_paths and a cost without a diff (structured-facts), and what a diff record's
code fields say about kernels (verbatim: core_kernel_name, dispatch_snippet, a snippet of host lines).
"""

from __future__ import annotations

import re

from optrace.gates.trace.verbatim import kernel_lines_of_diff
from tests.adversarial.claim_attacks import CLM, LAY, STRUCT, VERB, A, Case, S, has_diff, no_capture, setto

_LAUNCH = re.compile(r"<<<|\[grid\]\(|\.launch\(")


def _diff_kernels(c) -> set[str]:
    return kernel_lines_of_diff(c.packet.code)[1] if has_diff(c) else set()


def _lines(c, inside: bool, added: bool = True) -> list[str]:
    """The diff's `+` lines (every line when added is False) inside, or outside, its kernel functions."""
    body, _ = kernel_lines_of_diff(c.packet.code)
    return [
        ln.rstrip()
        for i, ln in enumerate(c.packet.code.splitlines())
        if (i in body) == inside
        and ln[1:].strip()
        and (ln.startswith("+") or not added)
        and ln[:3] not in ("+++", "---")
    ]


def _host_launches(c) -> list[str]:
    """Host `+` lines that launch a kernel the diff shows."""
    kernels = _diff_kernels(c)
    return [ln for ln in _lines(c, inside=False) if _LAUNCH.search(ln) and any(k in ln for k in kernels)]


def _kernel_added(c) -> list[str]:
    return [ln for ln in _lines(c, inside=True) if re.search(r"\w", ln[1:]) and not re.match(r"\+\s*//", ln)]


def _impl(key: str, value):
    def mutate(r, c):
        r["payload"]["implementation"][key] = value(c)

    return mutate


def _metric(key: str, value):
    def mutate(r, c):
        r["worth"]["gain"]["metrics"][0][key] = value

    return mutate


def _non_kernel_identifier(c) -> str:
    kernels = _diff_kernels(c)
    return next(w for w in re.findall(r"\b[a-z_]\w{2,}\b", c.packet.code) if w not in kernels and w != "void")


def _no_diff(c) -> bool:
    return not has_diff(c)


PROVENANCE = [
    Case("3 a gain metric from the profiler", 3, S, _metric("source", "profiler"), (STRUCT,)),
    Case(
        "3 a gain metric unit of free text",
        3,
        S,
        _metric("unit", "us, median of 3 ABBA sessions"),
        (STRUCT,),
    ),
    Case("3 gain comparable with the store", 3, S, setto("worth.gain.comparable", True), (STRUCT,)),
    Case("3 the effect comparable with the store", 3, A, setto("evidence.raw.effect.comparable", True), (STRUCT,)),
    Case(
        "3 raw.file_paths of free text",
        3,
        S,
        setto("evidence.raw.file_paths", ["verified on 3 GPUs in 2 sessions"]),
        (STRUCT,),
    ),
    Case(
        "3 a cost for a lever without a diff",
        3,
        A,
        setto("payload.cost", {"edit_scope": "one-line", "risk": "low", "risk_basis": "a one-line edit"}),
        (STRUCT,),
        _no_diff,
    ),
    Case(
        "6 a diff's core_kernel_name that is no kernel it shows",
        6,
        S,
        _impl("core_kernel_name", _non_kernel_identifier),
        (VERB,),
        has_diff,
    ),
    Case(
        "6 a diff's dispatch_snippet of kernel lines",
        6,
        S,
        _impl("dispatch_snippet", lambda c: "\n".join(_kernel_added(c)[:2])),
        (VERB,),
        lambda c: has_diff(c) and len(_kernel_added(c)) >= 2,
    ),
    Case(
        "6 a diff snippet of one host launch line",
        6,
        S,
        _impl("snippet", lambda c: _host_launches(c)[0]),
        (VERB,),
        lambda c: has_diff(c) and bool(_host_launches(c)) and bool(_kernel_added(c)),
    ),
]


def _gain_as(metric: str, key: str = "metrics"):
    """The measured gain, as an agent would copy it, filed under another metric (or as a regression)."""

    def mutate(r, c):
        gain = r["worth"]["gain"]
        gain.setdefault(key, []).append({**gain["metrics"][0], "metric": metric})

    return mutate


def _cuts_latency(c) -> bool:
    metrics = c.record["worth"]["gain"].get("metrics") or []
    return bool(metrics) and metrics[0].get("delta_pct") is not None


def _other_dsl(c) -> str:
    return "triton" if c.packet.data["target"]["scope"]["dsl"] != "triton" else "cuda"


def _condition(key: str, value):
    def mutate(r, c):
        r["payload"]["established_fact"]["condition"][key] = value(c) if callable(value) else value

    return mutate


# the facts the pipeline derives from nothing but the packet (structured-facts: status, the one measured
# metric, no regression, no mechanism metrics; layout: the condition's toolchain and dtype)
PROVENANCE += [
    Case("3 a mined record called deprecated", 3, S, setto("status", "deprecated"), (STRUCT,)),
    Case("3 a mined anti-strategy called superseded", 3, A, setto("status", "superseded"), (STRUCT,)),
    Case(
        "3 the step's own gain listed as a regression",
        3,
        S,
        _gain_as("latency", "regressions"),
        (STRUCT,),
        _cuts_latency,
    ),
    Case(
        "3 the measured gain filed as a memory-footprint gain too",
        3,
        S,
        _gain_as("memory_footprint"),
        (STRUCT,),
        _cuts_latency,
    ),
    Case(
        "3 mechanism metrics beside a usable capture",
        3,
        S,
        setto("evidence.summary.mechanism_metrics", {"occupancy_limiter": "registers"}),
        (STRUCT,),
        lambda c: not no_capture(c),
    ),
    Case(
        "3 a file path the packet's code does not name",
        3,
        S,
        setto("evidence.raw.file_paths", ["csrc/bf16_rmsnorm_sm_80.cu"]),
        (STRUCT,),
    ),
    Case("3 a condition's toolchain another dsl", 3, A, _condition("toolchain", _other_dsl), (LAY,)),
    Case("3 a condition's dtype that is no data type", 3, A, _condition("dtype", "128-bit loads"), (LAY, CLM)),
]

PROVENANCE_TWINS = [
    Case("t a gain metric unit in percent", 0, S, _metric("unit", "%"), ()),
    Case(
        "t a diff's core_kernel_name its kernel",
        0,
        S,
        _impl("core_kernel_name", lambda c: sorted(_diff_kernels(c))[0]),
        (),
        lambda c: bool(_diff_kernels(c)),
    ),
    Case(
        "t a diff's dispatch_snippet its launch line",
        0,
        S,
        _impl("dispatch_snippet", lambda c: _host_launches(c)[0]),
        (),
        lambda c: has_diff(c) and bool(_host_launches(c)),
    ),
]
