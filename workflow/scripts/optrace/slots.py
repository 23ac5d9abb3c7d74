"""A packet's measurement slots: every number it measures, named by its path in `agent_facing`, with what
it means. The drafter names the slot of every number it writes; the claims gate resolves the name and
checks that the number is the slot's and is used with the slot's meaning.

    resolve(agent_facing, name) -> value or None
    kind_of(name) -> SlotKind: the quantity it is, its role (before / after / change) and its meaning

Names: `measurements.geomean_us`, `measurements.floor_before_us`, `measurements.improve_pct_vs_floor`,
`measurements.shapes_measured`, `measurements.per_shape_latency[shape-3].latency_us` (or
`.axes.batch_size`), `measurements.correctness.max_abs_err` (`max_rel_err`), `operator.n_benchmarked_shapes`,
`operator.fixed_axes.<axis>`, `times_tried`, `profiler.metrics.<metric>`,
`profiler.metrics.stall_reasons.<reason>`, and the same under `builds_on.parent_profiler.`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SlotKind:
    quantity: str  # geomean-latency | shape-latency | improvement | count-shapes | count-tried | error | capture | axis
    role: str  # before | after | change | none
    unit: str | None  # "%", "us" or None
    meaning: str  # what the number is, in words a sentence about it may use


GEOMEAN = SlotKind("geomean-latency", "after", "us", "the geomean latency of this version over its measured shapes")
FLOOR = SlotKind(
    "geomean-latency",
    "before",
    "us",
    "the geomean latency of the floor: the best kept version before this step, which it builds on and was "
    "tried against (previous best)",
)
IMPROVEMENT = SlotKind(
    "improvement",
    "change",
    "%",
    "the change of the geomean latency against the floor it was tried against (the previous best kept "
    "version, the version this step builds on), in percent: positive is faster, negative is slower; the "
    "attempt or step measured it",
)
SHAPE_LATENCY = SlotKind("shape-latency", "after", "us", "the latency of this version at one shape")
N_SHAPES = SlotKind("count-shapes", "none", None, "the number of shapes the benchmark defines (benchmarked shapes)")
MEASURED_SHAPES = SlotKind(
    "count-shapes", "none", None, "the number of shapes measured for this version: its geomean is over them"
)
TIMES_TRIED = SlotKind("count-tried", "none", None, "how many times the run tried this lever (attempts)")
ERROR = SlotKind("error", "none", None, "the largest error of the correctness check against the reference output")
AXIS = SlotKind("axis", "none", None, "a shape's value of this axis")

_FIXED = {
    "measurements.geomean_us": GEOMEAN,
    "measurements.floor_before_us": FLOOR,
    "measurements.improve_pct_vs_floor": IMPROVEMENT,
    "measurements.shapes_measured": MEASURED_SHAPES,
    "operator.n_benchmarked_shapes": N_SHAPES,
    "times_tried": TIMES_TRIED,
    "measurements.correctness.max_abs_err": ERROR,
    "measurements.correctness.max_rel_err": ERROR,
}
_SHAPE = re.compile(r"^measurements\.per_shape_latency\[(shape-\d+)\]\.(latency_us|axes\.(\w+))$")
_CAPTURE = re.compile(r"^(profiler|builds_on\.parent_profiler)\.metrics\.(?:(stall_reasons)\.)?(\w+)$")
_FIXED_AXIS = re.compile(r"^operator\.fixed_axes\.(\w+)$")


def kind_of(name: str) -> SlotKind | None:
    if name in _FIXED:
        return _FIXED[name]
    if m := _SHAPE.match(name):
        return (
            SHAPE_LATENCY
            if m.group(2) == "latency_us"
            else SlotKind("axis", "none", None, f"the {m.group(3)} of a shape")
        )
    if m := _CAPTURE.match(name):
        whose = "this version's capture" if m.group(1) == "profiler" else "the capture of the version it builds on"
        what = f"{m.group(3)} stall reason" if m.group(2) else m.group(3).replace("_", " ")
        unit = "%" if m.group(3).endswith("pct") else None
        return SlotKind(
            "capture", "after" if m.group(1) == "profiler" else "before", unit, f"{what} in {whose} (profiler)"
        )
    if m := _FIXED_AXIS.match(name):
        return SlotKind("axis", "none", None, f"the {m.group(1)} of every benchmarked shape (a constant)")
    return None


def _num(v: Any) -> bool:
    return type(v) in (int, float)


def resolve(agent: dict, name: str) -> int | float | None:
    """The value at a slot name, or None when the packet has none there."""
    if kind_of(name) is None:
        return None
    if m := _SHAPE.match(name):
        m_ = agent.get("measurements") if isinstance(agent, dict) else None
        rows = m_.get("per_shape_latency") if isinstance(m_, dict) else None
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get("shape") == m.group(1):
                value = row.get("latency_us") if m.group(2) == "latency_us" else (row.get("axes") or {}).get(m.group(3))
                return value if _num(value) else None
        return None
    node: Any = agent
    for part in name.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node if _num(node) else None
