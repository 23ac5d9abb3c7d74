"""Publishing kernel sources: each source a sample measured, scrubbed like packets, keyed by the git blob
id of the text as published, or withheld with the reason (never the text that made it so).

kernel_blob is the blob id of the source *as published*, so anyone can verify a row. When the scrub
changed nothing that is the blob id in the trace's history; when it changed something the trace's id
is never written: it hashes the unscrubbed text, so it (and any id computed from it) would let anyone
confirm a guessed denylisted term offline. An autotune run keeps Helion's own run_id unless its source
was scrubbed, when it is re-derived from the published source the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from optrace.dataset.columns import HELION_DSL
from optrace.rows import VersionRow

if TYPE_CHECKING:
    from optrace.scrub.anonymize import Scrubber

HELION_RUN_ID_DOMAIN = "optrace.helion-run.v1"
# A kernel.py this large is not a kernel a cost model should read (and not worth scrubbing).
SOURCE_CAP = 4 * 1024 * 1024
# A Helion kernel: a function decorated with helion.kernel. Ingest's DSL
# vocabulary is the store's, which has no `helion` (such a kernel is `any` there); the dataset names it.
HELION_KERNEL = re.compile(r"@helion\.kernel\b")


def dataset_dsl(ingest_dsl: str, source: str | None) -> str:
    """The DSL a kernel has in the dataset: ingest's, except that a Helion kernel is `helion` in both
    tables (the trace's versions and its autotune runs) rather than `any` in one and `helion` in the other."""
    if ingest_dsl in ("any", HELION_DSL) and source is not None and HELION_KERNEL.search(source):
        return HELION_DSL
    return ingest_dsl


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
        kernels = {}
        for blob, ingest_dsl in sorted(dsl_of.items()):
            raw = read_whole(opened.history.read_blob, blob)
            dsl = dataset_dsl(ingest_dsl, raw.decode("utf-8", "replace"))
            kernels[blob] = {"dsl": dsl, **publish_source(raw, dsl, scrubber).to_json()}
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
