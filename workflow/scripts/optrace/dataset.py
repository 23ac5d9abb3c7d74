"""Dataset: every trace's ingest outputs -> the lean cost-model dataset (DESIGN §5 "Dataset").

`build` writes, from all traces at once:
  measurements.parquet  one row per genuine (trace, version, shape) latency measurement
  runs.jsonl            one line per run_id: the codegen context every row of that run shares
  autotune.parquet      one row per joined Helion autotune result (ingest's autotune.jsonl)
  README.md             counts, exclusions with reasons per trace, the join recipe
`csv` writes a CSV copy next to each parquet file given (the `dataset.csv` switch).

run_id is the only join key. For trace measurements it is content-derived (kernel blob, shape,
hardware, DSL), so the same code measured on the same shape and GPU in two traces (or re-measured
after a revert) shares one run_id and one context line; for autotune rows it is Helion's own run_id.
Because a run_id recurs, what differs per sample (trace, version, verdict) stays on the sample row.
Every output is byte-identical across re-runs: rows are sorted, JSON keys sorted, parquet written
from an explicit Arrow schema (no pandas index or metadata, no timestamps, fixed compression).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .errors import InputError
from .jsonio import read_json, read_jsonl, write_jsonl, write_text_atomic
from .ladder import Thresholds, run_ladder

TRACE_SOURCE = "trace"
AUTOTUNE_SOURCE = "helion-autotune"
# Versioned domain tag: a change to the recipe must change every id, never silently reuse one.
RUN_ID_DOMAIN = "optrace.trace-run.v1"
# As the ladder reads `quality_gate.result`.
GATE_FAILED = ("FAIL", "TIMEOUT_FAIL")
FEASIBLE = ("ok", "deduplicated")

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
}

MEASUREMENTS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("trace", pa.string(), nullable=False),
    pa.field("version", pa.string(), nullable=False),
    pa.field("verdict", pa.string(), nullable=False),
    pa.field("latency_us", pa.float64(), nullable=False),
])
AUTOTUNE_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("config_id", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("perf_ms", pa.float64()),
    pa.field("compile_time_s", pa.float64()),
    pa.field("generation", pa.int64(), nullable=False),
    pa.field("config", pa.string(), nullable=False),
])
AUTOTUNE_CONTEXT = ("kernel_name", "input_shapes", "dtypes", "hardware", "backend")


# ---------------------------------------------------------------- typed rows


@dataclass(frozen=True)
class TraceInput:
    """One trace's ingest outputs."""
    meta: dict
    versions: list[dict]
    autotune: list[dict]

    @property
    def label(self) -> str:
        return self.meta["source_label"]


@dataclass(frozen=True)
class Measurement:
    run_id: str
    trace: str
    version: str
    n: int  # sort key only: v2 before v10
    verdict: str
    latency_us: float

    def to_row(self) -> dict:
        return {"run_id": self.run_id, "trace": self.trace, "version": self.version,
                "verdict": self.verdict, "latency_us": self.latency_us}


@dataclass(frozen=True)
class RunLine:
    origin: str  # trace label the line came from, to name conflicts; not written
    line: dict


@dataclass
class TraceSummary:
    versions: int = 0
    measured_versions: int = 0
    measurements: int = 0
    excluded: Counter = field(default_factory=Counter)
    autotune: dict | None = None  # ingest's autotune report


@dataclass
class Dataset:
    measurements: list[dict]
    runs: list[dict]
    autotune: list[dict]
    summaries: dict[str, TraceSummary]
    conflicts: list[str]


# ---------------------------------------------------------------- trace measurements


def run_id_of(kernel_blob: str, shape: str, target: dict, dsl: str) -> str:
    """64-hex SHA-256 over NUL-joined fields (Helion's layout): the code, the shape, the GPU, the DSL."""
    parts = (RUN_ID_DOMAIN, kernel_blob, shape, target["vendor"], target["arch"], target["product"], dsl)
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def exclusion(row: dict, outcome: str) -> str | None:
    """Why this version's numbers are not genuine measurements of its committed kernel, or None."""
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
    return None


