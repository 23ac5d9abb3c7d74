"""`optrace gate`: admit staged records into a live store, never weaker than the store's own checker.

    optrace gate match (--input REC | --all DIR) [--store ROOT] [--out FILE]
        validation first (a record that fails gets its errors, not candidates), then same-scope
        candidates, exact episode_key matches and a proposed action (JSON); exit 1 if a record fails
    optrace gate commit insert   --input REC [--store ROOT]
    optrace gate commit confirm  --input REC --target ID [--store ROOT]
    optrace gate commit conflict --input REC --target ID [--reason TEXT] [--store ROOT]
    optrace gate commit-all --proposals match.json [--store ROOT]
        each proposal in its own transaction; a refused one does not stop the others; exit 1 if any refused.
        A reviewer may edit a proposal's `action` and `target` (and add `conflict_reason`) first; a record
        file that changed since `match` is refused (its sha256 is in the proposal)
    optrace gate recover [--store ROOT]
        finish or undo what a killed commit left (every commit does this first anyway)

The store root defaults to `live_store` in config/config.yaml. Validation is the union of every
per-record store gate (schema, ids with the 5-segment rule, anonymization, raw-isolation, relations
against the store, self-contained, no-cross-reference, established-fact with both phrase lists), the
opt-trace-1.0 profile that every mined record satisfies, a safe store path and an episode_key that
says what the record says. Direction rule: no exact episode_key match -> insert; a match in the same
direction -> confirm; in the opposite direction (strategy against anti-strategy, or gains of opposite
sign; magnitude alone never conflicts) -> conflict; a match whose direction is unknown -> review.
`match --all` proposes in commit order (type, then id) and applies the rule within the batch too: a
record whose episode an earlier record of the batch inserts confirms or conflicts with that record.
The rank is always computed (never the caller's), feedback counters start at zero, and a confirm
counts once per (target, incoming) pair. The caller's input file is only ever read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from optrace import SCHEMAS
from optrace.admit.live_store import CONFLICTS_DIR, GateStore, Transaction, refreshed_entry
from optrace.admit.store_match import (
    Catalogue,
    entry_direction,
    match_confidence,
    opposite,
    record_direction,
    summary_of,
)
from optrace.contracts import Check, compile_file
from optrace.errors import InputError
from optrace.gates.store.model import GATES, GateContext, RecordView, obj
from optrace.gates.store.runner import check_view
from optrace.gates.store.schema import errors_of as schema_errors
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes, read_bytes, record_relpaths, store_path
from optrace.gates.trace.corpus_profile import narrowings
from optrace.gates.trace.model import PROFILE
from optrace.jsonio import read_json, write_text_atomic
from optrace.publish.staging import index_entry, scored_with, store_json
from optrace.publish.worth import COUNTERS
from optrace.scrub.leak_patterns import Denylist, denylist_pattern, read_denylist

MATCH_SCHEMA = "optrace-match-1"
COMMIT_ALL_SCHEMA = "optrace-commit-all-1"
CONFLICT_SCHEMA = SCHEMAS / "conflict.schema.json"
DEFAULT_CONFIG = Path("config/config.yaml")
MAX_CANDIDATES = 25  # listed per record; candidates_count is the full number
SHOWN_ERRORS = 20
# commit-all: records per lock hold and index write. Rewriting a 2-4 MB index after every one of 1000
# inserts is what made the reference slow; other writers wait at most one group.
GROUP = 50
TYPE_ORDER = {"strategy": 0, "anti-strategy": 1, "reference-kernel": 2}  # links point at earlier types
POSSIBLE_EXPLANATIONS = [
    "different shape regime or workload behind the two measurements",
    "different toolchain, driver or harness version",
    "one of the two measurements is within noise or was not comparable",
    "the two records describe different variants of the technique",
]


class Refused(Exception):
    """A commit the gate will not make; the store is untouched."""

    def __init__(self, messages: list[str]):
        self.messages = messages
        super().__init__("; ".join(messages))


# --- validation ------------------------------------------------------------------------------------


def destination(record: dict) -> str | None:
    """Where the record goes in the store, or None if a part of that path is unsafe."""
    return store_path(record.get("type"), obj(record, "retrieval", "scope"), record.get("id"))


def episode_key_problems(record: dict) -> list[str]:
    """The documented form <arch>|<dsl>|<operator_family>|<technique>|<level>, agreeing with the record."""
    key = record.get("episode_key")
    if not isinstance(key, str):
        return []  # the schema gate reports it
    parts = key.split("|")
    if len(parts) != 5 or not all(p.strip() for p in parts):
        return [f"episode_key: {key!r} is not <arch>|<dsl>|<operator_family>|<technique>|<level>"]
    scope = obj(record, "retrieval", "scope")
    want = {
        0: ("retrieval.scope.arch", scope.get("arch")),
        1: ("retrieval.scope.dsl", scope.get("dsl")),
        4: ("level", record.get("level")),
    }
    if scope.get("operator_family"):
        want[2] = ("retrieval.scope.operator_family", scope.get("operator_family"))
    return [
        f"episode_key: part {i + 1} is {parts[i]!r} but {name} is {value!r}"
        for i, (name, value) in sorted(want.items())
        if parts[i] != value
    ]


def admission_problems(record: Any, known_ids: Iterable[str], denylist: Denylist | None) -> tuple[str, list[str]]:
    """(store path, problems) of a record about to enter a store whose ids are `known_ids`."""
    if not isinstance(record, dict):
        return "records/incoming.json", schema_errors(record, "records/incoming.json")
    relpath = destination(record)
    problems = []
    if relpath is None:
        problems.append("type, scope (vendor, arch, dsl, operator_family) or id is not a safe store path segment")
        relpath = f"records/incoming/{record.get('id') if isinstance(record.get('id'), str) else 'record'}.json"
    view = RecordView(record, relpath)
    rid = record.get("id")  # any JSON value: a list or an object is not hashable
    own = {rid} if isinstance(rid, str) else set()
    verdicts = check_view(view, GateContext(known_ids=frozenset(known_ids) | own, denylist=denylist))
    problems += [m for g in GATES for m in verdicts.get(g, ())]
    problems += [
        f"{relpath}: {loc}: {msg} (opt-trace-1.0 patch {pid})"
        for pid, errors in narrowings(str(PROFILE))
        for loc, msg in errors(record)
    ]
    problems += [f"{relpath}: {m}" for m in episode_key_problems(record)]
    return relpath, problems


@cache
def conflict_errors() -> Check:
    return compile_file(CONFLICT_SCHEMA)


# --- direction and matching ------------------------------------------------------------------------


def direction_rule(mine: str, holders: list[tuple[str, str]], holding: str = "the record holding this episode") -> dict:
    """Confirm, conflict or review against the records (id, direction) that hold the record's episode."""
    against = [h for h in holders if opposite(mine, h[1])]
    along = [h for h in holders if mine != "unknown" and h[1] == mine]
    if against:
        (target, theirs), action, why = against[0], "conflict", f"{holding} points the opposite way"
    elif along:
        (target, theirs), action, why = along[0], "confirm", f"{holding} points the same way"
    else:
        (target, theirs), action, why = holders[0], "review", f"{holding} or this record has no known direction"
    return {"action": action, "target": target, "match_confidence": 1.0, "reason": f"{why} ({mine} vs {theirs})"}


