"""The dataset's I/O at the edges: a trace's inputs read, parquet files written atomically with their
file metadata, CSV copies.

Every parquet file is written from an explicit Arrow schema (no pandas index or metadata, no
timestamps, fixed compression), so it is byte-identical on re-runs; its key-value metadata says what
made it: `optrace.builder` (the package version), `optrace.schema_version` (the dataset format),
`optrace.table`, `optrace.config` and `optrace.config_digest` (the settings the table depends on).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optrace import __version__
from optrace.dataset.columns import SCHEMA_VERSION, Column, arrow_schema
from optrace.dataset.sources import trace_sources
from optrace.jsonio import read_json, read_jsonl, write_atomic
from optrace.rows import read_versions

if TYPE_CHECKING:
    from optrace.dataset.tables import TraceInput
    from optrace.scrub.anonymize import Scrubber


def read_trace(work_dir: Path, trace: str | Path, scrubber: Scrubber, scratch: Path | None = None) -> TraceInput | None:
    """One trace's ingest outputs (`work_dir`) and its published sources, read from the trace; None for
    a trace that failed ingest (optrace.run.pertrace's placeholder meta.json): it has no rows to contribute."""
    from optrace.dataset.tables import TraceInput

    meta = read_json(work_dir / "meta.json")
    if "failed" in meta:
        return None
    versions = read_versions(work_dir / "versions.jsonl")
    return TraceInput(
        meta, versions, read_jsonl(work_dir / "autotune.jsonl"), trace_sources(trace, versions, scrubber, scratch)
    )


def file_metadata(table: str, config: dict, extra: dict[str, str] | None = None) -> dict[str, str]:
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return {
        "optrace.builder": f"optrace {__version__}",
        "optrace.schema_version": SCHEMA_VERSION,
        "optrace.table": table,
        "optrace.config": text,
        "optrace.config_digest": hashlib.sha256(text.encode()).hexdigest()[:16],
        **(extra or {}),
    }


def read_metadata(path: Path) -> dict[str, str]:
    """A parquet file's optrace.* metadata."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"optrace.")}


def write_parquet(path: Path, rows: list[dict], columns: Iterable[Column], metadata: dict[str, str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=arrow_schema(columns, metadata))
    write_atomic(path, lambda tmp: pq.write_table(table, tmp, compression="zstd", compression_level=3))


def export_csv(parquet: Path) -> Path:
    """A CSV copy beside a parquet file (categoricals written as their values)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    out = parquet.with_suffix(".csv")
    table: Any = pq.read_table(parquet)
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(pa.string()))
    write_atomic(out, lambda tmp: pacsv.write_csv(table, tmp))
    return out
