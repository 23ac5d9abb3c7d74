"""Staging (rule `stage`): scored, store-shaped copies of every record that passed validation, and the store's index.

Agent-written records in distilled/ are never touched: the stage writes derived copies under
staging/records/<type>/<vendor>/<arch>/<dsl>/<operator_family>/<id>.json with `worth.rank` computed
from the worth formula (never self-scored) and a full `worth.track` block. Records that failed a gate
are listed in staged.json, not staged. Copies of records that no longer pass are removed.

Stage copies exactly the bytes that were validated: it reads each passing record's file once, and
stages it only when the sha256 of those bytes is the one the validation summary names; a record
edited after validation (same size, mtime restored or not) is listed as failed (`changed-since-
validation`), never staged. So is every record of a trace whose packets file or versions are not the
ones validation judged (the summary's `judged_inputs`): the score is computed from them.

A trace whose inputs are unchanged is not restaged: `staging/.stage-memo.json` remembers each trace's
share (the copies' hashes, its index and staged.json entries) under a digest of the package's code, the
trace's versions and packets and, per passed record, the verdict's sha256 and the bytes the file holds now
(`trace_key`). A share is reused only while its MAC verifies under the key kept outside the results tree
(optrace.secret: whoever can write the results tree cannot re-hash an edited copy into the memo) and
every copy it names is on disk with the remembered bytes; anything else, a damaged memo included,
restages the trace. So an agent batch in one trace of a
100-trace sheet restages that trace alone (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from optrace import PACKAGE_DIR
from optrace.distill.records import TraceRecords, read_drafts
from optrace.errors import InputError
from optrace.gates.store.index import expected_entry
from optrace.gates.store.model import RecordView
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes, store_path
from optrace.jsonio import dumps_compact, load_or_none, read_bytes, read_json, write_json, write_text_atomic
from optrace.mine.ladder import run_ladder
from optrace.mine.packetfile import judged_inputs, read_packet_file
from optrace.publish.worth import BUILDER_VERSION, COUNTERS, FORMULA, rank
from optrace.rows import PacketRow, VersionRow, episode_technique, manifest_packets, read_versions
from optrace.run.codedigest import package_digest
from optrace.secret import cache_secret, mac, verifies

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
MAX_MEMO_INPUT_BYTES = 1 << 30  # the memo key hashes versions.jsonl and packets whole; their own stages bound them
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


MEMO_NAME = ".stage-memo.json"  # beside records/: never staged, never listed
MEMO_FORMAT = 2  # 2: every share carries its MAC


def _bytes(path: Path) -> bytes:
    data, error = read_bytes(path, MAX_MEMO_INPUT_BYTES)
    return data if data is not None else f"\0{error}".encode()


def _digest(path: Path) -> bytes:
    return hashlib.sha256(_bytes(path)).digest()


@dataclass(frozen=True)
class TraceInputs:
    """One trace's files the stage reads (the rule's declared inputs)."""

    versions: Path  # ingest's versions.jsonl
    packets: Path  # the packets stage's file (optrace.mine.packetfile)
    drafts: Path | None  # distill's copies of the trace's records (optrace.distill.records)


@dataclass(frozen=True)
class StageInputs:
    records_root: Path  # where the validation summary's record paths (distilled/<slug>/<id>.json) resolve
    staging: Path  # the staging area written: records/ (copies, index.json) and the memo
    traces: dict[str, TraceInputs]

    @classmethod
    def under(cls, results: Path, slugs: list[str]) -> StageInputs:
        """The default layout of a results root."""
        traces = {s: TraceInputs(*_default_files(results, s)) for s in slugs}
        return cls(results, results / "staging", traces)

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


def trace_key(
    inputs: StageInputs, slug: str, passed: list[tuple], code: str, records: TraceRecords, judged: str | None
) -> str:
    """A digest of everything one trace's share of the staging area is made from: the package's code, the
    inputs validation judged, the trace's versions (its baseline and kept ratio), its packets (manifest and
    measurements) and, per passed record, the verdict's hash next to the hash of the bytes the file holds now."""
    h = hashlib.sha256(f"{MEMO_FORMAT}\0{code}\0{slug}\0{judged}\0".encode())
    h.update(_digest(inputs.traces[slug].versions))
    h.update(_digest(inputs.traces[slug].packets))
    for path, sha256, rid in passed:
        data, error = read_validated(records, slug, path)
        h.update(f"{path}\0{sha256}\0{rid}\0".encode() + (data if data is not None else f"\0{error}".encode()))
    return h.hexdigest()


