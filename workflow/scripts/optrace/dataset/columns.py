"""The dataset's column table: every table's columns, their types and meanings, in one place that both
the parquet schemas and the README's column docs are made from.

Types: `string`, `int64`, `float64`, and `category`: a string column of few distinct values (vendor,
arch, dsl, verdict, ...), written dictionary-encoded and loaded as a pandas categorical.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TRACE_SOURCE = "trace"
AUTOTUNE_SOURCE = "helion-autotune"
HELION_DSL = "helion"
AXIS_PREFIX = "axis_"
# The dataset's own format: bumped whenever a column, a key recipe or an exclusion rule changes meaning.
SCHEMA_VERSION = "optrace-dataset-2"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # string | category | int64 | float64
    nullable: bool
    meaning: str


def _cols(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    """(name, type with a trailing `?` when nullable, meaning)."""
    return tuple(Column(n, t.rstrip("?"), t.endswith("?"), m) for n, t, m in specs)


TABLES: dict[str, tuple[Column, ...]] = {
    "measurements": _cols(
        ("run_id", "string", "join key to `runs`: this measurement's own run"),
        ("trace", "category", "label of the trace the sample comes from (denylisted terms replaced)"),
        ("version", "int64", "the version's number N (`v<N>`); sorts numerically"),
        ("verdict", "category", "what the trace did with the version: baseline, kept, reverted, none"),
        ("latency_us", "float64", "measured latency of the version's kernel on the run's shape, in µs"),
    ),
    "autotune": _cols(
        ("run_id", "string", "join key to `runs` (Helion's run_id, or re-derived when its source was scrubbed)"),
        ("trace", "category", "label of the trace whose `autotune/` held the row"),
        (
            "status",
            "category",
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
        ("run_id", "string", "one measured run: a version's benchmark of one shape, or one Helion autotune run"),
        (
            "problem_id",
            "string",
            "what the run measured (code, shape, GPU, DSL): runs sharing it measured the same problem again "
            "(a revert re-measuring the version it restores, two traces starting from one kernel)",
        ),
        (
            "source",
            "category",
            f"`{TRACE_SOURCE}` (a trace's memory/v<N>.json) or `{AUTOTUNE_SOURCE}` (Helion autotune telemetry)",
        ),
        ("kernel_blob", "string", "join key to `kernels`"),
        (
            "group",
            "category",
            "`<operator family>/<GPU product>`: the unit of the train/test split (the family is "
            "the store's operator slug of the trace without shape constants: softmax_h4096 -> "
            "softmax)",
        ),
        ("vendor", "category", "GPU vendor (nvidia, amd)"),
        ("arch", "category", "GPU architecture (ampere, hopper, blackwell, cdna3, ...)"),
        ("product", "category", "GPU product of the hardware table (h100, a100, mi300x, ...)"),
        ("compute_capability", "category?", "the product's compute capability (sm_90) or gfx target (gfx942)"),
        (
            "shape",
            "string?",
            "`<definition>:<shape key>`: the workload's key namespaced by the benchmark "
            "definition the trace measured (trace runs); the definition is the part before "
            "the first `:`",
        ),
        ("kernel_name", "string?", "Helion's kernel function name (autotune runs)"),
        ("input_shapes", "string?", "Helion's input shapes, e.g. `[(64, 4096), (4096,)]` (autotune runs)"),
        ("backend", "category?", "Helion's codegen backend, e.g. triton (autotune runs)"),
        (
            "dtypes",
            "category?",
            "input dtypes in argument order, comma-separated (bfloat16,bfloat16,...); null "
            "when the definition states none",
        ),
    ),
    "kernels": _cols(
        ("kernel_blob", "string", "git blob id of `source_text` (`git hash-object`); see Keys"),
        (
            "dsl",
            "category",
            f"the DSL the source is written in (triton, cuda, cutedsl, ..., {HELION_DSL}); the same for a "
            "source whichever table reached it",
        ),
        ("blob_bytes", "int64", "size in bytes of the source as measured (before scrubbing)"),
        ("source_text", "string", "the kernel source, comments and strings scrubbed like packets"),
    ),
    "split": _cols(
        ("group", "category", "a group of `runs`"),
        ("split", "category", "train or test"),
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
SAMPLE_TABLES = ("measurements", "autotune")  # one row per sample; `load(kind=...)` names one
PANDAS_DTYPES = {"string": "string", "category": "category", "int64": "Int64", "float64": "Float64"}


def column_names(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def arrow_type(type_name: str) -> Any:  # a pyarrow DataType (pyarrow ships no stubs)
    import pyarrow as pa

    return {
        "string": pa.string(),
        "category": pa.dictionary(pa.int32(), pa.string()),
        "int64": pa.int64(),
        "float64": pa.float64(),
    }[type_name]


def arrow_schema(columns: Iterable[Column], metadata: dict[str, str] | None = None) -> Any:  # a pyarrow Schema
    import pyarrow as pa

    fields = [pa.field(c.name, arrow_type(c.type), nullable=c.nullable) for c in columns]
    return pa.schema(fields, metadata=metadata)


def type_text(c: Column) -> str:
    return c.type + ("?" if c.nullable else "")
