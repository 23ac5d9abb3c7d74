"""`optrace validate`: all 17 gates (9 store + 8 trace) on every distilled record, per trace, with a
content-hash cache; a summary over all traces; and the injection tests that prove each gate fires.

    optrace validate trace --results R --slug S [--profile P] [--live-store INDEX]
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
           case fires exactly its gate and every one of the 17 gates has a case that fired

The cache (`R/work/S/validation-cache.json`) maps sha256(context, record path and bytes, packet bytes,
code bytes) to the record's per-record verdicts; the context digest covers the gates' source code,
both schemas, ingest's versions.jsonl, profiles.jsonl and meta.json and the denylist. A run keeps only
the entries it used. Cross-record gates (relations, store-overlap) are recomputed every run from cached
ids.

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
import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from optrace import PACKAGE_DIR
from optrace.distill.records import record_names
from optrace.errors import InputError
from optrace.gates import REPORT_SCHEMA, SUMMARY_SCHEMA
from optrace.gates.store.model import FAIL, PASS
from optrace.gates.store.runner import GATE_DEFS as STORE_GATE_DEFS
from optrace.gates.store.schema import CONTRACT
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes, read_bytes
from optrace.gates.trace.model import PROFILE, Packet, TraceContext, trace_context
from optrace.gates.trace.runner import ALL_GATES, TRACE_GATE_DEFS, Judged, RecordVerdict, finish, judge
from optrace.gates.trace.store_overlap import Claim, LiveStore, holders, load_live_store, overlaps
from optrace.jsonio import dumps_compact, load_or_none, read_json, read_jsonl, write_text_atomic
from optrace.rows import manifest_packets
from optrace.run.codedigest import package_digest
from optrace.scrub.leak_patterns import add_denylist_argument, denylist_pattern, read_denylist
from optrace.secret import cache_secret, mac, verifies

MAX_PACKET_BYTES = 4 * 1024 * 1024  # a packet quotes a diff of up to 60 000 characters and per-shape tables

CACHE_NAME = "validation-cache.json"
CACHE_FORMAT = 2
SHOWN_FAILURES = 20  # failing records `check` prints
# A record that cannot be parsed has nothing for its author to fix in place; distill re-drafts (or
# re-asks the agent for) exactly the packets whose record is missing.
REDRAFT_ADVICE = "; delete it and re-run (distill writes it again from its packet)"


# --- where a trace's files are -------------------------------------------------------------------


@dataclass(frozen=True)
class TracePaths:
    results: Path
    slug: str

    @property
    def distilled(self) -> Path:
        return self.results / "distilled" / self.slug

    @property
    def packets(self) -> Path:
        return self.results / "packets" / self.slug

    @property
    def work(self) -> Path:
        return self.results / "work" / self.slug

    @property
    def report(self) -> Path:
        return self.results / "staging" / "reports" / self.slug / "validation.json"

    def relpath(self, name: str) -> str:
        return f"distilled/{self.slug}/{name}"


def manifest_targets(packets: Path) -> dict[str, tuple[str, str | None]]:
    """Record id -> (seg_id, code file) from the packets manifest."""
    path = packets / "manifest.json"
    return {e["id"]: (e["seg_id"], e.get("code_file")) for e in manifest_packets(path, read_json(path))}


# --- the cache -----------------------------------------------------------------------------------


def context_digest(parts: list[bytes]) -> bytes:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.digest()


def record_key(context: bytes, relpath: str, record: bytes, packet: bytes, code: bytes) -> str:
    h = hashlib.sha256(context)
    for part in (relpath.encode(), record, packet, code):
        h.update(len(part).to_bytes(8, "little") + part)  # length-prefixed: no two splits hash alike
    return h.hexdigest()


def entry_parts(key: str, verdict: dict) -> tuple[bytes, bytes]:
    """What a cache entry's MAC covers: its key and its verdicts."""
    return key.encode(), dumps_compact(verdict).encode()


@dataclass
class Cache:
    """What a previous run left: per-record verdicts by key, and ingest's facts for the context it ran in."""

    entries: dict[str, Any]
    context: str = ""
    facts: dict | None = None