def propose(record: dict, catalogue: Catalogue) -> dict:
    """The direction rule over exact episode_key matches."""
    rid = record.get("id")
    if rid in catalogue.entries:
        return {
            "action": "present",
            "target": rid,
            "match_confidence": 1.0,
            "reason": "a record with this id is already in the store",
        }
    matches = [catalogue.entries[m] for m in catalogue.episode_matches(record)]
    if not matches:
        return {"action": "insert", "target": None, "match_confidence": None, "reason": "no record holds this episode"}
    return direction_rule(record_direction(record), [(m["id"], entry_direction(m)) for m in matches])


def evidence_commit(record: dict) -> str | None:
    """The trace commit a mined record's evidence is (evidence.raw.git_commit, bound to the trace by the
    provenance gate); None for a curated record."""
    commit = obj(record, "evidence", "raw").get("git_commit")
    return commit if isinstance(commit, str) and commit else None


def within_batch(proposals: list[dict]) -> None:
    """In commit order, a record whose episode an EARLIER proposal of the batch inserts is proposed as a
    confirm or conflict of that record (by the same direction rule as against the store), so commit-all
    inserts the first and confirms or conflicts the rest: two traces that found one lever are one
    record confirmed once, not two records of one episode (which insert refuses). A record whose evidence
    is a commit an earlier record of the episode already cites is the same run again (a trace listed
    twice, a copy under another name): it goes to review, never counted as an independent confirmation."""
    first: dict[str, tuple[str, str]] = {}  # episode_key -> (id, direction) of the batch's insert
    cited: dict[tuple[str, str], str] = {}  # (episode_key, commit) -> the id that cited it first
    for p in proposals:
        key, commit = p.get("episode_key"), p.get("evidence_commit")
        if key is not None and commit is not None:
            if (key, commit) in cited and cited[key, commit] != p["id"]:
                p.update(
                    action="review",
                    target=cited[key, commit],
                    match_confidence=1.0,
                    reason=f"the same evidence (commit {commit[:12]}) as {cited[key, commit]}: one run counted twice "
                    "is not an independent confirmation",
                )
                continue
            cited.setdefault((key, commit), p["id"])
        if p["action"] != "insert":
            continue
        if p["episode_key"] not in first:
            first[p["episode_key"]] = (p["id"], p["direction"])
            continue
        if first[p["episode_key"]][0] == p["id"]:
            continue  # the same id twice: insert refuses the second (a record cannot confirm itself)
        p.update(direction_rule(p["direction"], [first[p["episode_key"]]], "the record of this batch inserted first"))
        p["episode_key_matches"] = [first[p["episode_key"]][0]]