def shape_axes(meta: dict, shape: str) -> dict:
    """The definition's const axes plus this shape's own axes (workload.jsonl, via meta.json)."""
    return {**meta["axes"]["const"], **meta["shape_axes"].get(shape, {})}


def trace_run_line(meta: dict, row: dict, shape: str) -> dict:
    target = meta["target"]
    return {
        "run_id": run_id_of(row["kernel_blob"], shape, target, row["dsl"]),
        "source": TRACE_SOURCE,
        "kernel_blob": row["kernel_blob"],
        "dsl": row["dsl"],
        "vendor": target["vendor"],
        "arch": target["arch"],
        "product": target["product"],
        "shape": shape,
        "axes": shape_axes(meta, shape),
    }


def latency(trace: str, row: dict, shape: str, value) -> float:
    # ingest keeps only positive finite per-shape numbers; anything else is a broken work file
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{trace} {row['version']}", f"by_shape_us[{shape!r}] = {value!r} is not a positive number")
    return float(value)


def trace_measurements(t: TraceInput, thresholds: Thresholds) -> tuple[list[Measurement], list[RunLine], TraceSummary]:
    outcomes = {s.version: s.outcome for s in run_ladder(t.versions, thresholds)}
    summary = TraceSummary(versions=len(t.versions), autotune=t.meta["autotune"])
    measurements, lines = [], []
    for row in sorted(t.versions, key=lambda r: r["n"]):
        reason = exclusion(row, outcomes[row["version"]])
        if reason:
            summary.excluded[reason] += 1
            continue
        summary.measured_versions += 1
        for shape, value in sorted(row["by_shape_us"].items()):
            line = trace_run_line(t.meta, row, shape)
            measurements.append(Measurement(line["run_id"], t.label, row["version"], row["n"], row["verdict"],
                                            latency(t.label, row, shape, value)))
            lines.append(RunLine(t.label, line))
    summary.measurements = len(measurements)
    return measurements, lines, summary


# ---------------------------------------------------------------- autotune rows


def autotune_rows(t: TraceInput) -> tuple[list[dict], list[RunLine]]:
    """Split ingest's joined rows into the result (autotune.parquet) and the run context (runs.jsonl)."""
    rows, lines = [], []
    for r in t.autotune:
        rows.append({k: r[k] for k in AUTOTUNE_SCHEMA.names})
        lines.append(RunLine(t.label, {"run_id": r["run_id"], "source": AUTOTUNE_SOURCE,
                                       **{k: r[k] for k in AUTOTUNE_CONTEXT}}))
    return rows, lines


def autotune_sort_key(row: dict) -> tuple:
    return (row["run_id"], row["generation"], row["config_id"], row["status"],
            -1.0 if row["perf_ms"] is None else row["perf_ms"],
            -1.0 if row["compile_time_s"] is None else row["compile_time_s"], row["config"])


# ---------------------------------------------------------------- assembling


def merge_runs(lines: list[RunLine]) -> tuple[list[dict], list[str]]:
    """One line per run_id. Lines of one run_id agree on every hashed field by construction; a field
    outside the hash (axes, kernel_name) may not: the first trace in label order wins, the rest are named."""
    first: dict[str, RunLine] = {}
    conflicts = []
    for rl in lines:
        kept = first.setdefault(rl.line["run_id"], rl)
        if kept.line != rl.line:
            fields = sorted(k for k in kept.line if kept.line[k] != rl.line.get(k))
            conflicts.append(f"{rl.line['run_id']}: {', '.join(fields)} differ between {kept.origin} and "
                             f"{rl.origin}; {kept.origin}'s kept")
    return [first[k].line for k in sorted(first)], sorted(set(conflicts))


