"""The dataset's tables from every trace's ingest outputs: measurements, autotune rows, runs, kernels.

Keys. run_id joins samples to runs: one measured run (a version's benchmark of one shape, or one Helion
autotune run), so a revert that re-measures the kernel it restores is a run of its own with its own
latency; problem_id says which runs measured the same problem (code, shape, GPU, DSL). kernel_blob
joins runs to kernels; group joins runs to the split. Trace run ids are computed from published
values only (`optrace.dataset.sources`). Rows are sorted, so every output is byte-identical on re-runs.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optrace.dataset.columns import (
    AUTOTUNE_SOURCE,
    AXIS_PREFIX,
    HELION_DSL,
    TABLES,
    TRACE_SOURCE,
    Column,
    column_names,
)
from optrace.dataset.sources import helion_dtypes
from optrace.errors import InputError
from optrace.mine.ladder import Step, Thresholds, run_ladder
from optrace.rows import VersionRow

if TYPE_CHECKING:
    from optrace.ingest.hardware import HardwareTable
    from optrace.scrub.anonymize import Scrubber

# Versioned domain tags: a change to a recipe must change every id, never silently reuse one.
RUN_ID_DOMAIN = "optrace.trace-run.v3"
PROBLEM_ID_DOMAIN = "optrace.trace-problem.v1"
# As the ladder reads `quality_gate.result`.
GATE_FAILED = ("FAIL", "TIMEOUT_FAIL")

# Why a version contributes no measurement; the first that applies is counted, in this order.
EXCLUSIONS = {
    "carried_forward": "its numbers were copied from an earlier version (`carried_from`)",
    "no_number": "no genuine geomean: absent, incomplete, zero, negative or NaN",
    "failed_correctness": "correctness status set and not PASS",
    "gate_failed": "quality gate FAIL or TIMEOUT_FAIL",
    "infrastructure": "its subject reports an infrastructure failure",
    "no_kernel": "no committed kernel.py for the version (no commit, or none holds kernel.py)",
    "uncommitted_kernel": "its commits left kernel.py unchanged: the code it measured is not in the history "
    "(the blob is the incumbent's)",
    "rebaseline": "the ladder marks it a re-baseline: the harness changed, not the kernel",
    "unit_slip": "the ladder rejects it as a unit slip: latencies about 10^3 off the floor's with no harness "
    "change (ns or ms written as µs)",
    "geomean_only": "only a geomean over the workload set, no per-shape numbers",
    "source_withheld": "its kernel source cannot be published (see `withheld` below), so a sample would "
    "join to no code",
}
# Why a joined autotune row is left out of the dataset.
AUTOTUNE_EXCLUSIONS = {
    "source_withheld": "its run's kernel_source cannot be published",
    "unknown_hardware": "Helion's `hardware` names no GPU of the hardware table, so the run has no group",
}


@dataclass(frozen=True)
class TraceInput:
    """One trace's ingest outputs, and its published sources (`trace_sources`)."""

    meta: dict
    versions: list[VersionRow]
    autotune: list[dict]
    sources: dict  # trace_sources()

    @property
    def label(self) -> str:
        return self.meta["source_label"]


@dataclass(frozen=True)
class Line:
    origin: str  # trace label the line came from, to name conflicts; not written
    row: dict


@dataclass
class TraceSummary:
    versions: int = 0
    measured_versions: int = 0
    measurements: int = 0
    excluded: Counter = field(default_factory=Counter)
    autotune: dict | None = None  # ingest's autotune report
    autotune_rows: int = 0
    autotune_excluded: Counter = field(default_factory=Counter)
    withheld: list[str] = field(default_factory=list)  # why sources could not be published


@dataclass
class Dataset:
    tables: dict[str, list[dict]]
    axis_columns: list[Column]
    summaries: dict[str, TraceSummary]
    conflicts: list[str]

    def columns(self, table: str) -> list[Column]:
        return [*TABLES[table], *(self.axis_columns if table == "runs" else [])]


def problem_fields(kernel_blob: str, shape: str, target: dict, dsl: str) -> tuple[str, ...]:
    return (kernel_blob, shape, target["vendor"], target["arch"], target["product"], dsl)