def load_cache(path: Path) -> Cache:
    """Anything unreadable or of another format is simply a cold cache."""
    data = load_or_none(path)
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("entries"), dict):
        return Cache({})
    facts = data.get("facts")
    return Cache(data["entries"], str(data.get("context")), facts if isinstance(facts, dict) else None)


def cached(entries: dict[str, Any], key: str, secret: bytes) -> Judged | None:
    """The verified entry for key, or None: absent, not what to_json wrote, or a MAC that does not verify
    (an entry written by anyone but the validator) -- then the record is judged again."""
    entry = entries.get(key)
    if not (isinstance(entry, dict) and isinstance(entry.get("mac"), str) and isinstance(entry.get("verdict"), dict)):
        return None
    try:
        if not verifies(secret, entry["mac"], *entry_parts(key, entry["verdict"])):
            return None
        return Judged.from_json(entry["verdict"])
    except (TypeError, ValueError):
        return None


# --- one trace -----------------------------------------------------------------------------------


def facts_json(trace: TraceContext) -> dict:
    return {
        "commits": dict(trace.commits),
        "usable_captures": sorted(trace.usable_captures),
        "capture_versions": dict(trace.capture_versions),
        "meta": dict(trace.meta),
    }


def _str_map(value: Any) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def facts_from_json(slug: str, facts: dict, profile: str) -> TraceContext | None:
    """The cached facts, or None when they are not what facts_json wrote."""
    commits, usable, versions, meta = (facts.get(k) for k in ("commits", "usable_captures", "capture_versions", "meta"))
    if not (
        _str_map(commits)
        and _str_map(versions)
        and isinstance(meta, dict)
        and isinstance(usable, list)
        and all(isinstance(d, str) for d in usable)
    ):
        return None
    return TraceContext(slug, commits, frozenset(usable), profile, versions, meta)