def build(traces: list[TraceInput], thresholds: Thresholds) -> Dataset:
    traces = sorted(traces, key=lambda t: (t.label, t.meta["slug"]))
    labels = [t.label for t in traces]
    if len(set(labels)) != len(labels):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        raise InputError(", ".join(dup), "two traces share this label; measurements could not tell them apart")
    measurements: list[Measurement] = []
    autotune: list[dict] = []
    lines: list[RunLine] = []
    summaries: dict[str, TraceSummary] = {}
    for t in traces:
        m, m_lines, summaries[t.label] = trace_measurements(t, thresholds)
        a, a_lines = autotune_rows(t)
        measurements += m
        autotune += a
        lines += m_lines + a_lines
    runs, conflicts = merge_runs(lines)
    measurements.sort(key=lambda m: (m.run_id, m.trace, m.n))
    autotune.sort(key=autotune_sort_key)
    return Dataset([m.to_row() for m in measurements], runs, autotune, summaries, conflicts)


# ---------------------------------------------------------------- README


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


JOIN_RECIPE = '''import json
import pandas as pd

measurements = pd.read_parquet("measurements.parquet")
autotune = pd.read_parquet("autotune.parquet")
runs = pd.read_json("runs.jsonl", lines=True, dtype=False)  # dtype=False: shape keys stay strings

# trace samples: context features + latency_us (many measurements per run_id)
samples = measurements.merge(runs[runs.source == "trace"], on="run_id", validate="many_to_one")
# autotune samples: ok/deduplicated rows are feasible (perf_ms), the others infeasible labels
tuning = autotune.merge(runs[runs.source == "helion-autotune"], on="run_id", validate="many_to_one")
tuning["config"] = tuning["config"].map(json.loads)
'''


