"""Dataset: every trace's ingest outputs -> the lean cost-model dataset (README "What it produces").

`build` reads, per trace, its ingest outputs and the kernel sources its samples measured (kernel.py
blobs, Helion's `kernel_source`, scrubbed like packets; `trace_sources`), and writes from all at once:
  measurements.parquet  one row per genuine (trace, version, shape) latency measurement
  autotune.parquet      one row per joined Helion autotune result
  runs.parquet          one row per run_id: the typed context its samples share
  kernels.parquet       one row per distinct (scrubbed) kernel source
  README.md             every column with its type and meaning, counts, exclusions, the loader recipe
`split` writes split.parquet: a deterministic train/test assignment per group (operator family x GPU).
`csv` writes a CSV copy next to each parquet file given (the `dataset.csv` switch).
`load(path)` is the loader: the joined samples frame.

Keys. run_id joins samples to runs; kernel_blob joins runs to kernels; group joins runs to the split.
kernel_blob is the git blob id of the source text *as published* (`git hash-object` of kernels.source),
so anyone can verify a row. When the scrub changed nothing that is the blob id in the trace's history;
when it changed something the trace's id is never written: it hashes the unscrubbed text, so it (and
any id computed from it) would let anyone confirm a guessed denylisted term offline. Trace run_ids are
computed from published values only, for the same reason; an autotune run keeps Helion's own run_id
unless its source was scrubbed, when it is re-derived from the published source the same way.

Every output is byte-identical across re-runs: rows are sorted, parquet is written from an explicit
Arrow schema (no pandas index or metadata, no timestamps, fixed compression). pyarrow and pandas are
imported where they are used, so importing this module stays cheap.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optrace.errors import InputError
from optrace.jsonio import read_json, read_jsonl, write_atomic, write_text_atomic
from optrace.mine.ladder import Thresholds, run_ladder
from optrace.printable import escape_controls
from optrace.rows import VersionRow, read_versions
from optrace.scrub.leak_patterns import add_denylist_argument

if TYPE_CHECKING:  # imported where they are used at run time (see above)
    import pandas as pd

    from optrace.ingest.hardware import HardwareTable
    from optrace.scrub.anonymize import Scrubber

TRACE_SOURCE = "trace"
AUTOTUNE_SOURCE = "helion-autotune"
# Versioned domain tags: a change to a recipe must change every id, never silently reuse one.
RUN_ID_DOMAIN = "optrace.trace-run.v2"
HELION_RUN_ID_DOMAIN = "optrace.helion-run.v1"
SPLIT_DOMAIN = "optrace.split.v1"
HELION_DSL = "helion"
# As the ladder reads `quality_gate.result`.
GATE_FAILED = ("FAIL", "TIMEOUT_FAIL")
# A kernel.py this large is not a kernel a cost model should read (and not worth scrubbing).
SOURCE_CAP = 4 * 1024 * 1024
AXIS_PREFIX = "axis_"

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
    "geomean_only": "only a geomean over the workload set, no per-shape numbers",
    "source_withheld": "its kernel source cannot be published (see `withheld` below), so a sample would "
    "join to no code",
}
# Why a joined autotune row is left out of the dataset.
AUTOTUNE_EXCLUSIONS = {
    "source_withheld": "its run's kernel_source cannot be published",
    "unknown_hardware": "Helion's `hardware` names no GPU of the hardware table, so the run has no group",
}


# ---------------------------------------------------------------- the column table (docs and data from one place)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # string | int64 | float64
    nullable: bool
    meaning: str


def _cols(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    """(name, type with a trailing `?` when nullable, meaning)."""
    return tuple(Column(n, t.rstrip("?"), t.endswith("?"), m) for n, t, m in specs)


TABLES: dict[str, tuple[Column, ...]] = {
    "measurements": _cols(
        ("run_id", "string", "join key to `runs`"),
        ("trace", "string", "label of the trace the sample comes from (denylisted terms replaced)"),
        ("version", "int64", "the version's number N (`v<N>`); sorts numerically"),
        ("verdict", "string", "what the trace did with the version: baseline, kept, reverted, none"),
        ("latency_us", "float64", "measured latency of the version's kernel on the run's shape, in µs"),
    ),
    "autotune": _cols(
        ("run_id", "string", "join key to `runs` (Helion's run_id, or re-derived when its source was scrubbed)"),
        ("trace", "string", "label of the trace whose `autotune/` held the row"),
        (
            "status",
            "string",
            "ok or deduplicated (feasible, perf_ms set); error, timeout, peer_compilation_fail (infeasible labels)",
        ),
        (
            "perf_ms",
            "float64?",
            "measured time in ms; for deduplicated rows the representative's; null when infeasible",
        ),
        ("compile_time_s", "float64?", "precompile time in s; null when no precompile ran"),
        ("generation", "int64", "search generation (0 = initial population)"),
        (
            "config",
            "string",
            "the config as compact JSON with sorted keys; Helion's config_id is `sha256(config)[:16]`",
        ),
    ),
    "runs": _cols(
        ("run_id", "string", "content-derived id of the problem: code, shape, GPU, codegen (see Keys)"),
        (
            "source",
            "string",
            f"`{TRACE_SOURCE}` (a trace's memory/v<N>.json) or `{AUTOTUNE_SOURCE}` (Helion autotune telemetry)",
        ),
        ("kernel_blob", "string", "join key to `kernels`"),
        (
            "group",
            "string",
            "`<operator family>/<GPU product>`: the unit of the train/test split (the family is "
            "the store's operator slug of the trace without shape constants: softmax_h4096 -> "
            "softmax)",
        ),
        ("vendor", "string", "GPU vendor (nvidia, amd)"),
        ("arch", "string", "GPU architecture (ampere, hopper, blackwell, cdna3, ...)"),
        ("product", "string", "GPU product of the hardware table (h100, a100, mi300x, ...)"),
        ("compute_capability", "string?", "the product's compute capability (sm_90) or gfx target (gfx942)"),
        (
            "shape",
            "string?",
            "`<definition>:<shape key>`: the workload's key namespaced by the benchmark "
            "definition the trace measured (trace runs); the definition is the part before "
            "the first `:`",
        ),
        ("kernel_name", "string?", "Helion's kernel function name (autotune runs)"),
        ("input_shapes", "string?", "Helion's input shapes, e.g. `[(64, 4096), (4096,)]` (autotune runs)"),
        ("backend", "string?", "Helion's codegen backend, e.g. triton (autotune runs)"),
        (
            "dtypes",
            "string?",
            "input dtypes in argument order, comma-separated (bfloat16,bfloat16,...); null "
            "when the definition states none",
        ),
    ),
    "kernels": _cols(
        ("kernel_blob", "string", "git blob id of `source_text` (`git hash-object`); see Keys"),
        ("dsl", "string", f"the DSL the source is written in (triton, cuda, cutedsl, ..., {HELION_DSL})"),
        ("blob_bytes", "int64", "size in bytes of the source as measured (before scrubbing)"),
        ("source_text", "string", "the kernel source, comments and strings scrubbed like packets"),
    ),
    "split": _cols(
        ("group", "string", "a group of `runs`"),
        ("split", "string", "train or test"),
    ),
}
AXIS_DOC = (
    "axis_<name>",
    "int64? (float64? or string? when a value is not an integer)",
    "one column per named axis over all definitions (const and per-shape var axes); null where "
    "the run's definition lacks the axis",
)
FILES = {name: f"{name}.parquet" for name in TABLES}
BUILT = ("measurements", "autotune", "runs", "kernels")


def column_names(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def _arrow_type(type_name: str) -> Any:  # a pyarrow DataType (pyarrow ships no stubs)
    import pyarrow as pa

    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64()}[type_name]


def arrow_schema(columns: Iterable[Column]) -> Any:  # a pyarrow Schema
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type), nullable=c.nullable) for c in columns])


# ---------------------------------------------------------------- typed rows


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


# ---------------------------------------------------------------- publishing sources (per trace)


def git_blob_id(data: bytes) -> str:
    """`git hash-object`: SHA-1 over `blob <size>\\0<data>`."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Published:
    kernel_blob: str | None  # None: withheld
    blob_bytes: int
    source: str | None
    withheld: str | None  # why, without the offending text

    def to_json(self) -> dict:
        return {
            "kernel_blob": self.kernel_blob,
            "blob_bytes": self.blob_bytes,
            "source": self.source,
            "withheld": self.withheld,
        }


