"""Staging (rule `stage`): scored, store-shaped copies of every record that passed validation, and the store's index.

Agent-written records in distilled/ are never touched: the stage scores a copy of each passing record
(`worth.rank` from the worth formula, never self-scored, and a full `worth.track` block) and writes
them all into one file, `staging/store.json` (`{"format", "files": {records/<type>/<vendor>/<arch>/
<dsl>/<operator_family>/<id>.json: text}}`), beside the store's index and staged.json. One file travels
through object storage as one object; `optrace store-tree` (rule `store_tree`, where the store is)
writes it out as the store's tree, `staging/records/`. Records that failed a gate are listed in
staged.json, not staged.

Stage copies exactly the bytes that were validated: it reads each passing record's file once, and
stages it only when the sha256 of those bytes is the one the validation summary names; a record
edited after validation (same size, mtime restored or not) is listed as failed (`changed-since-
validation`), never staged. So is every record of a trace whose packets file or versions are not the
ones validation judged (the summary's `judged_inputs`): the score is computed from them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optrace.distill.records import TraceRecords, read_drafts
from optrace.errors import InputError
from optrace.gates.store.index import expected_entry
from optrace.gates.store.model import RecordView
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes, store_path
from optrace.jsonio import read_bytes, read_json, write_json, write_text_atomic
from optrace.mine.ladder import run_ladder
from optrace.mine.packetfile import judged_inputs, read_packet_file
from optrace.publish.storetree import write_store_file, write_tree
from optrace.publish.worth import BUILDER_VERSION, COUNTERS, FORMULA, rank
from optrace.rows import PacketRow, VersionRow, episode_technique, manifest_packets, read_versions

RECORD_KEY_ORDER = (
    "schema",
    "id",
    "type",
    "level",
    "status",
    "episode_key",
    "retrieval",
    "payload",
    "evidence",
    "worth",
)
SEARCH_FIELDS = ("goal", "technique", "what", "summary", "lesson", "attempted", "change", "mechanism")
MAX_SEARCH_CHARS = 2000
MAX_TITLE_CHARS = 160
MAX_INPUT_BYTES = 1 << 30  # versions.jsonl and packets are hashed whole; their own stages bound them
BaselineOf = Callable[[list[VersionRow]], float | None]


def store_json(record: dict) -> str:
    """The store's own file format: indent 1, store key order, UTF-8."""
    ordered = {k: record[k] for k in RECORD_KEY_ORDER if k in record}
    return json.dumps(ordered, ensure_ascii=False, indent=1) + "\n"


def trace_prior(rows: list[VersionRow]) -> dict:
    """What the whole trace says about how often its changes were kept."""
    kept = sum(r["verdict"] == "kept" for r in rows)
    reverted = sum(r["verdict"] == "reverted" for r in rows)
    return {"corpus_kept_ratio": round(kept / (kept + reverted), 4)} if kept + reverted else {}


def record_prior(record: dict, packet: PacketRow, trace: dict, baseline_us: float | None) -> dict:
    prior = dict(trace)
    kind = record["type"]
    gain = record["worth"]["gain"]
    if kind == "strategy" and gain.get("basis") == "measured" and gain.get("pct") is not None:
        prior["step_gain_pct"] = gain["pct"]
    if kind == "anti-strategy":
        prior["rediscovered"] = packet["agent_facing"].get("times_tried", 1)
    if kind == "reference-kernel":
        geo = packet["agent_facing"]["measurements"]["geomean_us"]
        if baseline_us and geo:
            prior["best_speedup_x"] = round(baseline_us / geo, 4)
    technique = episode_technique(record["episode_key"])  # the technique, not the trace's repeat mark
    if technique:
        prior["technique"] = technique
    return prior


def score(record: dict, prior: dict) -> dict:
    """A copy of the record with a full track block and the rank the formula gives."""
    return scored_with(record, {"counters": {k: 0 for k in COUNTERS}, "prior": prior, "confirm_keys": []})


