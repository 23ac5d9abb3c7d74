"""`load(path, kind=...)`: one kind of sample with its run's context, its kernel's DSL and (on demand)
its source, and its split once `split` ran. Trace measurements and autotune rows are different things
(a latency per version and shape; a config's time in a search), so one call never mixes them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optrace.dataset.columns import AXIS_PREFIX, BUILT, FILES, PANDAS_DTYPES, SAMPLE_TABLES, TABLES, Column
from optrace.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

# runs columns that only one kind of run fills: left out of the other kind's frame
ONLY_FOR = {"measurements": ("kernel_name", "input_shapes", "backend"), "autotune": ("shape",)}
KERNEL_CONTEXT = ("dsl", "blob_bytes")  # always joined; source_text on demand


def sample_columns(kind: str, axis_columns: Sequence[Column] = (), source: bool = False) -> list[Column]:
    """The columns of `load(kind=...)`'s frame, in order: the sample table, its runs context (named axes
    for trace measurements), the kernel's DSL and size (and source_text), the split."""
    if kind not in SAMPLE_TABLES:
        raise InputError("kind", f"{kind!r} is not one of {', '.join(SAMPLE_TABLES)}")
    runs = [c for c in TABLES["runs"] if c.name != "run_id" and c.name not in ONLY_FOR[kind]]
    axes = list(axis_columns) if kind == "measurements" else []
    kernels = [c for c in TABLES["kernels"] if c.name in KERNEL_CONTEXT or (source and c.name == "source_text")]
    split = [c for c in TABLES["split"] if c.name == "split"]
    return [*TABLES[kind], *runs, *axes, *kernels, *[Column(c.name, c.type, True, c.meaning) for c in split]]


def load(path: str | os.PathLike, kind: str = "measurements", source: bool = False) -> pd.DataFrame:
    """One row per sample of `kind` ("measurements": latency_us per trace, version and shape;
    "autotune": Helion's perf_ms per config) with its run's context and kernel's DSL; `source=True`
    joins the kernel source text too (repeated on every row of that kernel). Dtypes are pandas'
    nullable ones, categoricals as `category` (README "Loading")."""
    import pandas as pd
    import pyarrow.parquet as pq

    root = Path(path)
    for name in BUILT:
        if not (root / FILES[name]).is_file():
            raise InputError(root / FILES[name], "file not found (not a dataset directory?)")
    mapper: Any = {
        "string": pd.StringDtype(),
        "int64": pd.Int64Dtype(),
        "double": pd.Float64Dtype(),
    }

    def read(name: str, columns: list[str] | None = None) -> pd.DataFrame:
        table = pq.read_table(root / FILES[name], columns=columns)
        return table.to_pandas(types_mapper=lambda t: mapper.get(str(t)))

    runs = read("runs")
    axes = [Column(c, "unused", True, "named axis") for c in runs.columns if c.startswith(AXIS_PREFIX)]
    columns = sample_columns(kind, axes, source)
    frame = read(kind).merge(runs, on="run_id", how="left", validate="many_to_one")
    kernel_cols = ["kernel_blob", *KERNEL_CONTEXT, *(["source_text"] if source else [])]
    frame = frame.merge(read("kernels", kernel_cols), on="kernel_blob", how="left", validate="many_to_one")
    if (root / FILES["split"]).is_file():
        frame = frame.merge(read("split"), on="group", how="left", validate="many_to_one")
    else:
        frame["split"] = pd.Series(pd.NA, index=frame.index, dtype="category")
    dtypes = {c.name: PANDAS_DTYPES[c.type] if c.type in PANDAS_DTYPES else str(runs[c.name].dtype) for c in columns}
    return frame[list(dtypes)].astype(dtypes)
