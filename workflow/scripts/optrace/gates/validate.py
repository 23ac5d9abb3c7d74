"""`optrace validate`: all 19 gates (9 store + 10 trace) on every distilled record, per trace, with a
content-hash cache; a summary over all traces; and the injection tests that prove each gate fires.

    optrace validate trace --results R --slug S [--profile P] [--live-store INDEX]
    optrace validate trace --slug S --distilled D [--drafts R] --packets P --versions V --profiles F --meta M --out O
        -> R/staging/reports/S/validation.json: per record, every gate's verdict and messages (exit 0
           even when records fail: failing records are data, and the other traces' reports must still
           be written; exit 2 on unusable input)
    optrace validate summary REPORT... --out FILE
        -> merges the reports, fails ids claimed by several traces, lists their shared episodes (exit 0)
    optrace validate check SUMMARY
        -> prints the summary; exit 1 when any record fails or there is no record at all
    optrace validate record FILE [--results R --slug S]
        -> an agent's self-check of one record while the workflow runs (optrace.gates.selfcheck); exit 1 on a FAIL
    optrace validate --injection-tests
        -> plants one defect per case into passing records of the example trace; exit 1 unless every
           case fires exactly its gate and every one of the 19 gates has a case that fired

The cache (`R/work/S/validation-cache.json`, gates.tracerun) maps a record's content to its verdicts.

Why the cache cannot be forged: each entry carries an HMAC-SHA256 of its key and verdicts under a
secret key kept OUTSIDE the results tree (optrace.secret: CACHE_KEY_ENV, default
~/.cache/optrace/validation-cache.key, created 0600 on first use). Whoever can write work/ and
distilled/ -- the agent whose records are judged -- can compute every content hash, so a plain digest
would let it write "PASS" for any bytes; it cannot compute the MAC without the key, and an entry whose
MAC does not verify is judged again. When no key file can be kept, a per-process key is used: the cache
then never hits, which is slow but never wrong.
The report names each record's sha256, and stage copies a record only when the bytes it reads have it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from optrace.errors import InputError
from optrace.gates import REPORT_SCHEMA, SUMMARY_SCHEMA
from optrace.gates.store.model import FAIL, PASS
from optrace.gates.store.runner import GATE_DEFS as STORE_GATE_DEFS
from optrace.gates.trace.model import PROFILE
from optrace.gates.trace.runner import ALL_GATES, TRACE_GATE_DEFS, RecordVerdict
from optrace.gates.trace.store_overlap import Claim, LiveStore, holders, load_live_store, overlaps
from optrace.gates.tracerun import CACHE_NAME, TracePaths, TraceRun
from optrace.jsonio import dumps_compact, read_json, write_text_atomic
from optrace.scrub.leak_patterns import add_denylist_argument, read_denylist

SHOWN_FAILURES = 20  # failing records `check` prints


def gate_table() -> list[dict]:
    kinds = [("store", g) for g in STORE_GATE_DEFS] + [("trace", g) for g in TRACE_GATE_DEFS]
    return [{"name": g.name, "kind": kind, "summary": g.summary} for kind, g in kinds]


def trace_report(
    slug: str, verdicts: list[RecordVerdict], without_record: list[str], judged_inputs: str | None = None
) -> dict:
    rows = [v.to_json() for v in verdicts]
    failed = sum(r["status"] == FAIL for r in rows)
    return {
        "schema": REPORT_SCHEMA,
        "slug": slug,
        "gates": gate_table(),
        "counts": {"records": len(rows), "passed": len(rows) - failed, "failed": failed},
        "packets_without_record": without_record,
        "judged_inputs": judged_inputs,  # optrace.mine.packetfile.judged_inputs: stage stages under the same
        "records": rows,
    }


def validate_trace(
    paths: TracePaths,
    profile: Path = PROFILE,
    live_index: Path | None = None,
    denylist_terms: tuple[str, ...] = (),
    cache: Path | None = None,
) -> tuple[dict, int]:
    """(report, records judged this run) for one trace; writes nothing but the cache, if one is named."""
    live = load_live_store(live_index) if live_index else LiveStore()
    run = TraceRun(paths, profile, live, denylist_terms)
    verdicts, without_record = run.run(cache)
    return trace_report(paths.slug, verdicts, without_record, run.judged_inputs), run.checked


# --- all traces ----------------------------------------------------------------------------------


def shared_episodes(rows: list[tuple[str, dict]], claims: list[Claim]) -> list[dict]:
    """Episodes held by records of more than one trace: the same lever found by several runs, which
    admission confirms or conflicts (never a validation failure; within a trace a duplicate fails)."""
    slug_of = {rec["path"]: slug for slug, rec in rows}
    id_of = {rec["path"]: rec["id"] for _, rec in rows}
    return [
        {"episode_key": key, "records": [{"slug": slug_of[p], "path": p, "id": id_of[p]} for p in paths]}
        for key, paths in sorted(holders(claims, "episode_key").items())
        if len({slug_of[p] for p in paths}) > 1
    ]


def summarize(reports: list[tuple[str, dict]]) -> dict:
    """Merge (path, report) pairs; a record whose id another trace also claims fails store-overlap (the two
    would be one file), an episode several traces hold is listed in `shared_episodes`."""
    rows = [(r["slug"], rec) for _, r in reports for rec in r["records"]]
    claims = [Claim(rec["path"], rec["id"], rec["episode_key"]) for _, rec in rows]
    across = overlaps(claims, LiveStore(), kinds=("id",))
    records, cross_trace = [], []
    for slug, rec in rows:
        known = set(rec["gates"]["store-overlap"]["messages"])
        new = [m for m in across.get(rec["path"], []) if m not in known]
        cross_trace += new
        failed = rec["failed"] + (["store-overlap"] if new and "store-overlap" not in rec["failed"] else [])
        messages = [m for g in failed for m in rec["gates"][g]["messages"]] + new
        records.append(
            {
                "slug": slug,
                "path": rec["path"],
                "id": rec["id"],
                "sha256": rec.get("sha256"),
                "status": FAIL if failed else PASS,
                "failed": failed,
                "messages": messages,
            }
        )
    traces = []
    for path, r in reports:
        mine = [rec for rec in records if rec["slug"] == r["slug"]]
        failed = sum(rec["status"] == FAIL for rec in mine)
        traces.append(
            {
                "slug": r["slug"],
                "report": path,
                "records": len(mine),
                "passed": len(mine) - failed,
                "failed": failed,
                "packets_without_record": len(r["packets_without_record"]),
                "judged_inputs": r.get("judged_inputs"),
            }
        )
    failed = sum(rec["status"] == FAIL for rec in records)
    return {
        "schema": SUMMARY_SCHEMA,
        "records": len(records),
        "passed": len(records) - failed,
        "failed": failed,
        "traces": traces,
        "cross_trace_duplicate_ids": cross_trace,
        "shared_episodes": shared_episodes(rows, claims),
        "by_record": records,
    }


def format_summary(summary: dict) -> str:
    lines = [
        f"validation: {summary['records']} records in {len(summary['traces'])} traces, "
        f"{summary['passed']} passed, {summary['failed']} failed"
    ]
    width = max([len(t["slug"]) for t in summary["traces"]] + [5])
    for t in summary["traces"]:
        lines.append(
            f"  {t['slug']:<{width}}  {t['records']:>5} records  {t['passed']:>5} passed  "
            f"{t['failed']:>5} failed  {t['packets_without_record']:>4} packets without a record"
        )
    failing = [r for r in summary["by_record"] if r["status"] == FAIL]
    for r in failing[:SHOWN_FAILURES]:
        lines.append(f"FAIL {r['path']}  [{', '.join(r['failed'])}]")
        lines += [f"    {m}" for m in r["messages"]]  # every message: the fix for the second is not in the first
    if len(failing) > SHOWN_FAILURES:
        lines.append(f"... and {len(failing) - SHOWN_FAILURES} more failing records (see the summary file)")
    if summary["shared_episodes"]:
        lines.append(
            f"{len(summary['shared_episodes'])} episodes are held by records of several traces: "
            "admission confirms or conflicts the later ones with the first (optrace gate match)"
        )
    if not summary["records"]:
        lines.append(
            "FAIL no records to validate: distill first (snakemake distill), or write records into "
            "results/distilled/<slug>/"
        )
    return "\n".join(lines)


# --- CLI -----------------------------------------------------------------------------------------


def denylist_terms(env_name: str) -> tuple[str, ...]:
    return read_denylist(variable=env_name)


TRACE_FILES = ("distilled", "packets", "versions", "profiles", "meta")


def trace_paths(args: argparse.Namespace) -> tuple[TracePaths, Path, Path | None]:
    """(the files to read, the report to write, the cache or None): each named, or the default layout
    under --results (which also keeps a cache there); a file neither names is an error."""
    under = TracePaths.under(args.results, args.slug) if args.results else None
    default_out = args.results / "staging" / "reports" / args.slug / "validation.json" if args.results else None
    named: dict[str, Path | None] = {k: getattr(args, k) or (getattr(under, k) if under else None) for k in TRACE_FILES}
    named["out"] = args.out or default_out
    if missing := [f"--{k}" for k, v in named.items() if v is None]:
        raise InputError("optrace validate trace", f"give --results or {', '.join(missing)}")
    cache = args.cache or (args.results / "work" / args.slug / CACHE_NAME if args.results else None)
    distilled, packets, versions, profiles, meta, out = (Path(str(named[k])) for k in (*TRACE_FILES, "out"))
    drafts = args.drafts or (under.drafts if under else None)
    return TracePaths(args.slug, distilled, packets, versions, profiles, meta, drafts), out, cache


def cmd_trace(args: argparse.Namespace) -> int:
    paths, out, cache = trace_paths(args)
    report, checked = validate_trace(paths, args.profile, args.live_store, denylist_terms(args.denylist_env), cache)
    write_text_atomic(out, dumps_compact(report))
    c = report["counts"]
    print(
        f"validate: {args.slug}: {c['records']} records ({checked} checked, {c['records'] - checked} cached), "
        f"{c['passed']} passed, {c['failed']} failed -> {out}"
    )
    return 0


def read_report(path: Path) -> dict:
    report = read_json(path)
    if not isinstance(report, dict) or report.get("schema") != REPORT_SCHEMA:
        raise InputError(path, f"is not a validation report ({REPORT_SCHEMA})")
    return report


def cmd_summary(args: argparse.Namespace) -> int:
    # each report named relative to the summary's own folder: the file holds no path of this machine
    reports = [(Path(os.path.relpath(p, args.out.parent)).as_posix(), read_report(p)) for p in args.reports]
    try:
        summary = summarize(reports)
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            args.out, f"a report is not shaped like {REPORT_SCHEMA} ({type(exc).__name__}: {exc})"
        ) from None
    write_text_atomic(args.out, dumps_compact(summary))
    print(format_summary(summary))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    summary = read_json(args.summary)
    if not isinstance(summary, dict) or summary.get("schema") != SUMMARY_SCHEMA:
        raise InputError(args.summary, f"is not a validation summary ({SUMMARY_SCHEMA})")
    print(format_summary(summary))
    return 1 if summary["failed"] or not summary["records"] else 0


def cmd_record(args: argparse.Namespace) -> int:
    from optrace.gates.selfcheck import check_record_file, format_gates, locate

    paths = locate(args.file, args.results, args.slug)
    gates = check_record_file(args.file, paths, args.profile, args.live_store, denylist_terms(args.denylist_env))
    print(format_gates(args.file, gates))
    return 1 if any(status == FAIL for status, _ in gates.values()) else 0


def cmd_injection_tests() -> int:
    from optrace.gates.trace.injection import covered_gates, format_outcomes, run_all_injections

    outcomes = run_all_injections()
    print(format_outcomes(outcomes))
    return 0 if covered_gates(outcomes) == set(ALL_GATES) and all(o.fired for o in outcomes) else 1


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="optrace validate", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--injection-tests",
        action="store_true",
        help="prove every gate fires on a planted defect in passing records of the example trace",
    )
    sub = ap.add_subparsers(dest="command")
    tr = sub.add_parser("trace", help="validate one trace's distilled records")
    tr.add_argument("--results", type=Path, help="results root: the default layout of the files below, and a cache")
    tr.add_argument("--slug", required=True, help="the trace to validate")
    tr.add_argument("--distilled", type=Path, help="the trace's records folder (<results>/distilled/<slug>)")
    tr.add_argument("--packets", type=Path, help="the trace's packets file (packets/<slug>.json)")
    tr.add_argument("--drafts", type=Path, help="distill's copies of the trace's records (work/<slug>/drafts.json)")
    for name in ("versions", "profiles", "meta"):
        tr.add_argument(f"--{name}", type=Path, help=f"ingest's {name} file of the trace")
    tr.add_argument(
        "--cache", type=Path, help="the verdict cache to read and refresh (default: none, or under --results)"
    )
    tr.add_argument("--profile", type=Path, default=PROFILE, help="opt-trace profile schema")
    tr.add_argument("--live-store", type=Path, help="the live store's records/index.json")
    add_denylist_argument(tr)
    tr.add_argument("--out", type=Path, help="report path (default: staging/reports/<slug>/validation.json)")
    su = sub.add_parser("summary", help="merge the traces' reports; check ids and list episodes across traces")
    su.add_argument("reports", type=Path, nargs="*", help="per-trace validation.json reports")
    su.add_argument("--out", type=Path, required=True, help="validation-summary.json to write")
    ch = sub.add_parser("check", help="print a summary; exit 1 when any record fails")
    ch.add_argument("summary", type=Path, help="a validation-summary.json")
    rc = sub.add_parser("record", help="an agent's self-check: every gate on one record file, no lock, no cache")
    rc.add_argument("file", type=Path, help="the record (<results>/distilled/<slug>/<id>.json)")
    rc.add_argument("--results", type=Path, help="results root (default: from the file's path)")
    rc.add_argument("--slug", help="the trace's slug (default: from the file's path)")
    rc.add_argument("--profile", type=Path, default=PROFILE, help="opt-trace profile schema")
    rc.add_argument("--live-store", type=Path, help="the live store's records/index.json")
    add_denylist_argument(rc)
    args = ap.parse_args(argv)
    if not args.injection_tests and args.command is None:
        ap.error("a command (trace, summary, check, record) or --injection-tests is required")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.injection_tests:
        return cmd_injection_tests()
    return {"trace": cmd_trace, "summary": cmd_summary, "check": cmd_check, "record": cmd_record}[args.command](args)


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
