"""`optrace gate commit` and `commit-all`: one record's transaction into a live store.

Every commit validates first (`admissibility`). insert: a new id of an episode no record holds, with
the computed rank (never the caller's) over zero feedback. confirm: a record of the target's episode
pointing the same way, from another run (`run_tokens`), counted once per (target, incoming) pair.
conflict: a record of the target's episode pointing the opposite way; a conflict between records
that point the same way or belong to different episodes is refused unless forced with a reason, which
the conflict file records. The caller's input file is only ever read.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from optrace import SCHEMAS
from optrace.admit.admissibility import admission_problems, confirm_key, key_pair, key_tokens, run_tokens
from optrace.admit.live_store import CONFLICTS_DIR, GateStore, Transaction, refreshed_entry
from optrace.admit.proposals import MATCH_SCHEMA, SHOWN_ERRORS, read_input
from optrace.admit.store_match import match_confidence, opposite, record_direction
from optrace.contracts import Check, compile_file
from optrace.errors import InputError
from optrace.gates.store.model import GateContext, RecordView, obj
from optrace.gates.store.runner import check_view
from optrace.gates.store.schema import errors_of as schema_errors
from optrace.gates.store.store import parse_json_bytes
from optrace.jsonio import read_json
from optrace.publish.staging import index_entry, scored_with, store_json
from optrace.publish.worth import COUNTERS
from optrace.scrub.leak_patterns import Denylist, denylist_pattern, read_denylist

COMMIT_ALL_SCHEMA = "optrace-commit-all-1"
CONFLICT_SCHEMA = SCHEMAS / "conflict.schema.json"
# commit-all: records per lock hold and index write. Rewriting a 2-4 MB index after every one of 1000
# inserts is what made the reference slow; other writers wait at most one group.
GROUP = 50
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


def same_run_refusal(record: dict, existing: dict, track: dict) -> str | None:
    """Why `record` is the same run as the target or as a run that already confirmed it, or None."""
    mine, target = run_tokens(record), existing["id"]
    if shared := mine & run_tokens(existing):
        what = "measurements" if any(t.startswith("m") for t in shared) else "evidence commit"
        return (
            f"{record['id']!r} has the same {what} as {target!r}: the same run again is not an independent confirmation"
        )
    for key in track["confirm_keys"]:
        if mine & key_tokens(key):
            confirmer = key_pair(key).partition(":")[2]
            return (
                f"{record['id']!r} was measured in the same run as {confirmer!r}, which already confirmed "
                f"{target!r}: one run counts once"
            )
    return None


def commit_confirm(txn: Transaction, record: Any, target: str, denylist: Denylist | None) -> dict:
    _, record = validated(txn, record, denylist)
    if record["id"] == target:
        raise Refused([f"{target!r} cannot confirm itself"])
    relpath, existing, entry = load_target(txn, target)
    mine, theirs = record_direction(record), record_direction(existing)
    if opposite(mine, theirs):
        raise Refused([f"{record['id']!r} points {mine} and {target!r} {theirs}: that is a conflict, not a confirm"])
    track = full_track(obj(existing, "worth").get("track"))
    pair = f"{target}:{record['id']}"
    if any(key_pair(k) == pair for k in track["confirm_keys"]):
        return {
            "outcome": "already-counted",
            "id": record["id"],
            "target": target,
            "verified_effective": track["counters"]["verified_effective"],
        }
    if (why := same_run_refusal(record, existing, track)) is not None:
        raise Refused([why])
    track["counters"]["verified_effective"] += 1
    track["confirm_keys"].append(confirm_key(target, record["id"], run_tokens(record)))
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


def claim_text(record: dict) -> str:
    """`the existing strategy gains +15.38% (positive)`-style words for one side of a conflict."""
    pct = obj(record, "worth", "gain").get("pct")
    if type(pct) in (int, float) and pct:
        effect = f"gains {pct:+.2f}%" if pct > 0 else f"loses {-pct:.2f}%"
    elif record.get("type") == "anti-strategy":
        effect = "records a failed attempt"
    else:
        effect = "states no gain"
    return f"{record.get('type')} {record.get('id')!r} {effect} ({record_direction(record)})"


def conflict_problems(record: dict, existing: dict) -> list[str]:
    """Why these two records are not a conflict: one points the same way, or they are not one episode."""
    out = []
    mine, theirs = record_direction(record), record_direction(existing)
    if not opposite(mine, theirs):
        how = "the same way" if mine == theirs and mine != "unknown" else "no known opposite ways"
        out.append(
            f"the incoming {claim_text(record)} and the existing {claim_text(existing)} point {how}: "
            "not a contradiction"
        )
    if record.get("episode_key") != existing.get("episode_key"):
        out.append(
            f"the incoming episode {record.get('episode_key')!r} is not the existing {existing.get('episode_key')!r} "
            f"(match confidence {match_confidence(record.get('episode_key'), existing.get('episode_key'))}): "
            "records of different episodes do not contradict each other"
        )
    return out


def conflict_document(record: dict, existing: dict, reason: str | None, now: datetime) -> dict:
    confidence = match_confidence(record.get("episode_key"), existing.get("episode_key"))
    same = record.get("episode_key") == existing.get("episode_key")
    default = f"opposite directions: the existing {claim_text(existing)}, the incoming {claim_text(record)}"
    return {
        "created": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "existing_record_id": existing["id"],
        "incoming_record": record,
        "match_confidence": confidence,
        "conflict_reason": reason or default,
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


@cache
def conflict_errors() -> Check:
    return compile_file(CONFLICT_SCHEMA)


def commit_conflict(
    txn: Transaction,
    record: Any,
    target: str,
    denylist: Denylist | None,
    reason: str | None = None,
    force: bool = False,
) -> dict:
    _, record = validated(txn, record, denylist)
    if record["id"] == target:
        raise Refused([f"{target!r} cannot conflict with itself"])
    _, existing, _ = load_target(txn, target)
    problems = conflict_problems(record, existing)
    if problems and not force:
        raise Refused(problems + ["file it anyway only with --force and a --reason saying why"])
    if problems:
        given = (reason or "").strip()
        if not given:
            raise Refused(problems + ["--force needs a --reason: the conflict file records why it was filed"])
        reason = f"filed by force: {given} (overriding: {'; '.join(problems)})"
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
        **({"forced": True} if problems else {}),
    }


def commit_one(
    txn: Transaction,
    action: str,
    data: bytes,
    target: str | None,
    denylist: Denylist | None,
    reason: str | None = None,
    force: bool = False,
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
        return commit_conflict(txn, record, target, denylist, reason, force)
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
            "messages": [f"needs a reviewer's decision: set action to confirm or conflict ({proposal.get('reason')})"],
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
    force = proposal.get("force") is True
    return commit_one(txn, action, data, target, denylist, proposal.get("conflict_reason"), force)