def publish_source(raw: bytes, dsl: str, scrubber: Scrubber) -> Published:
    """The scrubbed source and its key, or why it cannot leave the machine. The scrub is the packets'
    (`Scrubber.code`); a denylisted term it leaves (an identifier in code) withholds the whole source."""
    if not raw.strip():  # Helion writes "" when inspect cannot read the source
        return Published(None, len(raw), None, "no source recorded (empty)")
    if len(raw) > SOURCE_CAP:
        return Published(None, len(raw), None, f"larger than {SOURCE_CAP} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Published(None, len(raw), None, f"not UTF-8 (byte {exc.start})")
    try:
        scrubbed = scrubber.code(text, dsl if dsl != HELION_DSL else "any")
    except ValueError:  # a DSL (stated on the sheet) whose comment syntax the scrubber does not know
        return Published(None, len(raw), None, f"no scrub rule for DSL {dsl!r}")
    if any(True for _ in scrubber.denied_terms(scrubbed)):
        return Published(None, len(raw), None, "a denylisted term outside comments and strings")
    return Published(git_blob_id(scrubbed.encode("utf-8")), len(raw), scrubbed, None)


def definition_dtypes(definition: object) -> str | None:
    """The definition's input dtypes in argument order, comma-joined; None when it states none."""
    inputs = definition.get("inputs") if isinstance(definition, dict) else None
    specs = inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, list) else []
    dtypes = [s["dtype"] for s in specs if isinstance(s, dict) and isinstance(s.get("dtype"), str)]
    return ",".join(dtypes) or None