def scored_with(record: dict, track: dict) -> dict:
    """A copy of the record carrying `track` and the rank the formula gives for it (admission rescores)."""
    r = rank(record["type"], record["worth"]["gain"].get("basis", ""), track)
    worth = {
        **record["worth"],
        "rank": {
            "score": r.score,
            "tier": r.tier,
            "formula": FORMULA,
            "components": r.components,
            "builder_version": BUILDER_VERSION,
        },
        "track": track,
    }
    return {**record, "worth": worth}


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def index_entry(record: dict, relpath: str) -> dict:
    payload = record.get("payload", {})
    goal = payload.get("goal") or ""
    title = (payload.get("title") or payload.get("technique") or goal.split(". ")[0] or record["id"])[:MAX_TITLE_CHARS]
    parts = [record["id"], title] + [t for k in SEARCH_FIELDS for t in _texts(payload.get(k))]
    parts += _texts(payload.get("problem", {}).get("statement")) + record["retrieval"].get("technique_tags", [])
    parts += record["retrieval"].get("triggers", [])
    search = " ".join(" ".join(parts).lower().split())[:MAX_SEARCH_CHARS]
    return {"id": record["id"], **expected_entry(RecordView(record, relpath)), "title": title, "search_text": search}


CHANGED = "changed-since-validation"


def read_validated(records: TraceRecords, slug: str, path: str) -> tuple[bytes | None, str | None]:
    """The bytes of the record the validation summary names `distilled/<slug>/<name>`, read as validate
    read them (no link, no FIFO; the area first, then distill's copies)."""
    folder, _, name = path.rpartition("/")
    if folder != f"distilled/{slug}":
        return None, "not a record path of this trace"
    return records.read(name, MAX_RECORD_BYTES)


def validated_record(records: TraceRecords, slug: str, path: str, sha256: str | None) -> dict | None:
    """The record whose bytes are the ones validated (by sha256), parsed from those very bytes; None
    when the file now holds other bytes or cannot be read."""
    data, _ = read_validated(records, slug, path)
    if data is None:
        return None
    if not isinstance(sha256, str) or hashlib.sha256(data).hexdigest() != sha256:
        return None
    record, error = parse_json_bytes(data)
    return record if error is None and isinstance(record, dict) else None


VERDICT_TEXT = ("slug", "path", "status")


def summary_problem(summary: Any) -> str | None:
    """Why `summary` is not shaped as `optrace validate summary` writes it (what staging reads of it), or None."""
    records = summary.get("by_record") if isinstance(summary, dict) else None
    if not isinstance(records, list):
        return "is not a validation summary (no by_record list)"
    for n, rec in enumerate(records):
        if not (
            isinstance(rec, dict)
            and all(isinstance(rec.get(k), str) for k in VERDICT_TEXT)
            # a file that is no record has no id; a record that passed has one
            and (isinstance(rec.get("id"), str) or (rec.get("id") is None and rec.get("status") != "PASS"))
            and isinstance(rec.get("failed", []), list)
            and all(isinstance(g, str) for g in rec.get("failed", []))
        ):
            return f"by_record[{n}] is not a verdict (text {', '.join(VERDICT_TEXT)}, an id, a failed list)"
    return None


def split_by_verdict(summary: dict) -> tuple[dict[str, list[tuple]], list[dict]]:
    """({slug: (path, sha256) of records that passed every gate}, [records that did not, with their
    failed gates]). The summary is the authority: it adds overlaps across traces to each trace's report."""
    passed: dict[str, list[tuple]] = {}
    failed = []
    for rec in summary["by_record"]:
        if rec["status"] == "PASS":
            passed.setdefault(rec["slug"], []).append((rec["path"], rec.get("sha256"), rec["id"]))
        else:
            failed.append({"trace": rec["slug"], "path": rec["path"], "id": rec["id"], "gates": sorted(rec["failed"])})
    return passed, failed


def _bytes(path: Path) -> bytes:
    data, error = read_bytes(path, MAX_INPUT_BYTES)
    return data if data is not None else f"\0{error}".encode()


@dataclass(frozen=True)
class TraceInputs:
    """One trace's files the stage reads (the rule's declared inputs)."""

    versions: Path  # ingest's versions.jsonl
    packets: Path  # the packets stage's file (optrace.mine.packetfile)
    drafts: Path | None  # distill's copies of the trace's records (optrace.distill.records)


@dataclass(frozen=True)
class StageInputs:
    records_root: Path  # where the validation summary's record paths (distilled/<slug>/<id>.json) resolve
    traces: dict[str, TraceInputs]

    @classmethod
    def under(cls, results: Path, slugs: list[str]) -> StageInputs:
        """The default layout of a results root."""
        return cls(results, {s: TraceInputs(*_default_files(results, s)) for s in slugs})

    def records(self, slug: str) -> TraceRecords:
        """The trace's records: its area under records_root, then distill's copies."""
        return TraceRecords(self.records_root / "distilled" / slug, read_drafts(self.traces[slug].drafts, slug))