def stage_trace(
    inputs: StageInputs,
    slug: str,
    passed: list[tuple],
    baseline_of: BaselineOf,
    records: TraceRecords,
    judged: str | None = None,
) -> dict:
    """One trace's share: the texts to write ({relpath: sha256}), its staged, index and failed entries."""
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
        text = store_json(scored)
        write_copy(inputs.staging / rel, text)
        share["files"][rel] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        share["entries"].append(index_text(index_entry(scored, rel)))
        share["staged"].append(staged_entry(slug, scored, rel))
    return share


def _not_a_file(path: Path) -> InputError:
    return InputError(path, "is not a regular file (a copy or index goes here): remove it and stage again")


def write_copy(target: Path, text: str) -> None:
    """Write a copy unless the file there already holds exactly its bytes. What is there is read as validate
    reads a record (no link followed, no FIFO opened): staging/ is a tree anyone with the results can edit,
    and a link or a FIFO there is replaced by the copy a fresh stage writes."""
    data, _ = read_bytes(target, MAX_RECORD_BYTES)
    if data == text.encode("utf-8"):
        return
    if target.is_dir() and not target.is_symlink():
        raise _not_a_file(target)
    write_text_atomic(target, text)


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


def still_staged(staging: Path, files: dict[str, str]) -> bool:
    """Every file of a remembered share is on disk with the bytes the memo says were written."""
    for rel, sha256 in files.items():
        data, _ = read_bytes(staging / rel, MAX_RECORD_BYTES)
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            return False
    return True


def load_memo(path: Path) -> dict[str, dict]:
    """slug -> its remembered share; {} for a missing or damaged memo (the stage then starts over)."""
    doc = load_or_none(path)
    traces = doc.get("traces") if isinstance(doc, dict) and doc.get("format") == MEMO_FORMAT else None
    return traces if isinstance(traces, dict) else {}


