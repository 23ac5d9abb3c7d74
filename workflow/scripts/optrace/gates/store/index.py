"""Gate `index`: records/index.json is a faithful catalogue of the record files.

The store's own gate compared only retrieval, worth_score, tier and gain_pct, and counted unique ids;
a wrong path, type or count, a duplicated entry or a stale episode_key all passed. Here every field
an entry copies from its record must equal it, every record has exactly one entry, every entry has a
record, and `count` is the number of entries. Derived prose (title, search_text) is writer-specific
and not compared.
"""

from __future__ import annotations

from typing import Any

from optrace.gates.store.model import Gate, GateContext, RecordView, obj
from optrace.gates.store.store import INDEX_RELPATH, Store

SCHEMA_VERSION = "clean-1.3"
COPIED_FIELDS = ("type", "level", "status", "episode_key", "retrieval")


def expected_entry(view: RecordView) -> dict[str, Any]:
    worth = obj(view.record, "worth")
    return {
        "path": view.relpath,
        **{k: view.record.get(k) for k in COPIED_FIELDS},
        "worth_score": obj(worth, "rank").get("score"),
        "tier": obj(worth, "rank").get("tier"),
        "gain_pct": obj(worth, "gain").get("pct"),
    }


def entry_differences(entry: dict, view: RecordView) -> list[str]:
    # Python equality (1 == 1.0 as in JSON); a boolean posing as 1 is the schema gate's business.
    diffs = [k for k, v in expected_entry(view).items() if entry.get(k) != v]
    if "page_path" in entry and entry["page_path"] != view.raw.get("page_path"):
        diffs.append("page_path")
    return diffs


def index_entries(data: Any) -> tuple[list, list[str]]:
    """The entry list and the header's problems."""
    if not isinstance(data, dict):
        return [], [f"{INDEX_RELPATH}: not a JSON object"]
    problems = []
    if data.get("schema") != SCHEMA_VERSION:
        problems.append(f"{INDEX_RELPATH}: schema is {data.get('schema')!r}, expected {SCHEMA_VERSION!r}")
    entries = data.get("records")
    if not isinstance(entries, list):
        return [], problems + [f"{INDEX_RELPATH}: records is not a list"]
    count = data.get("count")
    if type(count) is not int or count != len(entries):
        problems.append(f"{INDEX_RELPATH}: count is {count!r} but there are {len(entries)} entries")
    return entries, problems


def check_store(store: Store, views: list[RecordView]) -> list[str]:
    if store.index.error:
        return [f"{INDEX_RELPATH}: {store.index.error}"]
    entries, out = index_entries(store.index.data)
    by_id: dict[str, dict] = {}
    for i, entry in enumerate(entries):
        rid = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(rid, str):
            out.append(f"{INDEX_RELPATH}: entry #{i} is not an object with a string id")
        elif rid in by_id:
            out.append(f"{INDEX_RELPATH}: duplicate entry for id {rid!r}")
        else:
            by_id[rid] = entry
    seen = set()
    for view in views:
        rid = view.record.get("id")
        entry = by_id.get(rid) if isinstance(rid, str) else None
        if entry is None:
            out.append(f"{view.relpath}: no index entry for id {rid!r}")
            continue
        seen.add(rid)
        diffs = entry_differences(entry, view)
        if diffs:
            out.append(f"{view.relpath}: index entry differs from the record in {', '.join(diffs)}")
    # An unparseable record has no id to match; the schema gate already fails it by path.
    unreadable = {f.relpath for f in store.files if f.error is not None or not isinstance(f.record, dict)}
    out += [
        f"{INDEX_RELPATH}: entry {rid!r} has no record file"
        for rid, entry in by_id.items()
        if rid not in seen and not (isinstance(entry.get("path"), str) and entry["path"] in unreadable)
    ]
    return out


GATE: Gate[GateContext] = Gate(
    "index", "records/index.json lists every record once, with its current fields", check_store=check_store
)
