"""Helion autotune telemetry found in a trace: `autotune/**/*.csv` joined to its `.meta.jsonl` sidecar.

The join: each CSV row to its run's meta record, by run id.
One output row per joined *result* row: `started` rows are dropped, failures stay as infeasible
labels, `deduplicated` rows carry their representative's perf. A row joins when its `run_id` has a
meta record anywhere in the trace (run_id names the problem, not a file or an invocation, so rows
are grouped by run_id, not by file) and its `config_id` is in the union of those records' `configs`
maps after every entry's id has been recomputed from its config. Everything left out is counted in
the report with its reason; a malformed or older-format file is reported, never a crash.
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.trace_files import TraceFiles, WorkTreeFiles
from optrace.jsonio import write_json, write_jsonl

AUTOTUNE_DIR = "autotune"
# A long search legitimately writes tens of MB of CSV (one config repr per row, two rows per config),
# more than the default per-file cap meant for memory and profile files.
READ_CAP = 256 * 1024 * 1024

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
# Identity fields of a meta record that a row needs; all are strings in the merged format.
CONTEXT_KEYS = ("kernel_name", "input_shapes", "dtypes", "hardware")
# The settings Helion hashes into run_id (Helion's `_CODEGEN_SETTINGS`).
CODEGEN_SETTINGS = (
    "allow_warp_specialize",
    "backend",
    "debug_dtype_asserts",
    "dot_precision",
    "fast_math",
    "index_dtype",
    "pallas_collective_id",
    "pallas_interpret",
    "pallas_topk_recall_target",
    "persistent_reserved_sms",
    "static_shapes",
    "triton_do_not_specialize",
)

EXCLUSION_REASONS = (
    "malformed",
    "no_run_id",
    "no_meta",
    "tampered_config_id",
    "config_not_in_meta",
    "deduplicated_unresolved",
)


# ---------------------------------------------------------------- ids


def compact_config(config: dict) -> str:
    """The exact string Helion hashes into config_id (`canonical_config_id`), so it doubles as the
    row's compact config: a consumer can re-verify `sha256(config)[:16] == config_id`."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def config_id_of(config: dict) -> str:
    return hashlib.sha256(compact_config(config).encode("utf-8")).hexdigest()[:16]


def codegen_signature(settings: dict) -> str:
    """Helion's `codegen_signature`: `name=str(value)` over the sorted codegen settings (missing = None);
    JSON-decoded values print as Python's did (True, None, 0.99)."""
    return ", ".join(f"{name}={settings.get(name)}" for name in CODEGEN_SETTINGS)


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


# ---------------------------------------------------------------- finding the files


@dataclass(frozen=True)
class AutotuneSet:
    csv: str  # trace-relative `<base>.csv`
    meta: str | None  # trace-relative `<base>.meta.jsonl`, None when the trace has none


def meta_path_for(csv_path: str) -> str:
    """Helion derives both names with `Path(base).with_suffix(...)`, so whatever the base was (even one
    whose last component had a dot and got truncated), the sidecar is the CSV's name with `.csv`
    replaced by `.meta.jsonl`."""
    return csv_path[: -len(".csv")] + ".meta.jsonl"


def find_autotune_sets(files: TraceFiles) -> list[AutotuneSet]:
    """Every results CSV under `autotune/` (any depth) with its sidecar when present. `<base>.sources.csv`
    next to `<base>.csv` is the dedup sidecar (#3229), not a results file."""
    present = set(files.walk(AUTOTUNE_DIR))
    sets = []
    for path in (p for p in present if p.endswith(".csv")):
        if path.endswith(".sources.csv") and path[: -len(".sources.csv")] + ".csv" in present:
            continue
        meta = meta_path_for(path)
        sets.append(AutotuneSet(path, meta if meta in present else None))
    return sorted(sets, key=lambda s: s.csv)


# ---------------------------------------------------------------- the CSV


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


# ---------------------------------------------------------------- the meta sidecar


@dataclass(frozen=True)
class Tampered:
    where: str
    stated: str
    recomputed: str  # the id the config actually hashes to

    def to_json(self) -> dict:
        return {"where": self.where, "stated": self.stated, "recomputed": self.recomputed}


@dataclass(frozen=True)
class RunContext:
    """What a row needs from its run and cannot get anywhere else: run_id is a one-way hash of these."""

    kernel_name: str
    input_shapes: str
    dtypes: str
    hardware: str
    backend: str | None  # settings.backend, the codegen target (triton, pallas, cute, …)
    # Not written to autotune.jsonl (one copy per run is enough); the dataset's kernel table reads them.
    kernel_source: str = ""
    codegen: str = ""  # codegen_signature(settings)


@dataclass(frozen=True)
class MetaRecord:
    where: str
    run_id: str
    context: RunContext
    configs: dict[str, dict]  # only entries whose id recomputes from their config
    tampered: list[Tampered]  # the entries that did not


@dataclass
class ParsedMeta:
    records: list[MetaRecord] = field(default_factory=list)
    malformed: list[Problem] = field(default_factory=list)