def problem_id_of(kernel_blob: str, shape: str, target: dict, dsl: str) -> str:
    """64-hex SHA-256 over NUL-joined published fields (Helion's layout): the code, the shape, the GPU, the DSL."""
    parts = (PROBLEM_ID_DOMAIN, *problem_fields(kernel_blob, shape, target, dsl))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def run_id_of(kernel_blob: str, shape: str, target: dict, dsl: str, trace: str, version: int) -> str:
    """The problem's fields, then the (published) trace label and the version that measured it."""
    parts = (RUN_ID_DOMAIN, *problem_fields(kernel_blob, shape, target, dsl), trace, str(version))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


# How mine/ladder.unit_slip words its rejection: the one rejection whose numbers are in the wrong unit
# (a reverted or failed attempt is a genuine measurement and stays).
UNIT_SLIP_REASON = "unit slip:"


def exclusion(row: VersionRow, step: Step, sources: dict) -> str | None:
    """Why this version's numbers are not genuine, publishable measurements of its committed kernel, or None."""
    if row["carried_from"]:
        return "carried_forward"
    if row["geomean_us"] is None:
        return "no_number"
    status = row["correctness"]["status"]
    if status is not None and status != "PASS":
        return "failed_correctness"
    if (row["quality_gate"]["result"] or "").upper() in GATE_FAILED:
        return "gate_failed"
    if row["infrastructure"]:
        return "infrastructure"
    if row["kernel_blob"] is None:
        return "no_kernel"
    if not row["kernel_changed"]:
        return "uncommitted_kernel"
    if step.outcome == "rebaseline":
        return "rebaseline"
    if step.outcome == "rejected" and step.reason.startswith(UNIT_SLIP_REASON):
        return "unit_slip"
    if not row["by_shape_us"]:
        return "geomean_only"
    if sources["kernels"].get(row["kernel_blob"], {}).get("kernel_blob") is None:
        return "source_withheld"
    return None


def latency(trace: str, row: VersionRow, shape: str, value: object) -> float:
    # ingest keeps only positive finite per-shape numbers; anything else is a broken work file
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{trace} {row['version']}", f"by_shape_us[{shape!r}] = {value!r} is not a positive number")
    return float(value)


# A slug word that is a shape constant (h4096, n4096, k128, 512): softmax_h4096 and softmax_h8192 are
# one family, whose rows a split must keep together.
_SHAPE_WORD = re.compile(r"[a-z]{0,2}\d+")


def operator_family(operator_slug: str) -> str:
    return "-".join(w for w in operator_slug.split("-") if not _SHAPE_WORD.fullmatch(w)) or operator_slug


class Context:
    """What one trace contributes to every run line it writes: published names, the GPU, the group."""

    def __init__(self, t: TraceInput, scrubber: Scrubber, table: HardwareTable):
        self.t, self.scrub, self.table = t, scrubber, table
        self.label = scrubber.private(t.label)
        self.definition = scrubber.private(t.meta["operator_name"])
        self.family = operator_family(t.meta["operator_slug"])

    def target_columns(self, vendor: str, arch: str, product: str, cc: str | None) -> dict:
        return {
            "group": f"{self.family}/{product}",
            "vendor": vendor,
            "arch": arch,
            "product": product,
            "compute_capability": cc,
        }

    def trace_line(self, row: VersionRow, shape_key: str, kernel: dict) -> dict:
        target, meta = self.t.meta["target"], self.t.meta
        shape = f"{self.definition}:{self.scrub.private(shape_key)}"
        axes = {**meta["axes"]["const"], **meta["shape_axes"].get(shape_key, {})}
        return {
            "run_id": run_id_of(kernel["kernel_blob"], shape, target, kernel["dsl"], self.label, row["n"]),
            "problem_id": problem_id_of(kernel["kernel_blob"], shape, target, kernel["dsl"]),
            "source": TRACE_SOURCE,
            "kernel_blob": kernel["kernel_blob"],
            **self.target_columns(target["vendor"], target["arch"], target["product"], target.get("isa")),
            "shape": shape,
            "kernel_name": None,
            "input_shapes": None,
            "backend": None,
            "dtypes": self.t.sources["dtypes"],
            **{AXIS_PREFIX + k: v for k, v in axes.items()},
        }