def _share_shaped(share: Any) -> TypeGuard[dict]:
    """A share as stage_trace makes it (the memo is a file anyone with the results tree can edit)."""
    return (
        isinstance(share, dict)
        and isinstance(share.get("key"), str)
        and isinstance(share.get("files"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in share["files"].items())
        and all(
            isinstance(share.get(k), list) and all(isinstance(x, dict) for x in share[k]) for k in ("staged", "failed")
        )
        and isinstance(share.get("entries"), list)
        and all(isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in share["entries"])
        and (share.get("failed_trace") is None or isinstance(share.get("failed_trace"), dict))
    )


def accounts_for(share: dict, slug: str, passed: list[tuple]) -> bool:
    """The share says what stage_trace says of these passed records: each is staged (one copy, one index
    entry, one staged line) or failed, once, and nothing else is. The memo's key covers the inputs, not the
    share, so a share edited under its own key (a failure dropped, a record added, a planted copy) is not one."""
    staged, failed = share["staged"], share["failed"]
    if share["failed_trace"] is not None:
        return not (staged or failed or share["files"] or share["entries"])
    staged_ids = [s.get("id") for s in staged]
    return (
        sorted(map(str, staged_ids + [f.get("id") for f in failed])) == sorted(rid for _, _, rid in passed)
        and all(s.get("trace") == slug for s in staged + failed)
        and {f.get("path") for f in failed} <= {path for path, _, _ in passed}
        and [s.get("path") for s in staged] == list(share["files"])
        and [rid for rid, _ in share["entries"]] == staged_ids
    )


def signed_part(slug: str, share: dict) -> tuple[bytes, bytes]:
    """What a share's MAC covers: its trace and everything it says but the MAC itself."""
    return slug.encode(), dumps_compact({k: v for k, v in share.items() if k != "mac"}).encode()


def remembered(
    memo: dict[str, dict], slug: str, key: str, staging: Path, passed: list[tuple], secret: bytes
) -> dict | None:
    share = memo.get(slug)
    if not (_share_shaped(share) and share["key"] == key and accounts_for(share, slug, passed)):
        return None
    if not verifies(secret, share.get("mac"), *signed_part(slug, share)):
        return None  # written by anyone but the stage
    return share if still_staged(staging, share["files"]) else None


def stage(inputs: StageInputs, summary_in: dict, baseline_of: BaselineOf) -> dict:
    """Stage every trace's passed records. A trace whose inputs (trace_key) and staged files are what the
    memo remembers is not restaged: an agent batch in one trace restages that trace alone."""
    staging, slugs = inputs.staging, list(inputs.traces)
    passed, failed = split_by_verdict(summary_in)
    traces = summary_in.get("traces")
    judged = {t.get("slug"): t.get("judged_inputs") for t in traces if isinstance(t, dict)} if isinstance(traces, list) else {}
    entries, summary, keep = [], {"staged": [], "failed": failed, "failed_traces": []}, set()
    memo, new_memo = load_memo(staging / MEMO_NAME), {}
    changed = memo.keys() != set(slugs)
    code = package_digest(PACKAGE_DIR)
    secret = cache_secret()
    for slug in slugs:
        mine = passed.get(slug, [])
        records = inputs.records(slug)
        key = trace_key(inputs, slug, mine, code, records, judged.get(slug))
        share = remembered(memo, slug, key, staging, mine, secret)
        if share is None:
            share = {**stage_trace(inputs, slug, mine, baseline_of, records, judged.get(slug)), "key": key}
            share["mac"] = mac(secret, *signed_part(slug, share))
            changed = True
        new_memo[slug] = share
        if share["failed_trace"] is not None:
            summary["failed_traces"].append(share["failed_trace"])
        failed.extend(share["failed"])
        keep.update(share["files"])
        entries.extend(share["entries"])
        summary["staged"].extend(share["staged"])
    records_dir = staging / "records"
    for stale in records_dir.rglob("*.json") if records_dir.exists() else []:
        rel = stale.relative_to(staging).as_posix()
        if rel != "records/index.json" and rel not in keep:
            if stale.is_dir() and not stale.is_symlink():
                raise _not_a_file(stale)
            stale.unlink()
    index = records_dir / "index.json"
    if index.is_dir() and not index.is_symlink():
        raise _not_a_file(index)
    write_text_atomic(index, index_json(entries))
    if changed:  # key order kept (no sort): a remembered index entry must be written as a computed one is
        memo_text = json.dumps({"format": MEMO_FORMAT, "traces": new_memo}, ensure_ascii=False, separators=(",", ":"))
        write_text_atomic(staging / MEMO_NAME, memo_text + "\n")
    summary["staged"].sort(key=lambda s: s["id"])
    summary["failed"].sort(key=lambda s: (s["trace"], s["path"]))
    return summary


def baseline_geomean(rows: list[VersionRow]) -> float | None:
    # the baseline is the first surviving version whatever the thresholds, so defaults do
    return next((s.geomean_us for s in run_ladder(rows) if s.outcome == "baseline"), None)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace stage", description=__doc__)
    ap.add_argument("--results", type=Path, help="a results root: the default layout of every path below")
    ap.add_argument("--records-root", type=Path, help="where the summary's record paths (distilled/...) resolve")
    ap.add_argument("--staging", type=Path, help="the staging area to write (records/, the memo)")
    ap.add_argument(
        "--trace",
        nargs=4,
        action="append",
        default=[],
        metavar=("SLUG", "VERSIONS", "PACKETS", "DRAFTS"),
        help="a trace to stage",
    )
    ap.add_argument("--validation", required=True, type=Path, help="validation-summary.json")
    ap.add_argument("--summary", required=True, type=Path, help="staged.json to write")
    ap.add_argument("slugs", nargs="*", help="with --results: the traces to stage (slugs under work/ and packets/)")
    args = ap.parse_args(argv)
    if args.results:
        inputs = StageInputs.under(args.results, args.slugs)
    elif args.records_root and args.staging and args.trace:
        traces = {slug: TraceInputs(Path(v), Path(p), Path(d)) for slug, v, p, d in args.trace}
        inputs = StageInputs(args.records_root, args.staging, traces)
    else:
        raise InputError(
            "optrace stage", "give --records-root, --staging and a --trace per trace (or --results and slugs)"
        )
    validation = read_json(args.validation)
    problem = summary_problem(validation)
    if problem is not None:
        raise InputError(args.validation, problem)
    try:
        summary = stage(inputs, validation, baseline_geomean)
    except KeyError as exc:
        raise InputError(inputs.staging, f"a record has no packet or a required field ({exc})") from None
    write_json(args.summary, summary)
    print(
        f"stage: {len(summary['staged'])} records staged, {len(summary['failed'])} failed validation (listed in {args.summary})"
    )
    for f in summary["failed_traces"]:
        print(f"  trace {f['trace']} failed at {f['stage']}: {f['reason']}")
    return 0