def render_readme(ds: Dataset, thresholds: Thresholds) -> str:
    by_source = Counter(r["source"] for r in ds.runs)
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
        *_table(["file", "rows", "one row per"], [
            ["`measurements.parquet`", len(ds.measurements), "genuine (trace, version, shape) latency measurement"],
            ["`runs.jsonl`", f"{len(ds.runs)} ({by_source[TRACE_SOURCE]} {TRACE_SOURCE}, "
                             f"{by_source[AUTOTUNE_SOURCE]} {AUTOTUNE_SOURCE})", "run_id: its codegen context"],
            ["`autotune.parquet`", len(ds.autotune), "joined Helion autotune result"],
        ]),
        "",
        "- `measurements`: `run_id`, `trace` (label), `version`, `verdict` (baseline, kept, reverted), "
        "`latency_us`. A run_id recurs (the same code on the same shape and GPU, in another trace or after a "
        "revert), so what differs per sample stays on the row.",
        f"- `runs` (`source` {TRACE_SOURCE}): `kernel_blob` (git blob id of kernel.py in the trace), `dsl`, "
        "`vendor`, `arch`, `product`, `shape` (the trace's shape key), `axes` (the definition's const axes and, "
        "when known, the shape's own). run_id = SHA-256 of "
        f"`{RUN_ID_DOMAIN}\\0kernel_blob\\0shape\\0vendor\\0arch\\0product\\0dsl`.",
        f"- `runs` (`source` {AUTOTUNE_SOURCE}): Helion's `kernel_name`, `input_shapes`, `dtypes`, `hardware`, "
        "`backend`; run_id is Helion's own.",
        "- `autotune`: `run_id`, `config_id`, `status`, `perf_ms` (null for infeasible), `compile_time_s`, "
        "`generation`, `config` (compact JSON; `sha256(config)[:16] == config_id`).",
        "",
        "## Trace measurements",
        "",
        "A version gives one row per shape, or none, for the first reason below that applies:",
        "",
        *[f"- `{r}`: {why}" for r, why in EXCLUSIONS.items()],
        "",
        *_table(["trace", "versions", "measured", "rows", *reasons],
                [[label, s.versions, s.measured_versions, s.measurements, *(s.excluded[r] for r in reasons)]
                 for label, s in ds.summaries.items()]),
        "",
        "## Helion autotune telemetry",
        "",
    ]
    tuned = {label: s.autotune for label, s in ds.summaries.items() if s.autotune}
    if tuned:
        out += _table(["trace", "rows read", "joined", "started dropped", "excluded", "unjoinable files",
                       "tampered config ids"],
                      [[label, a["rows_read"], a["rows_joined"], a["started_dropped"],
                        ", ".join(f"{k} {v}" for k, v in a["excluded"].items() if v) or "0",
                        len(a["unjoinable_files"]), len(a["tampered_config_ids"])] for label, a in tuned.items()])
        out += ["", "Reasons and file names are in each trace's `work/<slug>/meta.json` (`autotune`)."]
    else:
        out.append("No trace has an `autotune/` directory.")
    if ds.conflicts:
        out += ["", "## Context conflicts", "", *[f"- {c}" for c in ds.conflicts]]
    out += ["", "## Join recipe", "", "```python", JOIN_RECIPE.rstrip("\n"), "```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- I/O at the edges


def read_trace(work_dir: Path) -> TraceInput:
    return TraceInput(read_json(work_dir / "meta.json"), read_jsonl(work_dir / "versions.jsonl"),
                      read_jsonl(work_dir / "autotune.jsonl"))


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_parquet(path: Path, rows: list[dict], schema: pa.Schema) -> None:
    table = pa.Table.from_pylist(rows, schema=schema)
    _atomic(path, lambda tmp: pq.write_table(table, tmp, compression="zstd", compression_level=3))


def write_dataset(ds: Dataset, out_dir: Path, thresholds: Thresholds) -> None:
    write_parquet(out_dir / "measurements.parquet", ds.measurements, MEASUREMENTS_SCHEMA)
    write_parquet(out_dir / "autotune.parquet", ds.autotune, AUTOTUNE_SCHEMA)
    write_jsonl(out_dir / "runs.jsonl", ds.runs)
    write_text_atomic(out_dir / "README.md", render_readme(ds, thresholds))


def export_csv(parquet: Path) -> Path:
    out = parquet.with_suffix(".csv")
    table = pq.read_table(parquet)
    _atomic(out, lambda tmp: pacsv.write_csv(table, tmp))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace dataset", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="measurements.parquet, runs.jsonl, autotune.parquet, README.md")
    b.add_argument("work_dirs", nargs="*", type=Path, help="ingest output directories (work/<slug>)")
    b.add_argument("--out-dir", required=True, type=Path)
    b.add_argument("--milestone-pct", type=float, default=Thresholds.milestone_pct)
    b.add_argument("--mega-pct", type=float, default=Thresholds.mega_pct)
    b.add_argument("--rebaseline-factor", type=float, default=Thresholds.rebaseline_factor)
    c = sub.add_parser("csv", help="a .csv copy next to each parquet file")
    c.add_argument("parquet", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.command == "csv":
        for path in args.parquet:
            if not path.is_file():
                raise InputError(path, "file not found")
            print(f"dataset: wrote {export_csv(path)}")
        return 0
    thresholds = Thresholds(args.milestone_pct, args.mega_pct, args.rebaseline_factor)
    # a trace that failed ingest (optrace.pertrace's placeholder meta.json) has no rows to contribute
    ds = build([t for t in map(read_trace, args.work_dirs) if "failed" not in t.meta], thresholds)
    write_dataset(ds, args.out_dir, thresholds)
    excluded = sum(sum(s.excluded.values()) for s in ds.summaries.values())
    print(f"dataset: {len(ds.summaries)} trace(s): {len(ds.measurements)} measurements "
          f"({excluded} versions excluded), {len(ds.runs)} runs, {len(ds.autotune)} autotune rows, "
          f"{len(ds.conflicts)} context conflict(s)")
    for c in ds.conflicts:
        print(f"  warning: {c}")
    return 0


if __name__ == "__main__":
    from .cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