def match_one(
    path: str,
    data: bytes | None,
    error: str | None,
    catalogue: Catalogue,
    known_ids: Iterable[str],
    denylist: Denylist | None,
    max_candidates: int,
) -> dict:
    digest = hashlib.sha256(data).hexdigest() if data is not None else None
    record = None
    if data is not None:
        record, error = parse_json_bytes(data)
    out = {"input": path, "sha256": digest}
    if error is not None:
        return {**out, "id": None, "valid": False, "errors": [f"{path}: {error}"], "action": "refuse"}
    _, problems = admission_problems(record, known_ids, denylist)
    rid = record.get("id") if isinstance(record, dict) else None
    out.update(id=rid if isinstance(rid, str) else None)
    if problems or not isinstance(record, dict):  # a record that is not an object has problems
        return {
            **out,
            "valid": False,
            "errors": problems[:SHOWN_ERRORS],
            "error_count": len(problems),
            "action": "refuse",
        }
    candidates = catalogue.candidates(record)
    shown = candidates if max_candidates <= 0 else candidates[:max_candidates]
    return {
        **out,
        "valid": True,
        "type": record["type"],
        "episode_key": record["episode_key"],
        "direction": record_direction(record),
        "evidence_commit": evidence_commit(record),
        **propose(record, catalogue),
        "episode_key_matches": catalogue.episode_matches(record),
        "candidates_count": len(candidates),
        "candidates": [summary_of(e) for e in shown],
    }


def read_input(path: Path) -> tuple[bytes | None, str | None]:
    return read_bytes(path, MAX_RECORD_BYTES)  # capped, and a symbolic link is not followed


def staged_files(directory: Path) -> list[Path]:
    """Every record of a staging area (its records/ tree, index left out) or every *.json below DIR."""
    if (directory / "records").is_dir():
        return [directory / rel for rel in record_relpaths(directory)]
    if not directory.is_dir():
        raise InputError(directory, "not a directory")
    return sorted(p for p in directory.rglob("*.json") if not p.name.startswith("."))


def match_files(store: GateStore, paths: list[Path], max_candidates: int, shown_path: Callable[[Path], str]) -> dict:
    index = store.index()
    catalogue = Catalogue(index.entries)
    denylist = denylist_pattern(read_denylist())
    loaded = [(p, *read_input(p)) for p in paths]
    batch_ids = set()
    for _, data, _ in loaded:  # records of one batch may link to each other: they go in together
        rec = parse_json_bytes(data)[0] if data is not None else None
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            batch_ids.add(rec["id"])
    known = frozenset(index.entries) | batch_ids
    proposals = [
        match_one(shown_path(p), data, error, catalogue, known, denylist, max_candidates) for p, data, error in loaded
    ]
    proposals.sort(key=lambda r: (TYPE_ORDER.get(r.get("type", ""), 9), r.get("id") or "", r["input"]))
    within_batch(proposals)
    counts = Counter(r["action"] for r in proposals)
    return {
        "schema": MATCH_SCHEMA,
        "store": str(store.root),
        "store_records": len(index.entries),
        "counts": dict(sorted(counts.items())),
        "proposals": proposals,
    }


