"""The run summary: what a Snakemake run did, printed by the Snakefile's onsuccess/onerror handlers.

Per trace and in total: records staged, records that failed validation (with the first gate message),
packets that produced no record, and traces whose chain failed (with their one-line reason); then
where the results are. It reads whatever outputs exist, so it also works after a failed trace or a
partial target (`snakemake recon`): what was not produced is said to be missing, never guessed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optrace.gates import SUMMARY_SCHEMA
from optrace.jsonio import bytes_or_none, load_or_none
from optrace.printable import escape_controls

MAX_REASON_CHARS = 300
# Less than this free on the results' file system and a job cannot write its outputs, nor even the
# line that says why (its log is on the same disk): the summary, printed to the terminal, says it.
MIN_FREE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StageFiles:
    """One per-trace stage as the workflow declares it: its log and outputs, patterns over `{slug}`."""

    name: str
    log: str
    outputs: tuple[str, ...]

    def files(self, slug: str) -> tuple[Path, list[Path]]:
        return Path(self.log.format(slug=slug)), [Path(o.format(slug=slug)) for o in self.outputs]


@dataclass(frozen=True)
class Places:
    """The aggregate outputs the summary reads and points to; None: not part of the run's target."""

    validation_summary: Path | None
    staged: Path | None
    staging_readme: Path | None
    dataset: Path | None
    trace_report: str | None  # per-trace validation report, a pattern over `{slug}`

    def disk(self) -> Path:
        """A path on the file system the results are written to (for its free space)."""
        declared = (self.staged, self.validation_summary, self.staging_readme, self.dataset)
        return next((p for p in declared if p is not None), Path("."))


@dataclass
class TraceLine:
    slug: str
    validated: bool = False
    records: int = 0
    failed: int = 0
    without_record: int = 0
    staged: int | None = None  # None: not staged in this results tree
    first_failure: tuple[str, str] | None = None  # (FAIL <path> [gates], first message)
    error: str | None = None  # "<stage>: <one line>" when the trace's chain failed
    log: Path | None = None  # the failed job's log
    warnings: list[str] = field(default_factory=list)  # ingest's warnings about the trace (meta.json)
    meta: Path | None = None  # where they are


@dataclass
class RunSummary:
    places: Places
    traces: list[TraceLine] = field(default_factory=list)
    newest_report: float = 0.0  # mtime of the newest trace validation report: older aggregates are stale
    free_bytes: int | None = None  # free space on the results' file system, when it is nearly full
    no_denylist: str = ""  # why nothing private was scrubbed (no denylist named, none stated), or ""

    @property
    def failed_records(self) -> int:
        return sum(t.failed for t in self.traces)

    @property
    def failed_traces(self) -> list[TraceLine]:
        return [t for t in self.traces if t.error]

    @property
    def records(self) -> int:
        return sum(t.records for t in self.traces)


PLACEHOLDER_MARK = b'"failed":{'  # optrace.run.pertrace writes its placeholders compact: this is in each


def _placeholder(path: Path) -> Any:
    """The document at `path` when it can be a pertrace placeholder; a real output (most of them, some
    large) is not parsed."""
    data = bytes_or_none(path)  # an output is a file anyone with the results tree can replace (by a FIFO too)
    if data is None or PLACEHOLDER_MARK not in data:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def free_space(path: Path) -> int | None:
    """Bytes free to this user on the file system holding `path` (its nearest existing ancestor)."""
    for folder in (path, *path.absolute().parents):
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def failure_reason(slug: str, stages: list[StageFiles], disk_full: bool = False) -> tuple[str, Path] | None:
    """('<stage>: <line>', its log) for the first stage of the trace whose job failed, else None.

    A failed job leaves its log but not its outputs (Snakemake removes them), and every stage ends bad
    input with one `error: ...` line in its log. This is the one place that decides a trace failed:
    when traces carry an explicit status file, read it here instead.
    """
    for stage in stages:
        log, outputs = stage.files(slug)
        # a trace that failed under --keep-going leaves optrace.run.pertrace's placeholders: its outputs
        # exist and carry `failed` (the failing stage and its one-line reason)
        for out in outputs:
            doc = _placeholder(out) if out.suffix == ".json" else None
            failed = doc.get("failed") if isinstance(doc, dict) else None
            if isinstance(failed, dict):
                return f"{failed.get('stage')}: error: {str(failed.get('reason'))[:MAX_REASON_CHARS]}", log
        if not log.is_file() or all(o.exists() for o in outputs):
            continue
        try:
            lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        except OSError:
            continue
        errors = [ln for ln in lines if ln.startswith("error:")]
        empty = f"failed, its log {log} is empty" + (
            ": no space left on the device (the job could not even write why)" if disk_full else ""
        )
        line = (errors or lines or [empty])[-1]
        return f"{stage.name}: {line[:MAX_REASON_CHARS]}", log
    return None


def _first_failure(record: dict) -> tuple[str, str]:
    """('FAIL <path> [gates]', its first gate message without the path it repeats)."""
    path, messages = record.get("path"), record.get("messages") or [""]
    return f"FAIL {path} [{', '.join(record.get('failed') or [])}]", messages[0].removeprefix(f"{path}: ")