@dataclass
class TraceRun:
    paths: TracePaths
    profile: Path
    live: LiveStore
    denylist_terms: tuple[str, ...]
    checked: int = 0  # records judged this run (cache misses)

    def __post_init__(self) -> None:
        self.targets = manifest_targets(self.paths.packets)
        self.denylist = denylist_pattern(self.denylist_terms)
        self._packet_files: dict[str, tuple[bytes, bytes]] = {}
        self._trace: TraceContext | None = None
        self.secret = cache_secret()

    def packet_files(self, seg_id: str, code_file: str | None) -> tuple[bytes, bytes]:
        if seg_id not in self._packet_files:
            data, error = read_bytes(self.paths.packets / f"{seg_id}.json", MAX_PACKET_BYTES)
            if data is None:
                raise InputError(self.paths.packets / f"{seg_id}.json", f"packet {error}")
            code = b""
            if code_file:
                code_read, error = read_bytes(self.paths.packets / code_file, MAX_PACKET_BYTES)
                if code_read is None:
                    raise InputError(self.paths.packets / code_file, f"packet code {error}")
                code = code_read
            self._packet_files[seg_id] = data, code
        return self._packet_files[seg_id]

    @property
    def trace(self) -> TraceContext:
        if self._trace is None:  # parsing 3000 versions costs more than 10 records: only on a miss
            self._trace = trace_context(
                self.paths.slug,
                read_jsonl(self.paths.work / "versions.jsonl"),
                read_jsonl(self.paths.work / "profiles.jsonl"),
                str(self.profile),
                read_json(self.paths.work / "meta.json"),
            )
        return self._trace

    def context(self) -> bytes:
        files = [
            self.profile,
            CONTRACT,
            self.paths.work / "versions.jsonl",
            self.paths.work / "profiles.jsonl",
            self.paths.work / "meta.json",
        ]
        try:
            parts = [path.read_bytes() for path in files]
        except OSError as exc:
            raise InputError(exc.filename, f"cannot be read ({exc.strerror})") from None
        return context_digest(
            [
                package_digest(PACKAGE_DIR).encode(),
                self.paths.slug.encode(),
                "\0".join(self.denylist_terms).encode(),
                *parts,
            ]
        )

    def parse_packet(self, target: tuple[str, str | None], data: bytes, code: bytes) -> Packet:
        seg_id, code_file = target
        try:
            return Packet.from_bytes(seg_id, data, code if code_file else None, code_file)
        except ValueError as exc:
            raise InputError(self.paths.packets / f"{seg_id}.json", f"packet is not valid JSON ({exc})") from None

    def judge_file(self, name: str, context: bytes, cache: Cache, used: dict) -> Judged:
        relpath = self.paths.relpath(name)
        data, error = read_bytes(self.paths.distilled / name, MAX_RECORD_BYTES)
        target = self.targets.get(name[: -len(".json")])
        packet_bytes, code = self.packet_files(*target) if target else (b"", b"")
        key = record_key(context, relpath, data or (error or "").encode(), packet_bytes, code)
        judged = cached(cache.entries, key, self.secret)
        if judged is not None:
            used[key] = cache.entries[key]  # verified: kept as written
            return judged
        if judged is None:
            record = None
            if data is not None:
                record, error = parse_json_bytes(data)
            if error is not None and target is not None:
                error += REDRAFT_ADVICE
            packet = self.parse_packet(target, packet_bytes, code) if target else None
            judged = judge(relpath, record, error, packet, self.trace, self.denylist)
            judged = dataclasses.replace(judged, sha256=hashlib.sha256(data).hexdigest() if data is not None else None)
            self.checked += 1
        verdict = judged.to_json()
        used[key] = {"verdict": verdict, "mac": mac(self.secret, *entry_parts(key, verdict))}
        return judged

    def run(self, cache_path: Path) -> tuple[list[RecordVerdict], list[str]]:
        """(verdicts, seg_ids of packets without a record); refreshes the cache file."""
        cache, used = load_cache(cache_path), dict[str, dict]()
        context = self.context()
        if cache.context == context.hex() and cache.facts is not None:
            self._trace = facts_from_json(self.paths.slug, cache.facts, str(self.profile))
        names = record_names(self.paths.distilled)
        judged = [self.judge_file(name, context, cache, used) for name in names]
        if used.keys() != cache.entries.keys() or cache.context != context.hex():
            facts = facts_json(self._trace) if self._trace is not None else None
            write_text_atomic(
                cache_path,
                dumps_compact({"format": CACHE_FORMAT, "context": context.hex(), "facts": facts, "entries": used}),
            )
        covered = {name[: -len(".json")] for name in names}
        missing = sorted(seg for rid, (seg, _) in self.targets.items() if rid not in covered)
        return finish(judged, self.live), missing


def gate_table() -> list[dict]:
    kinds = [("store", g) for g in STORE_GATE_DEFS] + [("trace", g) for g in TRACE_GATE_DEFS]
    return [{"name": g.name, "kind": kind, "summary": g.summary} for kind, g in kinds]


def trace_report(slug: str, verdicts: list[RecordVerdict], without_record: list[str]) -> dict:
    rows = [v.to_json() for v in verdicts]
    failed = sum(r["status"] == FAIL for r in rows)
    return {
        "schema": REPORT_SCHEMA,
        "slug": slug,
        "gates": gate_table(),
        "counts": {"records": len(rows), "passed": len(rows) - failed, "failed": failed},
        "packets_without_record": without_record,
        "records": rows,
    }


def validate_trace(
    paths: TracePaths, profile: Path = PROFILE, live_index: Path | None = None, denylist_terms: tuple[str, ...] = ()
) -> tuple[dict, int]:
    """(report, records judged this run) for one trace; writes nothing but the cache."""
    live = load_live_store(live_index) if live_index else LiveStore()
    run = TraceRun(paths, profile, live, denylist_terms)
    verdicts, without_record = run.run(paths.work / CACHE_NAME)
    return trace_report(paths.slug, verdicts, without_record), run.checked


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


def cmd_trace(args: argparse.Namespace) -> int:
    paths = TracePaths(args.results, args.slug)
    report, checked = validate_trace(paths, args.profile, args.live_store, denylist_terms(args.denylist_env))
    out = args.out or paths.report
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
    tr.add_argument("--results", type=Path, required=True, help="results root (distilled/, packets/, work/)")
    tr.add_argument("--slug", required=True, help="the trace to validate")
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
