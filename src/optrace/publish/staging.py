"""Staging (rule `stage`): scored, store-shaped copies of every record that passed validation, and the store's index.

Agent-written records in distilled/ are never touched: the stage writes derived copies under
staging/records/<type>/<vendor>/<arch>/<dsl>/<operator_family>/<id>.json with `worth.rank` computed
from the worth formula (never self-scored) and a full `worth.track` block. Records that failed a gate
are listed in staged.json, not staged. Copies of records that no longer pass are removed.

Stage copies exactly the bytes that were validated: it reads each passing record's file once, and
stages it only when the sha256 of those bytes is the one the validation summary names; a record
edited after validation (same size, mtime restored or not) is listed as failed (`changed-since-
validation`), never staged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from optrace.errors import InputError
from optrace.gates.store.index import expected_entry
from optrace.gates.store.model import RecordView
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes
from optrace.gates.trace.layout import store_path
from optrace.gates.validate import read_bytes
from optrace.jsonio import read_json, write_json, write_text_atomic
from optrace.mine.ladder import run_ladder
from optrace.publish.worth import BUILDER_VERSION, COUNTERS, FORMULA, rank
from optrace.rows import PacketRow, VersionRow, episode_technique, read_packet, read_versions

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


def validated_record(results: Path, path: str, sha256: str | None) -> dict | None:
    """The record whose bytes are the ones validated (by sha256), parsed from those very bytes; None
    when the file now holds other bytes or cannot be read."""
    data, _ = read_bytes(results / path, MAX_RECORD_BYTES)  # as validate read it: no link, no FIFO
    if data is None:
        return None
    if not isinstance(sha256, str) or hashlib.sha256(data).hexdigest() != sha256:
        return None
    record, error = parse_json_bytes(data)
    return record if error is None and isinstance(record, dict) else None


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


def stage(
    results: Path, slugs: list[str], summary_in: dict, baseline_of: Callable[[list[VersionRow]], float | None]
) -> dict:
    staging = results / "staging"
    passed, failed = split_by_verdict(summary_in)
    entries, summary, keep = [], {"staged": [], "failed": failed, "failed_traces": []}, set()
    for slug in slugs:
        rows = read_versions(results / "work" / slug / "versions.jsonl")
        manifest = read_json(results / "packets" / slug / "manifest.json")
        if isinstance(manifest.get("failed"), dict):  # optrace.run.pertrace's placeholder: listed, not staged
            f = manifest["failed"]
            summary["failed_traces"].append({"trace": slug, "stage": f.get("stage"), "reason": f.get("reason")})
            continue
        packets = {p["id"]: p["seg_id"] for p in manifest["packets"]}
        trace = trace_prior(rows)
        for path, sha256, rid in passed.get(slug, []):
            record = validated_record(results, path, sha256)
            if record is None:
                failed.append({"trace": slug, "path": path, "id": rid, "gates": [CHANGED]})
                continue
            packet = read_packet(results / "packets" / slug / f"{packets[record['id']]}.json")
            scored = score(record, record_prior(record, packet, trace, baseline_of(rows)))
            rel = store_path(scored["type"], scored["retrieval"]["scope"], scored["id"])
            if rel is None:  # validation binds the scope to the packet; a name that could climb is never written
                failed.append({"trace": slug, "path": path, "id": rid, "gates": ["layout"]})
                continue
            target = staging / rel
            text = store_json(scored)
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                write_text_atomic(target, text)
            keep.add(rel)
            entries.append(index_entry(scored, rel))
            summary["staged"].append(
                {
                    "trace": slug,
                    "id": scored["id"],
                    "path": rel,
                    "type": scored["type"],
                    "score": scored["worth"]["rank"]["score"],
                    "tier": scored["worth"]["rank"]["tier"],
                }
            )
    records_dir = staging / "records"
    for stale in records_dir.rglob("*.json") if records_dir.exists() else []:
        rel = stale.relative_to(staging).as_posix()
        if rel != "records/index.json" and rel not in keep:
            stale.unlink()
    entries.sort(key=lambda e: e["id"])
    index = {
        "schema": "clean-1.3",
        "generated_by": "optrace stage",
        "builder_version": BUILDER_VERSION,
        "count": len(entries),
        "records": entries,
    }
    write_text_atomic(records_dir / "index.json", json.dumps(index, ensure_ascii=False, indent=1) + "\n")
    summary["staged"].sort(key=lambda s: s["id"])
    summary["failed"].sort(key=lambda s: (s["trace"], s["path"]))
    return summary


def baseline_geomean(rows: list[VersionRow]) -> float | None:
    # the baseline is the first surviving version whatever the thresholds, so defaults do
    return next((s.geomean_us for s in run_ladder(rows) if s.outcome == "baseline"), None)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace stage", description=__doc__)
    ap.add_argument("--results", required=True, type=Path, help="the results root")
    ap.add_argument("--validation", required=True, type=Path, help="validation-summary.json")
    ap.add_argument("--summary", required=True, type=Path, help="staged.json to write")
    ap.add_argument("slugs", nargs="+", help="the traces to stage (slugs under work/ and packets/)")
    args = ap.parse_args(argv)
    try:
        summary = stage(args.results, args.slugs, read_json(args.validation), baseline_geomean)
    except KeyError as exc:
        raise InputError(args.results, f"a record has no packet or a required field ({exc})") from None
    write_json(args.summary, summary)
    print(
        f"stage: {len(summary['staged'])} records staged, {len(summary['failed'])} failed validation (listed in {args.summary})"
    )
    for f in summary["failed_traces"]:
        print(f"  trace {f['trace']} failed at {f['stage']}: {f['reason']}")
    return 0