def trace_measurements(
    ctx: Context, thresholds: Thresholds, summary: TraceSummary
) -> tuple[list[dict], list[Line], list[Line]]:
    t = ctx.t
    steps = {s.version: s for s in run_ladder(t.versions, thresholds)}
    samples, runs, kernels = [], [], []
    for row in sorted(t.versions, key=lambda r: r["n"]):
        reason = exclusion(row, steps[row["version"]], t.sources)
        if reason:
            summary.excluded[reason] += 1
            continue
        summary.measured_versions += 1
        kernel = t.sources["kernels"][row["kernel_blob"]]
        kernels.append(Line(t.label, kernel_row(kernel, kernel["dsl"])))
        for shape, value in sorted(row["by_shape_us"].items()):
            line = ctx.trace_line(row, shape, kernel)
            samples.append(
                {
                    "run_id": line["run_id"],
                    "trace": ctx.label,
                    "version": row["n"],
                    "verdict": row["verdict"],
                    "latency_us": latency(t.label, row, shape, value),
                }
            )
            runs.append(Line(t.label, line))
    summary.measurements = len(samples)
    return samples, runs, kernels


def kernel_row(published: dict, dsl: str) -> dict:
    return {
        "kernel_blob": published["kernel_blob"],
        "dsl": dsl,
        "blob_bytes": published["blob_bytes"],
        "source_text": published["source"],
    }


# ---------------------------------------------------------------- autotune rows


def autotune_samples(ctx: Context, summary: TraceSummary) -> tuple[list[dict], list[Line], list[Line]]:
    """ingest's joined rows -> results (autotune.parquet), their run's context, their kernel."""
    samples, runs, kernels = [], [], []
    published = ctx.t.sources["autotune_runs"]
    for r in ctx.t.autotune:
        pub = published.get(r["run_id"])
        if pub is None or pub["kernel_blob"] is None:
            summary.autotune_excluded["source_withheld"] += 1
            continue
        part = ctx.table.match(r["hardware"]) if r["hardware"] else None
        if part is None:
            summary.autotune_excluded["unknown_hardware"] += 1
            continue
        samples.append(
            {
                "run_id": pub["run_id"],
                "trace": ctx.label,
                "status": r["status"],
                "perf_ms": r["perf_ms"],
                "compile_time_s": r["compile_time_s"],
                "generation": r["generation"],
                "config": r["config"],
            }
        )
        runs.append(
            Line(
                ctx.t.label,
                {
                    "run_id": pub["run_id"],
                    "problem_id": pub["run_id"],  # Helion's run_id is its problem's content hash
                    "source": AUTOTUNE_SOURCE,
                    "kernel_blob": pub["kernel_blob"],
                    **ctx.target_columns(part.vendor, part.arch, part.product, part.cc or part.gfx),
                    "shape": None,
                    "kernel_name": pub["kernel_name"],
                    "input_shapes": r["input_shapes"],
                    "backend": r["backend"],
                    "dtypes": helion_dtypes(r["dtypes"]) or None,
                },
            )
        )
        kernels.append(Line(ctx.t.label, kernel_row(pub, HELION_DSL)))
    summary.autotune_rows = len(samples)
    return samples, runs, kernels


# ---------------------------------------------------------------- assembling


def differing(a: Line, b: Line) -> list[str]:
    return sorted(k for k in a.row.keys() | b.row.keys() if a.row.get(k) != b.row.get(k))


def merge(lines: list[Line], key: str, what: str) -> tuple[list[dict], list[str]]:
    """One row per key. Rows of one key agree on every hashed field by construction; a field outside
    the hash (kernel_name, a shared Helion run's group) may not: the first trace in label order wins,
    the rest are named."""
    first: dict[str, Line] = {}
    conflicts = set()
    for ln in lines:
        kept = first.setdefault(ln.row[key], ln)
        if kept.row != ln.row:
            conflicts.add(
                f"{what} {ln.row[key]}: {', '.join(differing(kept, ln))} differ between {kept.origin} and "
                f"{ln.origin}; {kept.origin}'s kept"
            )
    return [first[k].row for k in sorted(first)], sorted(conflicts)


# per-run fields: what differs between two runs of one problem by design
RUN_OWN = ("run_id",)


