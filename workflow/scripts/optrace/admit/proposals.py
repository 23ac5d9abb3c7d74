"""`optrace gate match`: what each record would do in a live store (insert, confirm, conflict, review).

Validation first: a record that fails gets its errors, not candidates. Direction rule: no exact
episode_key match -> insert; a match in the same direction -> confirm; in the opposite direction
(strategy against anti-strategy, or gains of opposite sign; magnitude alone never conflicts) ->
conflict; a match where either direction is unknown -> review. A record measured in the same run as
the record it would confirm (`admissibility.run_tokens`) -> review: one run is not an independent
confirmation. A batch is proposed in commit order (type, then id) and the rule applies within it too.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from optrace.admit.admissibility import admission_problems, evidence_commit, key_pair, key_tokens, run_tokens
from optrace.admit.live_store import GateStore
from optrace.admit.store_match import Catalogue, entry_direction, opposite, record_direction, summary_of
from optrace.errors import InputError
from optrace.gates.store.model import obj
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes, record_relpaths
from optrace.jsonio import read_bytes
from optrace.publish.storetree import read_store_file
from optrace.scrub.leak_patterns import Denylist, denylist_pattern, read_denylist

MATCH_SCHEMA = "optrace-match-1"
MAX_CANDIDATES = 25  # listed per record; candidates_count is the full number
SHOWN_ERRORS = 20
TYPE_ORDER = {"strategy": 0, "anti-strategy": 1, "reference-kernel": 2}  # links point at earlier types


def direction_rule(mine: str, holders: list[tuple[str, str]], holding: str = "the record holding this episode") -> dict:
    """Confirm, conflict or review against the records (id, direction) that hold the record's episode.
    Two unknown directions are not "the same way": nothing says either improved anything."""
    against = [h for h in holders if opposite(mine, h[1])]
    along = [h for h in holders if mine != "unknown" and h[1] == mine]
    if against:
        (target, theirs), action, why = against[0], "conflict", f"{holding} points the opposite way"
    elif along:
        (target, theirs), action, why = along[0], "confirm", f"{holding} points the same way"
    else:
        (target, theirs), action, why = holders[0], "review", f"{holding} or this record has no known direction"
    return {"action": action, "target": target, "match_confidence": 1.0, "reason": f"{why} ({mine} vs {theirs})"}


def same_run(target: str, shared: set[str]) -> dict:
    kinds = sorted({"the same measurements" if t.startswith("m") else f"the same commit {t[1:13]}" for t in shared})
    return {
        "action": "review",
        "target": target,
        "match_confidence": 1.0,
        "reason": f"{' and '.join(kinds)} as {target}: one run counted twice is not an independent confirmation",
    }


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


def within_batch(proposals: list[dict]) -> None:
    """In commit order, a record whose episode an EARLIER proposal of the batch inserts is proposed as a
    confirm or conflict of that record (by the same direction rule as against the store), so commit-all
    inserts the first and confirms or conflicts the rest: two traces that found one lever are one
    record confirmed once, not two records of one episode (which insert refuses). A record of the same
    run as an earlier record of its episode (a trace listed twice, a copy under another name, its
    commits rewritten) goes to review, never counted as an independent confirmation."""
    first: dict[str, tuple[str, str]] = {}  # episode_key -> (id, direction) of the batch's insert
    seen: dict[tuple[str, str], str] = {}  # (episode_key, run token) -> the id that had it first
    for p in proposals:
        key, tokens = p.get("episode_key"), set(p.get("run_tokens") or ())
        if key is not None:
            earlier = {t: seen[key, t] for t in tokens if (key, t) in seen and seen[key, t] != p["id"]}
            if earlier:
                target = sorted(earlier.values())[0]
                p.update(same_run(target, {t for t, i in earlier.items() if i == target}))
                continue
            for t in tokens:
                seen.setdefault((key, t), p["id"])
        if p["action"] != "insert":
            continue
        if p["episode_key"] not in first:
            first[p["episode_key"]] = (p["id"], p["direction"])
            continue
        if first[p["episode_key"]][0] == p["id"]:
            continue  # the same id twice: insert refuses the second (a record cannot confirm itself)
        p.update(direction_rule(p["direction"], [first[p["episode_key"]]], "the record of this batch inserted first"))
        p["episode_key_matches"] = [first[p["episode_key"]][0]]


def target_tokens(store: GateStore, target: str, entries: dict[str, dict], incoming: str) -> set[str]:
    """The run tokens of a store record and of every other run that confirmed it (its confirm keys; the
    incoming record's own key is its confirmation already counted, which commit reports as such)."""
    path = entries.get(target, {}).get("path")
    data = read_input(store.root / path)[0] if isinstance(path, str) else None
    record = parse_json_bytes(data)[0] if data is not None else None
    if not isinstance(record, dict):
        return set()  # commit refuses an unreadable target itself
    keys = obj(record, "worth", "track").get("confirm_keys")
    own = f"{target}:{incoming}"
    confirmers = (
        {t for k in keys if isinstance(k, str) and key_pair(k) != own for t in key_tokens(k)}
        if isinstance(keys, list)
        else set()
    )
    return run_tokens(record) | confirmers


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
        "run_tokens": sorted(run_tokens(record)),
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
    return match_loaded(store, [(shown_path(p), *read_input(p)) for p in paths], max_candidates)


def match_loaded(store: GateStore, loaded: Sequence[tuple[str, bytes | None, str | None]], max_candidates: int) -> dict:
    """Proposals for records given as (how to name it, its bytes or None, why not)."""
    index = store.index()
    catalogue = Catalogue(index.entries)
    denylist = denylist_pattern(read_denylist())
    batch_ids = set()
    for _, data, _ in loaded:  # records of one batch may link to each other: they go in together
        rec = parse_json_bytes(data)[0] if data is not None else None
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            batch_ids.add(rec["id"])
    known = frozenset(index.entries) | batch_ids
    proposals = [
        match_one(shown, data, error, catalogue, known, denylist, max_candidates) for shown, data, error in loaded
    ]
    for p in proposals:  # a confirm of a store record measured in the same run: one run, counted once
        if p["action"] == "confirm":
            shared = set(p["run_tokens"]) & target_tokens(store, p["target"], index.entries, p["id"])
            if shared:
                p.update(same_run(p["target"], shared))
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


def store_root_of(index_path: Path) -> Path:
    """The store root of a `<root>/records/index.json` path (how the workflow passes the live store)."""
    return Path(index_path).parent.parent


def readme_section(store_file: Path, index_path: Path) -> str:
    """Markdown for the staging README: what each record of stage's store file would do in the live store."""
    copies = [(Path(rel).name, text.encode("utf-8"), None) for rel, text in read_store_file(store_file).items()]
    report = match_loaded(GateStore(store_root_of(index_path)), copies, 0)
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