# --- commits ---------------------------------------------------------------------------------------


def full_track(track: Any) -> dict:
    """A schema-complete worth.track: every counter (0 when missing), a prior and the confirm keys."""
    track = track if isinstance(track, dict) else {}
    counters = obj(track, "counters")
    kept = {k: v for k, v in counters.items() if k in ("first_seen_ts", "last_used_ts")}
    counters = {
        **{k: counters.get(k) if type(counters.get(k)) is int and counters[k] >= 0 else 0 for k in COUNTERS},
        **kept,
    }
    keys = track.get("confirm_keys")
    return {
        "counters": counters,
        "prior": obj(track, "prior"),
        "confirm_keys": [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else [],
    }


def admitted_prior(record: dict) -> dict:
    """The staged prior, with the step gain re-derived from the record's own gain (never taken on trust)."""
    prior = {k: v for k, v in obj(record, "worth", "track", "prior").items() if k != "step_gain_pct"}
    gain = obj(record, "worth", "gain")
    if record.get("type") == "strategy" and gain.get("basis") == "measured" and type(gain.get("pct")) in (int, float):
        prior["step_gain_pct"] = gain["pct"]
    return prior


def stamped(record: dict) -> dict:
    """What the store will hold: the computed rank over zero feedback (a caller's rank is never kept)."""
    track = {"counters": {k: 0 for k in COUNTERS}, "prior": admitted_prior(record), "confirm_keys": []}
    return scored_with(record, track)


def validated(txn: Transaction, record: Any, denylist: Denylist | None) -> tuple[str, dict]:
    relpath, problems = admission_problems(record, txn.index.entries.keys(), denylist)
    if problems:
        raise Refused(problems)
    return relpath, record


def commit_insert(txn: Transaction, record: Any, denylist: Denylist | None) -> dict:
    relpath, record = validated(txn, record, denylist)
    rid = record["id"]
    if rid in txn.index.entries:
        raise Refused([f"id {rid!r} already exists at {txn.index.path_of(rid)}"])
    if (txn.root / relpath).exists():
        raise Refused([f"{relpath} already exists although the index does not list it; run optrace check-store"])
    holders = txn.index.holders(record["episode_key"])
    if holders:
        raise Refused(
            [
                f"episode_key {record['episode_key']!r} is held by {holders[0]!r}: "
                "confirm it or file a conflict (optrace gate match proposes which)"
            ]
        )
    final = stamped(record)
    errors = schema_errors(final, relpath)
    if errors:  # cannot happen for a record that passed; never write one that did not
        raise Refused(errors)
    txn.begin("insert", rid, relpath)
    txn.write_record(relpath, store_json(final))
    txn.stage_entry(index_entry(final, relpath))
    rank = final["worth"]["rank"]
    return {"outcome": "inserted", "id": rid, "path": relpath, "score": rank["score"], "tier": rank["tier"]}


def load_target(txn: Transaction, target: str) -> tuple[str, dict, dict]:
    entry = txn.index.entries.get(target)
    if entry is None:
        raise Refused([f"target {target!r} is not in the store"])
    relpath = txn.index.path_of(target)
    data, error = (None, "the index gives it no path") if relpath is None else read_input(txn.root / relpath)
    record = None
    if data is not None:
        record, error = parse_json_bytes(data)
    if error is not None or relpath is None or not isinstance(record, dict) or record.get("id") != target:
        raise Refused([f"target {target!r}: {relpath}: {error or 'not the record the index names'}"])
    return relpath, record, entry


def commit_confirm(txn: Transaction, record: Any, target: str, denylist: Denylist | None) -> dict:
    _, record = validated(txn, record, denylist)
    if record["id"] == target:
        raise Refused([f"{target!r} cannot confirm itself"])
    relpath, existing, entry = load_target(txn, target)
    mine, theirs = record_direction(record), record_direction(existing)
    if opposite(mine, theirs):
        raise Refused([f"{record['id']!r} points {mine} and {target!r} {theirs}: that is a conflict, not a confirm"])
    commit = evidence_commit(record)
    if commit is not None and commit == evidence_commit(existing):
        raise Refused(
            [
                f"{record['id']!r} is evidence from commit {commit[:12]}, which {target!r} was mined from: the same "
                "run again is not an independent confirmation"
            ]
        )
    track = full_track(obj(existing, "worth").get("track"))
    key = f"{target}:{record['id']}"
    if key in track["confirm_keys"]:
        return {
            "outcome": "already-counted",
            "id": record["id"],
            "target": target,
            "verified_effective": track["counters"]["verified_effective"],
        }
    track["counters"]["verified_effective"] += 1
    track["confirm_keys"].append(key)
    updated = scored_with(existing, track)
    problems = [
        m
        for msgs in check_view(
            RecordView(updated, relpath), GateContext(known_ids=frozenset(txn.index.entries))
        ).values()
        for m in msgs
    ]
    if problems:
        raise Refused([f"the confirmed target would fail the store's gates: {problems[0]}"] + problems[1:SHOWN_ERRORS])
    txn.begin("confirm", target, relpath)
    txn.write_record(relpath, store_json(updated))
    txn.stage_entry(refreshed_entry(entry, updated))
    rank = updated["worth"]["rank"]
    return {
        "outcome": "confirmed",
        "id": record["id"],
        "target": target,
        "verified_effective": track["counters"]["verified_effective"],
        "score": rank["score"],
        "tier": rank["tier"],
    }


def _problem_field(record: dict, key: str) -> Any:
    value = obj(record, "payload", "problem").get(key)
    return value if value is None or isinstance(value, str) else json.dumps(value)


def conflict_document(record: dict, existing: dict, reason: str | None, now: datetime) -> dict:
    def side(rec: dict) -> str:
        pct = obj(rec, "worth", "gain").get("pct")
        return f"{rec.get('type')} with gain {pct if pct is not None else 'unstated'}% ({record_direction(rec)})"

    confidence = match_confidence(record.get("episode_key"), existing.get("episode_key"))
    same = record.get("episode_key") == existing.get("episode_key")
    return {
        "created": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "existing_record_id": existing["id"],
        "incoming_record": record,
        "match_confidence": confidence,
        "conflict_reason": reason or f"opposite direction: existing {side(existing)}, incoming {side(record)}",
        "context": {
            "existing_shape_contract": obj(existing, "payload", "problem").get("shape_contract"),
            "incoming_shape_contract": obj(record, "payload", "problem").get("shape_contract"),
            "existing_bottleneck": _problem_field(existing, "bottleneck"),
            "incoming_bottleneck": _problem_field(record, "bottleneck"),
            "existing_observed_symptom": _problem_field(existing, "observed_symptom"),
            "incoming_observed_symptom": _problem_field(record, "observed_symptom"),
            "match_explanation": "the same episode_key"
            if same
            else f"{round(confidence * 5)} of the 5 episode_key parts agree",
            "possible_explanations": POSSIBLE_EXPLANATIONS,
        },
        "resolution": None,
    }


def commit_conflict(
    txn: Transaction, record: Any, target: str, denylist: Denylist | None, reason: str | None = None
) -> dict:
    _, record = validated(txn, record, denylist)
    _, existing, _ = load_target(txn, target)
    doc = conflict_document(record, existing, reason, datetime.now(UTC))
    errors = conflict_errors()(doc)
    if errors:
        raise Refused([f"conflict file would not satisfy {CONFLICT_SCHEMA.name}: {loc}: {msg}" for loc, msg in errors])
    stem = f"{doc['created'].replace('-', '').replace(':', '')}_{record['id']}"
    path = txn.write_exclusive(txn.root / CONFLICTS_DIR, stem, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    return {
        "outcome": "conflict-filed",
        "id": record["id"],
        "target": target,
        "path": path.relative_to(txn.root).as_posix(),
        "match_confidence": doc["match_confidence"],
    }


def commit_one(
    txn: Transaction, action: str, data: bytes, target: str | None, denylist: Denylist | None, reason: str | None = None
) -> dict:
    """One record's transaction inside a held lock; a refusal is an outcome (nothing of it was written)."""
    record, error = parse_json_bytes(data)
    try:
        if error is not None:
            raise Refused([error])
        if action == "insert":
            return commit_insert(txn, record, denylist)
        if not target:
            raise Refused([f"{action} needs --target ID"])
        if action == "confirm":
            return commit_confirm(txn, record, target, denylist)
        return commit_conflict(txn, record, target, denylist, reason)
    except Refused as exc:
        rid = record.get("id") if isinstance(record, dict) else None
        return {"outcome": "refused", "id": rid, "target": target, "messages": exc.messages[:SHOWN_ERRORS]}


def writing(store: GateStore) -> AbstractContextManager[Transaction]:
    """A transaction whose I/O failure is one clear line (its staged steps are undone before)."""

    @contextmanager
    def guarded() -> Iterator[Transaction]:
        try:
            with store.transaction() as txn:
                yield txn
        except OSError as exc:
            raise InputError(
                exc.filename or store.root,
                f"cannot be written ({exc.strerror}); nothing of this transaction was committed",
            ) from None

    return guarded()


def commit_all(store: GateStore, proposals_path: Path) -> dict:
    """Every proposal, in order. Each record is its own transaction (validated against the store as the
    records before it left it, refused alone); GROUP of them share one lock hold and one index write."""
    data = read_json(proposals_path)
    if not isinstance(data, dict) or data.get("schema") != MATCH_SCHEMA or not isinstance(data.get("proposals"), list):
        raise InputError(proposals_path, f"is not a proposal file ({MATCH_SCHEMA})")
    denylist = denylist_pattern(read_denylist())
    proposals, outcomes = data["proposals"], []
    for start in range(0, len(proposals), GROUP):
        with writing(store) as txn:
            for p in proposals[start : start + GROUP]:
                if not isinstance(p, dict) or not isinstance(p.get("input"), str):
                    outcomes.append({"outcome": "refused", "messages": ["a proposal without an input path"]})
                    continue
                outcomes.append({"input": p["input"], **execute(txn, p, proposals_path.parent, denylist)})
    counts = Counter(o["outcome"] for o in outcomes)
    return {
        "schema": COMMIT_ALL_SCHEMA,
        "store": str(store.root),
        "counts": dict(sorted(counts.items())),
        "outcomes": outcomes,
    }


def execute(txn: Transaction, proposal: dict, base: Path, denylist: Denylist | None) -> dict:
    action, target, rid = proposal.get("action"), proposal.get("target"), proposal.get("id")
    if action == "present":
        return {"outcome": "skipped", "id": rid, "messages": ["already in the store"]}
    if action == "review":
        return {
            "outcome": "skipped",
            "id": rid,
            "target": target,
            "messages": ["needs a reviewer's decision: set action to confirm or conflict"],
        }
    if action not in ("insert", "confirm", "conflict"):
        return {
            "outcome": "refused",
            "id": rid,
            "messages": [
                f"action {action!r}: {'; '.join(proposal.get('errors') or [])}"
                if action == "refuse"
                else f"unknown action {action!r}"
            ],
        }
    path = Path(proposal["input"])
    data, error = read_input(path if path.is_absolute() else base / path)
    if data is None:
        return {"outcome": "refused", "id": rid, "messages": [f"{path}: {error}"]}
    if hashlib.sha256(data).hexdigest() != proposal.get("sha256"):
        return {
            "outcome": "refused",
            "id": rid,
            "messages": [f"{path}: changed since the proposal was made; match again"],
        }
    return commit_one(txn, action, data, target, denylist, proposal.get("conflict_reason"))


# --- what the store holds, for recon and the staging README -------------------------------------------


def store_root_of(index_path: Path) -> Path:
    """The store root of a `<root>/records/index.json` path (how the workflow passes the live store)."""
    return Path(index_path).parent.parent


def readme_section(staging: Path, index_path: Path) -> str:
    """Markdown for the staging README: what each staged record would do in the live store."""
    report = match_files(GateStore(store_root_of(index_path)), staged_files(staging), 0, lambda p: p.name)
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items()) or "no staged record"
    out = [
        "## Admission into the live store",
        "",
        f"Against {report['store_records']} live records: {counts}. A target is a live record, or a staged "
        "record of this batch that commits first (an episode several traces found is inserted once and "
        "confirmed or contradicted by the others). Proposals only: `snakemake promote` writes "
        "them to reports/match.json and `optrace gate commit-all --proposals reports/match.json` executes them.",
        "",
        "| record | type | proposed | target | why |",
        "|---|---|---|---|---|",
    ]
    for p in report["proposals"]:
        why = p.get("reason") or "; ".join(p.get("errors", [])[:1])
        out.append(
            f"| `{p['input']}` | {p.get('type') or '—'} | {p['action']} | "
            f"{'`' + p['target'] + '`' if p.get('target') else '—'} | {why.replace('|', '/')} |"
        )
    return "\n".join(out) + "\n"


# --- CLI -------------------------------------------------------------------------------------------


def store_root(arg: str | None, config: Path) -> Path:
    if arg:
        return Path(arg)
    if config.is_file():
        import yaml

        try:
            live = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("live_store")
        except yaml.YAMLError as exc:
            raise InputError(config, f"not valid YAML ({exc})") from None
        if live:
            return Path(live)
    raise InputError(config, "no live store: give --store ROOT or set live_store in the config")


def emit(obj_: Any, out: Path | None) -> None:
    text = json.dumps(obj_, ensure_ascii=False, indent=1) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(out, text)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="optrace gate", description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", help="live store root (holds records/index.json); default: config live_store")
    common.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="config file read for live_store")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("match", parents=[common], help="propose insert / confirm / conflict")
    which = m.add_mutually_exclusive_group(required=True)
    which.add_argument("--input", type=Path, help="one record")
    which.add_argument("--all", type=Path, metavar="DIR", help="every record of a staging area (or below DIR)")
    m.add_argument("--out", type=Path, help="write the JSON here (paths inside are relative to it)")
    m.add_argument("--max-candidates", type=int, default=MAX_CANDIDATES, help="listed per record; 0 = all")
    c = sub.add_parser("commit", parents=[common], help="insert, confirm or conflict one record")
    c.add_argument(
        "action",
        choices=("insert", "confirm", "conflict"),
        help="insert a new record, confirm --target, or file a conflict with --target",
    )
    c.add_argument("--input", type=Path, required=True, help="the record to commit (never rewritten)")
    c.add_argument("--target", help="the store record confirmed or contradicted")
    c.add_argument("--reason", help="conflict_reason (default: the two directions)")
    a = sub.add_parser("commit-all", parents=[common], help="execute a reviewed proposal file")
    a.add_argument("--proposals", type=Path, required=True, help="a match.json (from `gate match --all`), reviewed")
    a.add_argument("--out", type=Path, help="write the outcomes here instead of stdout")
    sub.add_parser("recover", parents=[common], help="finish or undo a killed commit")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    store = GateStore(store_root(args.store, args.config))
    if args.command == "match":
        if args.input is not None:
            paths = [args.input]
        else:
            paths = staged_files(args.all)
        base = args.out.parent.resolve() if args.out else None
        shown = (lambda p: os.path.relpath(p.resolve(), base)) if base else (lambda p: str(p.resolve()))
        report = match_files(store, paths, args.max_candidates, shown)
        emit(report if args.all is not None else report["proposals"][0], args.out)
        return 1 if report["counts"].get("refuse") else 0
    if args.command == "commit":
        data, error = read_input(args.input)
        if data is None:
            raise InputError(args.input, str(error))
        with writing(store) as txn:
            outcome = commit_one(txn, args.action, data, args.target, denylist_pattern(read_denylist()), args.reason)
        print(json.dumps(outcome, ensure_ascii=False))
        if outcome["outcome"] == "refused":
            print(f"REFUSED: {args.input}: {outcome['messages'][0]}", file=sys.stderr)
            return 1
        return 0
    if args.command == "commit-all":
        report = commit_all(store, args.proposals)
        emit(report, args.out)
        return 1 if report["counts"].get("refused") else 0
    with writing(store) as txn:
        print("\n".join(f"recover: {d}" for d in txn.done) or "recover: nothing to do")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
