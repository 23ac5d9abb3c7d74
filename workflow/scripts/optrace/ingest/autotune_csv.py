"""A Helion autotune results CSV (the merged #2770 format) read row by row, and the content-derived
config ids its rows name; a file of another format is named unjoinable, a bad row malformed."""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field

LEAN_HEADER = ["run_id", "timestamp_s", "config_id", "generation", "status", "perf_ms", "compile_time_s", "config"]
SOURCES_HEADER = ["run_id", "timestamp_s", "config_id", "generation", "status", "source_hash"]
# Column names of every header Helion has written (#1095, #2699, #2737, #2770, #3229): a first line
# that uses none of them is data, i.e. the file has no header at all.
KNOWN_COLUMNS = frozenset(LEAN_HEADER + SOURCES_HEADER + ["kernel_id", "sample_id", "config_index", "decorator"])

FEASIBLE = frozenset({"ok", "deduplicated"})
INFEASIBLE = frozenset({"error", "timeout", "peer_compilation_fail"})
STARTED = "started"
RESULT_STATUSES = FEASIBLE | INFEASIBLE

RUN_ID = re.compile(r"[0-9a-f]{64}")
CONFIG_ID = re.compile(r"[0-9a-f]{16}")


def compact_config(config: dict) -> str:
    """The exact string Helion hashes into config_id (`canonical_config_id`), so it doubles as the
    row's compact config: a consumer can re-verify `sha256(config)[:16] == config_id`."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def config_id_of(config: dict) -> str:
    return hashlib.sha256(compact_config(config).encode("utf-8")).hexdigest()[:16]


def config_from_repr(text: str) -> dict | None:
    """The CSV `config` cell is `str(Config)` = `Config(k=repr(v), ...)`; the values are JSON types,
    so each is a Python literal. None when the cell is not of that shape (then it cannot vouch for
    the row's config_id, and the row relies on the meta map alone)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Config"
        and not node.args
        and all(k.arg for k in node.keywords)
    ):
        return None
    try:
        return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except (ValueError, SyntaxError):
        return None


@dataclass(frozen=True)
class Problem:
    where: str  # `path:line`
    problem: str


@dataclass(frozen=True)
class CsvRow:
    where: str
    run_id: str  # "" when the writing sink had no metadata
    config_id: str
    generation: int
    status: str
    perf_ms: float | None
    compile_time_s: float | None
    config_text: str


@dataclass
class ParsedCsv:
    unjoinable: str | None = None  # why the whole file cannot be joined
    rows: list[CsvRow] = field(default_factory=list)
    malformed: list[Problem] = field(default_factory=list)


def unjoinable_header(first: list[str]) -> str | None:
    """None for the merged (#2770) header; otherwise why this file's rows cannot be joined."""
    if first == LEAN_HEADER:
        return None
    cells = [c.strip() for c in first]
    if cells == LEAN_HEADER:
        return "header cells carry whitespace; not the merged format as written"
    if cells[:2] == ["kernel_id", "sample_id"]:
        return "pre-#2770 header (kernel_id, sample_id, …): rows carry no run_id"
    if cells[:2] == ["timestamp_s", "config_index"]:
        return "pre-#2699 header (timestamp_s, config_index, …): rows carry no ids"
    if cells[:3] == ["run_id", "kernel_id", "sample_id"]:
        return "header of the never-merged #2737 format (run_id, kernel_id, sample_id, …)"
    if cells == SOURCES_HEADER:
        return "a .sources.csv dedup sidecar, not a results CSV"
    if not KNOWN_COLUMNS.intersection(cells):
        return "no header row: the column layout is not stated, so no cell can be trusted"
    return "unrecognised header: " + ",".join(cells)[:200]


def _number(cell: str, what: str) -> float | None:
    if cell == "":
        return None
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"{what} {cell!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} {cell!r} is not a finite non-negative number")
    return value


def parse_row(where: str, cells: list[str]) -> CsvRow:
    """One data row of the merged format; ValueError names what is wrong."""
    if len(cells) != len(LEAN_HEADER):
        raise ValueError(f"{len(cells)} cells, expected {len(LEAN_HEADER)}")
    run_id, timestamp, config_id, generation, status, perf, compile_time, config_text = cells
    if run_id and not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run_id {run_id[:80]!r} is not 64 lowercase hex")
    if not CONFIG_ID.fullmatch(config_id):
        raise ValueError(f"config_id {config_id[:80]!r} is not 16 lowercase hex")
    if not (generation.isascii() and generation.isdigit()):
        raise ValueError(f"generation {generation[:80]!r} is not a non-negative integer")
    if status != STARTED and status not in RESULT_STATUSES:
        raise ValueError(f"status {status[:80]!r} is not one Helion writes")
    _number(timestamp, "timestamp_s")
    perf_ms = _number(perf, "perf_ms")
    if status in INFEASIBLE and perf_ms is not None:
        raise ValueError(f"status {status} with a perf_ms (Helion writes perf only for successes)")
    if status == "ok" and perf_ms is None:
        raise ValueError("status ok without a perf_ms")
    if perf_ms == 0:
        raise ValueError("perf_ms 0.000000 is not a measurement")
    return CsvRow(
        where, run_id, config_id, int(generation), status, perf_ms, _number(compile_time, "compile_time_s"), config_text
    )


def parse_csv(path: str, text: str) -> ParsedCsv:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        first = next(reader, None)
        if first is None:
            return ParsedCsv(unjoinable="empty file: no header")
        reason = unjoinable_header(first)
        if reason is not None:
            return ParsedCsv(unjoinable=reason)
        out = ParsedCsv()
        for cells in reader:
            if not cells:
                continue  # blank line
            where = f"{path}:{reader.line_num}"
            try:
                out.rows.append(parse_row(where, cells))
            except ValueError as exc:
                out.malformed.append(Problem(where, str(exc)))
        return out
    except csv.Error as exc:
        # An unterminated quote swallows the rest of the file into one field (hence also the field
        # size limit): where the damage starts is not knowable, so no row of it is trusted.
        return ParsedCsv(unjoinable=f"not parseable as CSV at line {reader.line_num}: {exc}")