def helion_dtypes(text: str) -> str:
    """Helion's `"['torch.bfloat16', ...]"` in the trace runs' spelling: `bfloat16,...`."""
    return ",".join(t.strip(" '\"").removeprefix("torch.") for t in text.strip("[]").split(",") if t.strip(" '\""))


def helion_run_id(published_source: str, codegen: str, input_shapes: str, dtypes: str, hardware: str) -> str:
    parts = (HELION_RUN_ID_DOMAIN, published_source, codegen, input_shapes, dtypes, hardware)
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def read_whole(read_blob: Callable[[str], bytes | None], blob: str) -> bytes:
    data = read_blob(blob)
    assert data is not None  # None only over a cap, and none is given
    return data


def trace_sources(
    trace: str | Path, versions: list[VersionRow], scrubber: Scrubber, scratch: Path | None = None
) -> dict:
    """One trace's published sources: the kernel of every blob its versions name and of every Helion
    run in its `autotune/`, and its definition's dtypes. Read by the build itself, not a job per trace:
    the reading is ~5 ms of a ~90 ms process (benchmarks/README.md)."""
    from optrace.ingest.autotune import ingest_autotune
    from optrace.ingest.git_history import open_trace
    from optrace.ingest.trace_files import read_text

    dsl_of = {r["kernel_blob"]: r["dsl"] for r in versions if r["kernel_blob"]}
    with open_trace(trace, scratch) as opened:
        kernels = {
            blob: {"dsl": dsl, **publish_source(read_whole(opened.history.read_blob, blob), dsl, scrubber).to_json()}
            for blob, dsl in sorted(dsl_of.items())
        }
        runs = {}
        for row in ingest_autotune(opened.files).rows:
            ctx = row.context
            if row.run_id in runs:
                continue
            pub = publish_source(ctx.kernel_source.encode("utf-8"), HELION_DSL, scrubber)
            unchanged = pub.source == ctx.kernel_source
            runs[row.run_id] = {
                **pub.to_json(),
                "run_id": row.run_id
                if unchanged or pub.source is None
                else helion_run_id(pub.source, ctx.codegen, ctx.input_shapes, ctx.dtypes, ctx.hardware),
                "kernel_name": scrubber.private(ctx.kernel_name),
            }
        text = read_text(opened.files, "definition.json")
    try:
        definition = json.loads(text) if text else None
    except (ValueError, RecursionError):  # malformed, a huge integer or nested too deep
        definition = None  # ingest already warned about it
    return {"dtypes": definition_dtypes(definition), "kernels": kernels, "autotune_runs": dict(sorted(runs.items()))}