TRACE_COUNTS = ("records", "failed", "packets_without_record")
FUTURE_SLACK_S = 5.0  # a file dated further ahead than this cannot be ordered against the reports


def _trace_shaped(t: Any) -> bool:
    return isinstance(t, dict) and all(type(t.get(k)) is int for k in TRACE_COUNTS)


def _record_shaped(r: Any) -> bool:
    return isinstance(r, dict) and isinstance(r.get("status"), str) and isinstance(r.get("failed", []), list)


def current_summary(path: Path, report_time: dict[str, float]) -> dict | None:
    """The validation summary when it is at least as new as every trace's report (the workflow's summary
    job wrote it from exactly those), not dated in the future, covering every trace that has a report and
    shaped as summarize writes it, restricted to those traces; else None (the reports are read instead)."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    if not max(report_time.values(), default=0.0) <= mtime <= time.time() + FUTURE_SLACK_S:
        return None
    doc = load_or_none(path)
    if not (isinstance(doc, dict) and doc.get("schema") == SUMMARY_SCHEMA):
        return None
    traces, by_record = doc.get("traces"), doc.get("by_record")
    if not (isinstance(traces, list) and isinstance(by_record, list)):
        return None
    keep = report_time.keys()
    mine = [t for t in traces if isinstance(t, dict) and t.get("slug") in keep]
    records = [r for r in by_record if isinstance(r, dict) and r.get("slug") in keep]
    if {t["slug"] for t in mine} != set(keep) or not all(map(_trace_shaped, mine)):
        return None  # written from other reports than these, or edited
    return {"traces": mine, "by_record": records} if all(map(_record_shaped, records)) else None


def merged_reports(report_paths: dict[str, Path]) -> dict:
    """The per-trace reports merged as the workflow's summary job merges them (when its summary is stale)."""
    from optrace.gates.validate import read_report, summarize  # the gates' code: only on this path

    reports = []
    for path in report_paths.values():
        try:
            reports.append((str(path), read_report(path)))
        except Exception:  # missing or unreadable: this trace was not validated
            continue
    try:
        return summarize(reports)
    except (KeyError, TypeError, AttributeError):
        return {"traces": [], "by_record": []}


def collect(slugs: list[str], stages: list[StageFiles], places: Places) -> RunSummary:
    """Read what exists. The validation summary is used when it is at least as new as every trace's
    report (it adds overlaps across traces); otherwise the per-trace reports are read directly."""
    pattern = places.trace_report
    report_paths = {slug: Path(pattern.format(slug=slug)) for slug in slugs} if pattern else {}
    report_time = {}
    for slug, path in report_paths.items():
        try:
            report_time[slug] = path.stat().st_mtime
        except OSError:  # missing: this trace was not validated
            continue
    current = current_summary(places.validation_summary, report_time) if places.validation_summary else None
    merged = current or merged_reports({s: report_paths[s] for s in report_time})
    by_slug = {t["slug"]: t for t in merged["traces"]}
    report_time = {s: t for s, t in report_time.items() if s in by_slug}  # reports that could be read
    failing: dict[str, list[dict]] = {}
    for rec in merged["by_record"]:
        if rec["status"] != "PASS":
            failing.setdefault(rec["slug"], []).append(rec)

    staged_doc = load_or_none(places.staged) if places.staged else None
    staged_by_slug: dict[str, int] = {}
    staged_time = -1.0  # no staging: older than any report
    if isinstance(staged_doc, dict) and isinstance(staged_doc.get("staged"), list):
        for s in staged_doc["staged"]:
            if isinstance(s, dict) and isinstance(s.get("trace"), str):  # a hand-edited entry counts for no trace
                staged_by_slug[s["trace"]] = staged_by_slug.get(s["trace"], 0) + 1
        staged_time = places.staged.stat().st_mtime if places.staged else -1.0
        if staged_time > time.time() + FUTURE_SLACK_S:  # dated ahead: cannot be ordered against the reports
            staged_time = -1.0

    summary = RunSummary(places=places, newest_report=max(report_time.values(), default=0.0))
    free = free_space(places.disk())
    summary.free_bytes = free if free is not None and free < MIN_FREE_BYTES else None
    for slug in slugs:
        line = TraceLine(slug)
        line.error, line.log = failure_reason(slug, stages, summary.free_bytes is not None) or (None, None)
        if line.error is None:
            line.meta, line.warnings = ingest_warnings(slug, stages)
        t = by_slug.get(slug)
        if t is not None:
            line.validated, line.records, line.failed = True, t["records"], t["failed"]
            line.without_record = t["packets_without_record"]
            if failing.get(slug):
                line.first_failure = _first_failure(failing[slug][0])
        if slug in report_time and staged_time >= report_time[slug]:  # staged after its last validation
            line.staged = staged_by_slug.get(slug, 0)
        summary.traces.append(line)
    return summary