def problem_conflicts(lines: list[Line]) -> list[str]:
    """Runs of one problem (same code, shape, GPU, DSL) in different traces whose context disagrees
    (axes, group, dtypes): each run keeps its trace's context, and the disagreement is named."""
    first: dict[str, Line] = {}
    conflicts = set()
    for ln in (ln for ln in lines if ln.row["source"] == TRACE_SOURCE):  # an autotune run is its own problem
        own = Line(ln.origin, {k: v for k, v in ln.row.items() if k not in RUN_OWN})
        kept = first.setdefault(own.row["problem_id"], own)
        if kept.row != own.row:
            conflicts.add(
                f"problem {own.row['problem_id']}: {', '.join(differing(kept, own))} differ between "
                f"{kept.origin} and {own.origin}"
            )
    return sorted(conflicts)


def axis_type(values: list) -> str:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int64"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "float64"
    return "string"


def axis_columns(runs: list[dict]) -> list[Column]:
    """The union of named axes over every definition, each typed by the values it takes."""
    values: dict[str, list] = {}
    for r in runs:
        for k, v in r.items():
            if k.startswith(AXIS_PREFIX) and v is not None:
                values.setdefault(k, []).append(v)
    for name in values:
        if name in column_names("runs"):
            raise InputError(name, "an axis name collides with a runs column")
    return [Column(name, axis_type(vs), True, "named axis") for name, vs in sorted(values.items())]


def typed_axes(runs: list[dict], axes: list[Column]) -> None:
    """Every axis column on every run (null where absent), in its column's type."""
    cast = {"int64": int, "float64": float, "string": str}
    for r in runs:
        for col in axes:
            v = r.get(col.name)
            r[col.name] = None if v is None else cast[col.type](v)


def build(
    traces: list[TraceInput],
    thresholds: Thresholds,
    scrubber: Scrubber | None = None,
    table: HardwareTable | None = None,
) -> Dataset:
    from optrace.ingest.hardware import HardwareTable
    from optrace.scrub.anonymize import Scrubber

    scrubber = scrubber or Scrubber()
    if table is None:
        table = HardwareTable.load()
    traces = sorted(traces, key=lambda t: (t.label, t.meta["slug"]))
    labels = [t.label for t in traces]
    if len(set(labels)) != len(labels):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        raise InputError(", ".join(dup), "two traces share this label; measurements could not tell them apart")
    measurements, autotune, run_lines, kernel_lines = [], [], [], []
    summaries: dict[str, TraceSummary] = {}
    for t in traces:
        ctx = Context(t, scrubber, table)
        s = summaries[ctx.label] = TraceSummary(
            versions=len(t.versions),
            autotune=t.meta["autotune"],
            withheld=sorted({k["withheld"] for k in t.sources["kernels"].values() if k["withheld"]}),
        )
        m, m_runs, m_kernels = trace_measurements(ctx, thresholds, s)
        a, a_runs, a_kernels = autotune_samples(ctx, s)
        measurements += m
        autotune += a
        run_lines += m_runs + a_runs
        kernel_lines += m_kernels + a_kernels
    runs, run_conflicts = merge(run_lines, "run_id", "run")
    kernels, kernel_conflicts = merge(kernel_lines, "kernel_blob", "kernel")
    axes = axis_columns(runs)
    typed_axes(runs, axes)
    measurements.sort(key=lambda m: (m["run_id"], m["trace"], m["version"]))
    autotune.sort(
        key=lambda r: (
            r["run_id"],
            r["trace"],
            r["generation"],
            r["config"],
            r["status"],
            -1.0 if r["perf_ms"] is None else r["perf_ms"],
            -1.0 if r["compile_time_s"] is None else r["compile_time_s"],
        )
    )
    ds = Dataset(
        {"measurements": measurements, "autotune": autotune, "runs": runs, "kernels": kernels},
        axes,
        summaries,
        run_conflicts + problem_conflicts(run_lines) + kernel_conflicts,
    )
    refuse_denied(ds, scrubber)
    return ds


def _strings(ds: Dataset) -> Iterator[tuple[str, str, str]]:
    for name, rows in ds.tables.items():
        for row in rows:
            for col, v in row.items():
                if isinstance(v, str):
                    yield name, col, v


def refuse_denied(ds: Dataset, scrubber: Scrubber) -> None:
    """The backstop: nothing the dataset would write holds a denylisted term (the term is not repeated)."""
    for table, col, value in _strings(ds):
        if any(True for _ in scrubber.denied_terms(value)):
            raise InputError(f"{table}.{col}", "holds a denylisted term after scrubbing; nothing written")