# ---------------------------------------------------------------- trace measurements


def run_id_of(kernel_blob: str, shape: str, target: dict, dsl: str) -> str:
    """64-hex SHA-256 over NUL-joined published fields (Helion's layout): the code, the shape, the GPU, the DSL."""
    parts = (RUN_ID_DOMAIN, kernel_blob, shape, target["vendor"], target["arch"], target["product"], dsl)
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def exclusion(row: VersionRow, outcome: str, sources: dict) -> str | None:
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
    if outcome == "rebaseline":
        return "rebaseline"
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
            "run_id": run_id_of(kernel["kernel_blob"], shape, target, row["dsl"]),
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
    outcomes = {s.version: s.outcome for s in run_ladder(t.versions, thresholds)}
    samples, runs, kernels = [], [], []
    for row in sorted(t.versions, key=lambda r: r["n"]):
        reason = exclusion(row, outcomes[row["version"]], t.sources)
        if reason:
            summary.excluded[reason] += 1
            continue
        summary.measured_versions += 1
        kernel = t.sources["kernels"][row["kernel_blob"]]
        kernels.append(Line(t.label, kernel_row(kernel, row["dsl"])))
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


def merge(lines: list[Line], key: str, what: str) -> tuple[list[dict], list[str]]:
    """One row per key. Rows of one key agree on every hashed field by construction; a field outside
    the hash (axes, group, kernel_name) may not: the first trace in label order wins, the rest are named."""
    first: dict[str, Line] = {}
    conflicts = set()
    for ln in lines:
        kept = first.setdefault(ln.row[key], ln)
        if kept.row != ln.row:
            fields = sorted(k for k in kept.row.keys() | ln.row.keys() if kept.row.get(k) != ln.row.get(k))
            conflicts.add(
                f"{what} {ln.row[key]}: {', '.join(fields)} differ between {kept.origin} and "
                f"{ln.origin}; {kept.origin}'s kept"
            )
    return [first[k].row for k in sorted(first)], sorted(conflicts)


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
        run_conflicts + kernel_conflicts,
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


# ---------------------------------------------------------------- split


# The config schema's `dataset.test_fraction` default, for the command run by hand.
DEFAULT_TEST_FRACTION = 0.2


def split_groups(groups: Iterable[str], test_fraction: float) -> dict[str, str]:
    """Deterministic train/test by group: groups are ordered by SHA-256 of `SPLIT_DOMAIN\\0group` and the
    first round(fraction x groups) go to test (at least one and never all, given two groups or more).
    The assignment depends only on the set of groups and the fraction, never on row order or counts."""
    if not 0 <= test_fraction < 1:
        raise InputError("--test-fraction", f"{test_fraction} is not in [0, 1)")
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(f"{SPLIT_DOMAIN}\x00{g}".encode()).hexdigest())
    n = len(ordered)
    n_test = 0 if test_fraction == 0 or n < 2 else min(n - 1, max(1, round(test_fraction * n)))
    return {g: "test" if i < n_test else "train" for i, g in enumerate(ordered)}