def ingest_warnings(slug: str, stages: list[StageFiles]) -> tuple[Path | None, list[str]]:
    """(the trace's meta.json, its ingest warnings): what ingest noticed and mined around (a kernel.py
    that is a Git LFS pointer, a capture not read), shown so it is not missed."""
    meta = next((o for s in stages for o in s.files(slug)[1] if o.name == "meta.json"), None)
    doc = load_or_none(meta) if meta is not None else None
    warnings = doc.get("warnings") if isinstance(doc, dict) else None
    return meta, [w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else []


def _where(label: str, path: Path | None, stale_before: float = 0.0) -> list[str]:
    return [] if path is None else [_where_line(label, path, stale_before)]


def _where_line(label: str, path: Path, stale_before: float) -> str:
    if not path.exists():
        return f"  {label:<19}{path}  (not written)"
    stale = path.stat().st_mtime < stale_before
    return f"  {label:<19}{path}" + ("  (older than the last validation: not rewritten)" if stale else "")


def _trace_lines(t: TraceLine, width: int) -> list[str]:
    pad = f"  {'':<{width}}    "
    if t.error:
        return [f"  {t.slug:<{width}}  FAILED at {t.error}", f"{pad}log: {t.log}"]
    if not t.validated:
        out = [f"  {t.slug:<{width}}  not validated (the target stopped before validation)"]
    else:
        staged = "not staged yet" if t.staged is None else f"{t.staged} staged"
        out = [
            f"  {t.slug:<{width}}  {t.records} records: {staged}, {t.failed} failed validation, "
            f"{t.without_record} packets without a record"
        ]
    if t.first_failure:
        more = f" (first of {t.failed})" if t.failed > 1 else ""
        out += [f"{pad}{t.first_failure[0]}{more}", f"{pad}  {t.first_failure[1]}"]
    if t.warnings:
        more = f" (and {len(t.warnings) - 1} more)" if len(t.warnings) > 1 else ""
        out.append(f"{pad}ingest warned: {t.warnings[0][:MAX_REASON_CHARS]}{more}; all in {t.meta}")
    return out


def render(summary: RunSummary, exits_because: str = "", need_records: bool = False, strict: bool = False) -> str:
    """The text a user sees at the end of a run. `exits_because`: why a failed trace or a failing record
    makes this run exit 1 ("strict: true", the `validate` target), empty when it does not;
    `need_records`: having no record at all does too; `strict`: so does a run without a denylist."""
    width = max([len(t.slug) for t in summary.traces] + [5])
    out = ["", "Run summary", ""]
    if summary.free_bytes is not None:
        out += [
            f"  no space left on the device holding {summary.places.disk().parent} ({summary.free_bytes} bytes "
            "free): jobs cannot write their outputs, nor their logs; free space and re-run",
            "",
        ]
    for t in summary.traces:
        out += _trace_lines(t, width)
    validated = [t for t in summary.traces if t.validated]
    staged_total = sum(t.staged or 0 for t in summary.traces)
    out += [
        "",
        f"  total: {len(summary.traces)} traces ({len(summary.failed_traces)} failed), "
        f"{summary.records} records validated, {staged_total} staged, {summary.failed_records} failed validation, "
        f"{sum(t.without_record for t in validated)} packets without a record",
    ]
    p = summary.places
    out += [
        "",
        *_where("staging README", p.staging_readme, summary.newest_report),
        *_where("validation summary", p.validation_summary, summary.newest_report),
        *_where("dataset", p.dataset),
    ]
    if summary.failed_traces:
        out.append("  fix or drop each failed trace and re-run: only what is stale runs again")
        n = len(summary.failed_traces)
        out.append(
            f"  this run exits 1 because {n} trace(s) failed ({exits_because})"
            if exits_because
            else "  strict is off: failed traces do not change the exit status (`--config strict=true` makes them exit 1)"
        )
    if summary.failed_records:
        out.append(
            "  failing records are listed per gate in the validation summary; fix them and run `snakemake validate`"
        )
        out.append(
            f"  this run exits 1 because a record failed ({exits_because})"
            if exits_because
            else "  strict is off: failing records do not change the exit status (`--config strict=true` makes them exit 1)"
        )
    elif need_records and not summary.records:
        out.append(
            "  no records to validate: distill first (`snakemake distill`), or write records into "
            "results/distilled/<slug>/; this run exits 1"
        )
    if summary.no_denylist:
        out.append(f"  {summary.no_denylist}")
        if strict:
            out.append("  this run exits 1 because it ran without a denylist (strict: true)")
    return escape_controls("\n".join(out), keep_layout=True) + "\n"  # slugs are safe; paths and log lines are not


def exit_status(summary: RunSummary, exits_because: str, need_records: bool, strict: bool = False) -> int:
    """1 when a failed trace or a failing record must fail the run (a CI job gating on a sheet run must
    not pass while traces failed); `need_records`: having no record at all fails too (the `validate`
    target: there is nothing to have validated); `strict`: so does a run that scrubbed nothing private
    because no denylist was named and none was stated."""
    if strict and summary.no_denylist:
        return 1
    if not exits_because:
        return 0
    if summary.failed_traces or summary.failed_records:
        return 1
    return 1 if need_records and not summary.records else 0