def _default_files(results: Path, slug: str) -> tuple[Path, Path, Path | None]:
    drafts = results / "work" / slug / "drafts.json"
    return (
        results / "work" / slug / "versions.jsonl",
        results / "packets" / f"{slug}.json",
        drafts if drafts.is_file() else None,
    )


def stage_trace(
    inputs: StageInputs,
    slug: str,
    passed: list[tuple],
    baseline_of: BaselineOf,
    records: TraceRecords,
    judged: str | None,
) -> dict:
    """One trace's share: its copies ({store path: text}), its staged, index and failed entries."""
    share: dict = {"files": {}, "staged": [], "entries": [], "failed": [], "failed_trace": None}
    files = inputs.traces[slug]
    rows = read_versions(files.versions)
    packet_file = read_packet_file(files.packets)
    manifest = packet_file.manifest
    if isinstance(manifest.get("failed"), dict):  # pertrace's placeholder
        f = manifest["failed"]
        share["failed_trace"] = {"trace": slug, "stage": f.get("stage"), "reason": f.get("reason")}
        return share
    packets = {p["id"]: p["seg_id"] for p in manifest_packets(files.packets, manifest)}
    if passed and judged != judged_inputs(packet_file, _bytes(files.versions)):
        # the packets or versions are not the ones validation judged: nothing of the trace is staged
        share["failed"] = [{"trace": slug, "path": p, "id": rid, "gates": [CHANGED]} for p, _, rid in passed]
        return share
    trace, baseline_us = trace_prior(rows), baseline_of(rows)  # the trace's, once: it runs the ladder
    for path, sha256, rid in passed:
        record = validated_record(records, slug, path, sha256)
        if record is None:
            share["failed"].append({"trace": slug, "path": path, "id": rid, "gates": [CHANGED]})
            continue
        packet: PacketRow = json.loads(packet_file.data(f"{packets[record['id']]}.json"))
        scored = score(record, record_prior(record, packet, trace, baseline_us))
        rel = store_path(scored["type"], scored["retrieval"]["scope"], scored["id"])
        if rel is None:  # validation binds the scope to the packet; a name that could climb is never written
            share["failed"].append({"trace": slug, "path": path, "id": rid, "gates": ["layout"]})
            continue
        share["files"][rel] = store_json(scored)
        share["entries"].append(index_text(index_entry(scored, rel)))
        share["staged"].append(staged_entry(slug, scored, rel))
    return share


# records/index.json is written as json.dumps(index, indent=1) writes it, from each entry's own text: an
# entry is encoded once, when its trace is staged, and a remembered trace's entries are not encoded again.
INDEX_ENTRY_INDENT = "  "  # an entry sits two levels deep: {"records": [ {...} ]}


def index_text(entry: dict) -> tuple[str, str]:
    """(id, the entry as the index holds it)."""
    text = json.dumps(entry, ensure_ascii=False, indent=1).replace("\n", "\n" + INDEX_ENTRY_INDENT)
    return entry["id"], INDEX_ENTRY_INDENT + text


def index_json(entries: list[tuple[str, str]]) -> str:
    head = {"schema": "clean-1.3", "generated_by": "optrace stage", "builder_version": BUILDER_VERSION}
    head_text = json.dumps({**head, "count": len(entries)}, ensure_ascii=False, indent=1)
    body = ",\n".join(text for _, text in sorted(entries, key=lambda e: e[0])) if entries else None
    records = f'"records": [\n{body}\n ]' if body is not None else '"records": []'
    return f"{head_text[:-2]},\n {records}\n}}\n"


def staged_entry(slug: str, scored: dict, rel: str) -> dict:
    """staged.json's line for one copy: where it is, its rank, and what the staging README shows of it
    (so the README reads no copy)."""
    gain, rank = scored["worth"]["gain"], scored["worth"]["rank"]
    regressions = gain.get("regressions") or []
    return {
        "trace": slug,
        "id": scored["id"],
        "path": rel,
        "type": scored["type"],
        "score": rank["score"],
        "tier": rank["tier"],
        "gain_pct": gain.get("pct"),
        "first_regression": [regressions[0]["metric"], regressions[0].get("delta_pct", "")] if regressions else None,
        "basis": (scored["evidence"]["summary"].get("bottleneck_evidence") or {}).get("basis"),
        "version": scored["evidence"]["raw"].get("version"),
    }


@dataclass(frozen=True)
class Staged:
    summary: dict  # staged.json
    index: str  # the store's records/index.json
    files: dict[str, str]  # store path (records/...) -> the copy's text