def write_split(dataset_dir: Path, test_fraction: float) -> dict[str, str]:
    import pyarrow.parquet as pq

    runs = dataset_dir / FILES["runs"]
    if not runs.is_file():
        raise InputError(runs, "file not found (run `optrace dataset build` first)")
    groups = pq.read_table(runs, columns=["group"]).column("group").to_pylist()
    assignment = split_groups(groups, test_fraction)
    write_parquet(
        dataset_dir / FILES["split"], [{"group": g, "split": s} for g, s in sorted(assignment.items())], TABLES["split"]
    )
    return assignment


# ---------------------------------------------------------------- loader


PANDAS_DTYPES = {"string": "string", "int64": "Int64", "float64": "Float64"}


def sample_columns(axis_columns: Iterable[Column] = ()) -> list[Column]:
    """The columns of `load()`'s frame, in order: the sample tables, then runs, kernels and the split.
    Every one is nullable there (a trace sample has no perf_ms, an autotune sample no latency_us)."""
    seen, out = set(), []
    for name in ("measurements", "autotune", "runs", "kernels", "split"):
        for c in [*TABLES[name], *(axis_columns if name == "runs" else ())]:
            if c.name not in seen:
                seen.add(c.name)
                out.append(c)
    return out


def load(path: str | os.PathLike) -> pd.DataFrame:
    """The joined samples frame of a dataset directory: one row per sample (trace measurement or
    autotune result) with its run's context, its kernel source and (once `split` ran) its split.
    Column dtypes are pandas' nullable ones (`sample_columns`, README "Loading")."""
    import pandas as pd
    import pyarrow.parquet as pq

    root = Path(path)
    for name in BUILT:
        if not (root / FILES[name]).is_file():
            raise InputError(root / FILES[name], "file not found (not a dataset directory?)")
    mapper = {
        _arrow_type(t): pd.StringDtype() if t == "string" else pd.Int64Dtype() if t == "int64" else pd.Float64Dtype()
        for t in PANDAS_DTYPES
    }.get

    def read(name: str) -> pd.DataFrame:
        return pq.read_table(root / FILES[name]).to_pandas(types_mapper=mapper)

    runs = read("runs")
    axes = [Column(c, str(runs[c].dtype), True, "named axis") for c in runs.columns if c.startswith(AXIS_PREFIX)]
    samples = pd.concat([read("measurements"), read("autotune")], ignore_index=True)
    frame = samples.merge(runs, on="run_id", how="left", validate="many_to_one")
    frame = frame.merge(read("kernels"), on="kernel_blob", how="left", validate="many_to_one")
    if (root / FILES["split"]).is_file():
        frame = frame.merge(read("split"), on="group", how="left", validate="many_to_one")
    else:
        frame["split"] = pd.Series(pd.NA, index=frame.index, dtype="string")
    dtypes = {c.name: PANDAS_DTYPES.get(c.type, c.type) for c in sample_columns(axes)}
    return frame[list(dtypes)].astype(dtypes)


LOAD_RECIPE = """from optrace.dataset import load

samples = load("results/dataset")          # one row per sample, runs + kernels + split joined
trace = samples[samples.source == "trace"]  # latency_us per (trace, version, shape)
tuning = samples[samples.source == "helion-autotune"]
feasible = tuning[tuning.status.isin(["ok", "deduplicated"])]  # perf_ms; the others are infeasible labels
train, test = samples[samples.split == "train"], samples[samples.split == "test"]
"""


# ---------------------------------------------------------------- README


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def _type_text(c: Column) -> str:
    return c.type + ("?" if c.nullable else "")