def parse_meta_record(where: str, rec: object) -> MetaRecord:
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    run_id = rec.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValueError("run_id is not 64 lowercase hex")
    for key in (*CONTEXT_KEYS, "kernel_source"):
        if not isinstance(rec.get(key), str):
            raise ValueError(f"{key} is not a string")
    settings = rec.get("settings")
    if not isinstance(settings, dict):
        raise ValueError("settings is not an object")
    backend = settings.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise ValueError("settings.backend is not a string")
    configs = rec.get("configs")
    if not isinstance(configs, dict):
        raise ValueError("configs is not an object")
    kept, tampered = {}, []
    for stated, config in configs.items():
        if not isinstance(config, dict):
            raise ValueError(f"configs[{stated[:40]!r}] is not an object")
        actual = config_id_of(config)
        # The union across records is lossless only because ids are content-addressed; an entry
        # whose key is not its content's hash would poison every row that names that key.
        if stated == actual:
            kept[stated] = config
        else:
            tampered.append(Tampered(f"{where}: configs", stated, actual))
    context = RunContext(
        **{k: rec[k] for k in CONTEXT_KEYS},
        backend=backend,
        kernel_source=rec["kernel_source"],
        codegen=codegen_signature(settings),
    )
    return MetaRecord(where, run_id, context, kept, tampered)


def parse_meta(path: str, text: str) -> ParsedMeta:
    out = ParsedMeta()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            out.records.append(parse_meta_record(where, json.loads(line)))
        except json.JSONDecodeError as exc:
            out.malformed.append(Problem(where, f"not valid JSON ({exc.msg})"))
        except ValueError as exc:
            out.malformed.append(Problem(where, f"meta record skipped: {exc}"))
        except RecursionError:  # a hostile line nested past the parser's depth
            out.malformed.append(Problem(where, "not valid JSON (nested too deeply)"))
    return out


@dataclass(frozen=True)
class Run:
    context: RunContext
    configs: dict[str, dict]
    tampered_ids: set[str]  # stated and recomputed ids of dropped entries, to name why a row fails


def merge_runs(records: list[MetaRecord]) -> tuple[dict[str, Run], list[str]]:
    """One run per run_id with the union of its records' configs (run_id recurs across re-runs,
    processes and best-of-k). Context comes from the first record; records of one run_id that
    disagree on it (impossible for genuine records: those fields are hashed into run_id) are named."""
    runs: dict[str, Run] = {}
    conflicts: set[str] = set()
    for rec in records:
        run = runs.setdefault(rec.run_id, Run(rec.context, {}, set()))
        if rec.context != run.context:
            conflicts.add(rec.run_id)
        for cid, config in rec.configs.items():
            run.configs.setdefault(cid, config)
        run.tampered_ids.update(i for t in rec.tampered for i in (t.stated, t.recomputed))
    return runs, sorted(conflicts)


# ---------------------------------------------------------------- the join


@dataclass(frozen=True)
class AutotuneRow:
    run_id: str
    config_id: str
    status: str  # ok | deduplicated (feasible, perf_ms set) | error | timeout | peer_compilation_fail
    perf_ms: float | None
    compile_time_s: float | None
    generation: int
    config: str  # compact_config(meta config)
    context: RunContext

    def to_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "config_id": self.config_id,
            "status": self.status,
            "perf_ms": self.perf_ms,
            "compile_time_s": self.compile_time_s,
            "generation": self.generation,
            "config": self.config,
            "kernel_name": self.context.kernel_name,
            "input_shapes": self.context.input_shapes,
            "dtypes": self.context.dtypes,
            "hardware": self.context.hardware,
            "backend": self.context.backend,
        }

    def sort_key(self) -> tuple:
        return (
            self.run_id,
            self.generation,
            self.config_id,
            self.status,
            -1.0 if self.perf_ms is None else self.perf_ms,
            -1.0 if self.compile_time_s is None else self.compile_time_s,
        )


@dataclass
class AutotuneReport:
    """Invariant: rows_read == rows_joined + started_dropped + sum(excluded.values())."""

    sets: list[AutotuneSet] = field(default_factory=list)
    rows_read: int = 0  # data rows of joinable (merged-format) CSVs
    rows_joined: int = 0
    started_dropped: int = 0
    excluded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXCLUSION_REASONS, 0))
    excluded_no_meta: dict[str, int] = field(default_factory=dict)  # run_id -> rows
    unjoinable_files: list[Problem] = field(default_factory=list)
    tampered_config_ids: list[Tampered] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # malformed rows and meta lines
    unverified_config_text: int = 0  # joined rows whose CSV config cell could not be read back
    context_conflicts: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "sets": [{"csv": s.csv, "meta": s.meta} for s in self.sets],
            "rows_read": self.rows_read,
            "rows_joined": self.rows_joined,
            "started_dropped": self.started_dropped,
            "excluded": dict(self.excluded),
            "excluded_no_meta": dict(sorted(self.excluded_no_meta.items())),
            "unjoinable_files": [{"path": p.where, "reason": p.problem} for p in self.unjoinable_files],
            "tampered_config_ids": [t.to_json() for t in self.tampered_config_ids],
            "problems": [{"where": p.where, "problem": p.problem} for p in self.problems],
            "unverified_config_text": self.unverified_config_text,
            "context_conflicts": list(self.context_conflicts),
        }


