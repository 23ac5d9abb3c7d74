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
import sys
from dataclasses import dataclass, field
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.autotune_csv import (
    STARTED,
    CsvRow,
    Problem,
    compact_config,
    config_from_repr,
    config_id_of,
    parse_csv,
)
from optrace.ingest.autotune_meta import (
    MetaRecord,
    Run,
    RunContext,
    Tampered,
    merge_runs,
    parse_meta,
)
from optrace.ingest.trace_files import TraceFiles, WorkTreeFiles
from optrace.jsonio import write_json, write_jsonl

AUTOTUNE_DIR = "autotune"
# A long search legitimately writes tens of MB of CSV (one config repr per row, two rows per config),
# more than the default per-file cap meant for memory and profile files.
READ_CAP = 256 * 1024 * 1024

EXCLUSION_REASONS = (
    "malformed",
    "no_run_id",
    "no_meta",
    "tampered_config_id",
    "config_not_in_meta",
    "deduplicated_unresolved",
)


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