def column_docs(ds: Dataset) -> list[str]:
    out = []
    for name in (*BUILT, "split"):
        cols = TABLES[name]
        out += [
            f"### `{FILES[name]}`",
            "",
            *_table(["column", "type", "meaning"], [[f"`{c.name}`", _type_text(c), c.meaning] for c in cols]),
        ]
        if name == "runs":
            out += [f"| `{AXIS_DOC[0]}` | {AXIS_DOC[1]} | {AXIS_DOC[2]} |"]
            out += [
                f"| `{c.name}` | {_type_text(c)} | named axis `{c.name[len(AXIS_PREFIX) :]}` |" for c in ds.axis_columns
            ]
        out.append("")
    return out


def render_readme(ds: Dataset, thresholds: Thresholds) -> str:
    t = ds.tables
    by_source = Counter(r["source"] for r in t["runs"])
    reasons = [r for r in EXCLUSIONS if any(s.excluded[r] for s in ds.summaries.values())]
    out = [
        "# Cost-model dataset",
        "",
        f"Built by `optrace dataset` from {len(ds.summaries)} trace(s). Re-baselines follow the ladder "
        f"thresholds (milestone {thresholds.milestone_pct} %, mega {thresholds.mega_pct} %, "
        f"re-baseline ×{thresholds.rebaseline_factor}).",
        "",
        "## Files",
        "",
        *_table(
            ["file", "rows", "one row per"],
            [
                [
                    f"`{FILES['measurements']}`",
                    len(t["measurements"]),
                    "genuine (trace, version, shape) latency measurement",
                ],
                [f"`{FILES['autotune']}`", len(t["autotune"]), "joined Helion autotune result"],
                [
                    f"`{FILES['runs']}`",
                    f"{len(t['runs'])} ({by_source[TRACE_SOURCE]} {TRACE_SOURCE}, "
                    f"{by_source[AUTOTUNE_SOURCE]} {AUTOTUNE_SOURCE})",
                    "run_id: its typed context",
                ],
                [f"`{FILES['kernels']}`", len(t["kernels"]), "distinct published kernel source"],
                [f"`{FILES['split']}`", "written by `optrace dataset split`", "group: train or test"],
            ],
        ),
        "",
        "## Keys",
        "",
        "- `run_id` joins both sample tables to `runs` (many to one). It names a *problem*, not a sample: the "
        "same code on the same shape and GPU in two traces, or re-measured after a revert, is one run with "
        "several samples, so what differs per sample (trace, version, verdict) stays on the sample row. "
        f"Trace runs: SHA-256 of `{RUN_ID_DOMAIN}\\0kernel_blob\\0shape\\0vendor\\0arch\\0product\\0dsl` (all "
        "as published). Autotune runs: Helion's own run_id; when the scrub changed the run's kernel_source, "
        f"SHA-256 of `{HELION_RUN_ID_DOMAIN}\\0source\\0codegen settings\\0input_shapes\\0dtypes\\0hardware` "
        "over the published source instead.",
        "- `kernel_blob` joins `runs` to `kernels` (many to one): the git blob id of `kernels.source_text` exactly as "
        "published (`git hash-object`), so every row can be verified. Sources are scrubbed like packets "
        "(denylisted terms, paths, e-mails, hashes, version ids in comments and strings); when the scrub changed "
        "nothing the id is the trace's own blob of kernel.py, when it changed something the trace's id is not "
        "published, because it hashes the unscrubbed text and would let a guessed private term be confirmed "
        "offline. A source that still holds a denylisted term (in code) is withheld with its samples.",
        "- `group` joins `runs` to `split`: operator family / GPU product. Rows of "
        "one family on one GPU are highly correlated, so the split is by group, never by row.",
        "",
        "## Columns",
        "",
        *column_docs(ds),
        "Nothing a consumer can derive from another column is stored: no geomeans (derive them from the "
        "per-shape rows), no config_id (`sha256(config)[:16]`), no source hash besides the key.",
        "",
        "## Split",
        "",
        "`optrace dataset split DIR --test-fraction F` (the workflow uses `dataset.test_fraction`) writes "
        f"`{FILES['split']}`: groups are ordered by SHA-256 of `{SPLIT_DOMAIN}\\0<group>` and the first "
        "round(F × groups) are test (at least one and never all when there are two groups or more). The "
        "assignment depends only on the set of groups and F: rebuilding gives the same split, and no group "
        "is ever in both.",
        "",
        "## Trace measurements",
        "",
        "A version gives one row per shape, or none, for the first reason below that applies:",
        "",
        *[f"- `{r}`: {why}" for r, why in EXCLUSIONS.items()],
        "",
        *_table(
            ["trace", "versions", "measured", "rows", *reasons],
            [
                [label, s.versions, s.measured_versions, s.measurements, *(s.excluded[r] for r in reasons)]
                for label, s in ds.summaries.items()
            ],
        ),
        "",
    ]
    withheld = [(label, w) for label, s in ds.summaries.items() for w in s.withheld]
    if withheld:
        out += ["Withheld sources:", "", *[f"- {label}: {w}" for label, w in withheld], ""]
    out += ["## Helion autotune telemetry", ""]
    tuned = {label: s for label, s in ds.summaries.items() if s.autotune}
    if tuned:
        out += _table(
            [
                "trace",
                "rows read",
                "joined",
                "started dropped",
                "excluded on ingest",
                "unjoinable files",
                "tampered config ids",
                "in the dataset",
                *AUTOTUNE_EXCLUSIONS,
            ],
            [
                [
                    label,
                    a["rows_read"],
                    a["rows_joined"],
                    a["started_dropped"],
                    ", ".join(f"{k} {v}" for k, v in a["excluded"].items() if v) or "0",
                    len(a["unjoinable_files"]),
                    len(a["tampered_config_ids"]),
                    s.autotune_rows,
                    *(s.autotune_excluded[k] for k in AUTOTUNE_EXCLUSIONS),
                ]
                for label, s in tuned.items()
                for a in [s.autotune]
                if a  # tuned holds the traces that have one
            ],
        )
        out += [
            "",
            *[f"- `{k}`: {why}" for k, why in AUTOTUNE_EXCLUSIONS.items()],
            "",
            "Ingest's reasons and file names are in each trace's `work/<slug>/meta.json` (`autotune`).",
        ]
    else:
        out.append("No trace has an `autotune/` directory.")
    if ds.conflicts:
        out += ["", "## Context conflicts", "", *[f"- {c}" for c in ds.conflicts]]
    dtypes = [[f"`{c.name}`", PANDAS_DTYPES[c.type]] for c in sample_columns(ds.axis_columns)]
    out += [
        "",
        "## Loading",
        "",
        "```python",
        LOAD_RECIPE.rstrip("\n"),
        "```",
        "",
        "`load` returns one row per sample with these columns and pandas dtypes (all nullable: a trace "
        "sample has no perf_ms, an autotune sample no latency_us; `split` is null until `split` ran):",
        "",
        *_table(["column", "dtype"], dtypes),
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- I/O at the edges


def read_trace(work_dir: Path, trace: str | Path, scrubber: Scrubber, scratch: Path | None = None) -> TraceInput | None:
    """One trace's ingest outputs (`work_dir`) and its published sources, read from the trace; None for
    a trace that failed ingest (optrace.run.pertrace's placeholder meta.json): it has no rows to contribute."""
    meta = read_json(work_dir / "meta.json")
    if "failed" in meta:
        return None
    versions = read_versions(work_dir / "versions.jsonl")
    return TraceInput(
        meta, versions, read_jsonl(work_dir / "autotune.jsonl"), trace_sources(trace, versions, scrubber, scratch)
    )


def write_parquet(path: Path, rows: list[dict], columns: Iterable[Column]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    table = pa.Table.from_pylist(rows, schema=schema)
    write_atomic(path, lambda tmp: pq.write_table(table, tmp, compression="zstd", compression_level=3))


def write_dataset(ds: Dataset, out_dir: Path, thresholds: Thresholds) -> None:
    for name in BUILT:
        write_parquet(out_dir / FILES[name], ds.tables[name], ds.columns(name))
    write_text_atomic(out_dir / "README.md", escape_controls(render_readme(ds, thresholds), keep_layout=True))


def export_csv(parquet: Path) -> Path:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    out = parquet.with_suffix(".csv")
    table = pq.read_table(parquet)
    write_atomic(out, lambda tmp: pacsv.write_csv(table, tmp))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace dataset", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="measurements, autotune, runs, kernels (.parquet) and README.md")
    b.add_argument("work_dirs", nargs="*", type=Path, help="ingest output directories (work/<slug>)")
    b.add_argument(
        "--traces",
        nargs="*",
        default=[],
        help="the traces (work tree or .bundle), one per work dir, "
        "in the same order: their kernel sources are read from them",
    )
    b.add_argument("--out-dir", required=True, type=Path, help="the dataset directory to write")
    b.add_argument("--targets", type=Path, help="hardware table (default: the built-in one)")
    add_denylist_argument(b)
    Thresholds.add_arguments(b)
    sp = sub.add_parser("split", help="split.parquet: train/test by group")
    sp.add_argument(
        "dataset_dir",
        type=Path,
        nargs="?",
        default=Path("results/dataset"),
        help="the built dataset (default: results/dataset)",
    )
    sp.add_argument(
        "--test-fraction",
        type=float,
        default=DEFAULT_TEST_FRACTION,
        help=f"fraction of groups in test (default {DEFAULT_TEST_FRACTION})",
    )
    cp = sub.add_parser("csv", help="a .csv copy next to each parquet file")
    cp.add_argument("parquet", nargs="+", type=Path, help="parquet files of the dataset")
    args = ap.parse_args(argv)
    if args.command == "csv":
        for path in args.parquet:
            if not path.is_file():
                raise InputError(path, "file not found")
            print(f"dataset: wrote {export_csv(path)}")
        return 0
    if args.command == "split":
        assignment = write_split(args.dataset_dir, args.test_fraction)
        test = sorted(g for g, s in assignment.items() if s == "test")
        print(f"dataset split: {len(assignment)} group(s), {len(test)} test: {', '.join(test) or '-'}")
        return 0
    from optrace.scrub.anonymize import Scrubber

    scrubber = Scrubber.from_env(args.denylist_env)
    if len(args.traces) != len(args.work_dirs):
        raise InputError(
            "dataset build",
            f"{len(args.work_dirs)} work dir(s) but {len(args.traces)} trace(s) "
            "given; --traces names one trace per work dir",
        )
    from optrace.ingest.hardware import HardwareTable

    table = HardwareTable.load(args.targets)
    thresholds = Thresholds.from_args(args)
    inputs, left_out = [], []
    for work_dir, trace in zip(args.work_dirs, args.traces):
        try:
            found = read_trace(work_dir, trace, scrubber, args.out_dir)
        except InputError as exc:  # one unreadable trace must not cost every other trace its dataset
            left_out.append(f"{work_dir.name}: left out: {exc.where}: {exc.problem}")
            continue
        if found is not None:
            inputs.append(found)
    ds = build(inputs, thresholds, scrubber, table)
    write_dataset(ds, args.out_dir, thresholds)
    excluded = sum(sum(s.excluded.values()) for s in ds.summaries.values())
    print(
        f"dataset: {len(ds.summaries)} trace(s): {len(ds.tables['measurements'])} measurements "
        f"({excluded} versions excluded), {len(ds.tables['autotune'])} autotune rows, {len(ds.tables['runs'])} runs, "
        f"{len(ds.tables['kernels'])} kernels, {len(ds.conflicts)} context conflict(s)"
    )
    for c in [*left_out, *ds.conflicts]:
        print(f"  warning: {c}")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