@dataclass
class AutotuneResult:
    rows: list[AutotuneRow]
    report: AutotuneReport


def join_row(row: CsvRow, runs: dict[str, Run], report: AutotuneReport) -> AutotuneRow | None:
    """The joined row, or None with the reason counted in the report."""

    def exclude(reason: str) -> AutotuneRow | None:  # counted, and no row
        report.excluded[reason] += 1
        return None

    if row.status == STARTED:
        report.started_dropped += 1
        return None
    if not row.run_id:
        return exclude("no_run_id")
    run = runs.get(row.run_id)
    if run is None:
        report.excluded_no_meta[row.run_id] = report.excluded_no_meta.get(row.run_id, 0) + 1
        return exclude("no_meta")
    stated = config_from_repr(row.config_text)
    if stated is not None and config_id_of(stated) != row.config_id:
        # Excluded, not flagged: either the id or the config cell was altered, so which config this
        # measurement belongs to is unknown, and a mislabelled sample is worse than a missing one.
        report.tampered_config_ids.append(Tampered(row.where, row.config_id, config_id_of(stated)))
        return exclude("tampered_config_id")
    config = run.configs.get(row.config_id)
    if config is None:
        return exclude("tampered_config_id" if row.config_id in run.tampered_ids else "config_not_in_meta")
    if row.status == "deduplicated" and row.perf_ms is None:
        # Helion writes the representative's perf into the alias row; without it (and the
        # representative is not named in the main CSV) the alias has no value to take.
        return exclude("deduplicated_unresolved")
    if stated is None:
        report.unverified_config_text += 1
    report.rows_joined += 1
    return AutotuneRow(
        row.run_id,
        row.config_id,
        row.status,
        row.perf_ms,
        row.compile_time_s,
        row.generation,
        compact_config(config),
        run.context,
    )


def _read(files: TraceFiles, rel: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, why not). Helion writes UTF-8, so a bad byte means a damaged file; it is
    refused rather than decoded with replacement characters that would then fail the id checks."""
    data = files.read_bytes(rel, READ_CAP)
    if data is None:
        return None, "not read (over the read cap, or unreadable)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"


def ingest_autotune(files: TraceFiles) -> AutotuneResult:
    report = AutotuneReport(sets=find_autotune_sets(files))
    csv_rows: list[CsvRow] = []
    records: list[MetaRecord] = []
    for s in report.sets:
        text, why = _read(files, s.csv)
        if text is None:
            assert why is not None  # _read gives the text or why not
            report.unjoinable_files.append(Problem(s.csv, why))
            continue
        parsed = parse_csv(s.csv, text)
        if parsed.unjoinable is not None:
            report.unjoinable_files.append(Problem(s.csv, parsed.unjoinable))
            continue
        report.rows_read += len(parsed.rows) + len(parsed.malformed)
        report.excluded["malformed"] += len(parsed.malformed)
        report.problems.extend(parsed.malformed)
        csv_rows.extend(parsed.rows)
        if s.meta is None:
            continue
        meta_text, why = _read(files, s.meta)
        if meta_text is None:
            assert why is not None
            report.problems.append(Problem(s.meta, why))
            continue
        meta = parse_meta(s.meta, meta_text)
        records.extend(meta.records)
        report.problems.extend(meta.malformed)
        report.tampered_config_ids.extend(t for r in meta.records for t in r.tampered)
    runs, report.context_conflicts = merge_runs(records)
    joined = [j for r in csv_rows if (j := join_row(r, runs, report)) is not None]
    return AutotuneResult(sorted(joined, key=AutotuneRow.sort_key), report)


# ---------------------------------------------------------------- CLI


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace autotune", description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="trace work tree (its autotune/ directory is read)")
    ap.add_argument("--out", required=True, help="autotune.jsonl to write (one joined result per line)")
    ap.add_argument("--report", help="JSON report of counts and exclusions")
    args = ap.parse_args(argv)
    if not Path(args.trace).is_dir():
        raise InputError(args.trace, "not a directory")
    result = ingest_autotune(WorkTreeFiles(args.trace))
    write_jsonl(args.out, [r.to_json() for r in result.rows])
    if args.report:
        write_json(args.report, result.report.to_json())
    rep = result.report
    print(
        f"autotune: {rep.rows_joined}/{rep.rows_read} rows joined from {len(rep.sets)} file(s); "
        f"{rep.started_dropped} started dropped, {sum(rep.excluded.values())} excluded, "
        f"{len(rep.unjoinable_files)} unjoinable file(s), {len(rep.tampered_config_ids)} tampered id(s)"
    )
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