def stage(inputs: StageInputs, summary_in: dict, baseline_of: BaselineOf) -> Staged:
    """Every trace's passed records, scored: the copies, the store's index and staged.json."""
    passed, failed = split_by_verdict(summary_in)
    traces = summary_in.get("traces")
    judged = (
        {t.get("slug"): t.get("judged_inputs") for t in traces if isinstance(t, dict)}
        if isinstance(traces, list)
        else {}
    )
    entries, summary, files = [], {"staged": [], "failed": failed, "failed_traces": []}, {}
    for slug in inputs.traces:
        share = stage_trace(inputs, slug, passed.get(slug, []), baseline_of, inputs.records(slug), judged.get(slug))
        if share["failed_trace"] is not None:
            summary["failed_traces"].append(share["failed_trace"])
        failed.extend(share["failed"])
        files.update(share["files"])
        entries.extend(share["entries"])
        summary["staged"].extend(share["staged"])
    summary["staged"].sort(key=lambda s: s["id"])
    summary["failed"].sort(key=lambda s: (s["trace"], s["path"]))
    return Staged(summary, index_json(entries), dict(sorted(files.items())))


def baseline_geomean(rows: list[VersionRow]) -> float | None:
    # the baseline is the first surviving version whatever the thresholds, so defaults do
    return next((s.geomean_us for s in run_ladder(rows) if s.outcome == "baseline"), None)


def write_outputs(staged: Staged, summary: Path, index: Path, store: Path, tree: Path | None = None) -> None:
    """staged.json, the index, the store file, and (a run by hand) the store's tree from them."""
    write_store_file(store, staged.files)
    write_text_atomic(index, staged.index)
    if tree is not None:
        write_tree(tree, staged.index, staged.files)
    write_json(summary, staged.summary)


def stage_results(results: Path, slugs: list[str], validation: dict) -> dict:
    """Stage a results root by hand (its default layout): staging/store.json, index.json, staged.json and
    the store's tree staging/records/; staged.json's content."""
    staged = stage(StageInputs.under(results, slugs), validation, baseline_geomean)
    out = results / "staging"
    write_outputs(staged, out / "staged.json", out / "index.json", out / "store.json", out / "records")
    return staged.summary


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace stage", description=__doc__)
    ap.add_argument("--results", type=Path, help="a results root: the default layout of every path below")
    ap.add_argument("--records-root", type=Path, help="where the summary's record paths (distilled/...) resolve")
    ap.add_argument(
        "--trace",
        nargs=4,
        action="append",
        default=[],
        metavar=("SLUG", "VERSIONS", "PACKETS", "DRAFTS"),
        help="a trace to stage",
    )
    ap.add_argument("--validation", required=True, type=Path, help="validation-summary.json")
    ap.add_argument("--summary", type=Path, help="staged.json to write")
    ap.add_argument("--index", type=Path, help="the store's index to write")
    ap.add_argument("--store", type=Path, help="the store file to write (every copy)")
    ap.add_argument("slugs", nargs="*", help="with --results: the traces to stage (slugs under work/ and packets/)")
    args = ap.parse_args(argv)
    validation = read_json(args.validation)
    problem = summary_problem(validation)
    if problem is not None:
        raise InputError(args.validation, problem)
    if args.results:
        inputs = StageInputs.under(args.results, args.slugs)
        out = args.results / "staging"
        paths = (args.summary or out / "staged.json", out / "index.json", out / "store.json", out / "records")
    elif args.records_root and args.trace and args.summary and args.index and args.store:
        traces = {slug: TraceInputs(Path(v), Path(p), Path(d)) for slug, v, p, d in args.trace}
        inputs = StageInputs(args.records_root, traces)
        paths = (args.summary, args.index, args.store, None)
    else:
        raise InputError(
            "optrace stage",
            "give --records-root, a --trace per trace, --summary, --index and --store (or --results and slugs)",
        )
    try:
        staged = stage(inputs, validation, baseline_geomean)
    except KeyError as exc:
        raise InputError(args.validation, f"a record has no packet or a required field ({exc})") from None
    write_outputs(staged, *paths)
    summary = staged.summary
    print(
        f"stage: {len(summary['staged'])} records staged, {len(summary['failed'])} failed validation (listed in {paths[0]})"
    )
    for f in summary["failed_traces"]:
        print(f"  trace {f['trace']} failed at {f['stage']}: {f['reason']}")
    return 0
