"""Gate `store-overlap`: a new record claims an id and an episode no other record holds.

Claims are checked against the live store's index (when `live_store` is configured) and across the
whole staging area: within a trace by the trace's validation, across traces by the validation summary
(ids are content-derived, so two traces collide only on episodes: the same lever on the same operator
and arch). An id the live store holds would overwrite a record; an episode it holds is a confirm or a
conflict for `optrace gate match`, not a new record. Every holder of a duplicate fails, so a verdict
never depends on which trace was validated first. The reference checked ids against the live store only,
merely noted episode keys, and never looked across the records it was about to stage.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import InputError
from ..storegates.index import index_entries
from ..storegates.model import Gate
from ..storegates.store import MAX_INDEX_BYTES, read_json_file


@dataclass(frozen=True)
class Claim:
    """What one record claims: its id and its episode (None when the record does not say)."""

    relpath: str
    id: str | None
    episode_key: str | None


@dataclass(frozen=True)
class LiveStore:
    ids: frozenset[str] = frozenset()
    episodes: Mapping[str, str] = field(default_factory=dict)  # episode_key -> the id that holds it


def load_live_store(index_path: str | os.PathLike) -> LiveStore:
    data, error = read_json_file(str(index_path), MAX_INDEX_BYTES)
    if error is not None:
        raise InputError(index_path, f"live store index {error}")
    entries, problems = index_entries(data)
    if problems and not entries:
        raise InputError(index_path, "; ".join(problems))
    rows = [(e.get("id"), e.get("episode_key")) for e in entries if isinstance(e, dict)]
    return LiveStore(frozenset(i for i, _ in rows if isinstance(i, str)),
                     {k: i for i, k in rows if isinstance(k, str) and isinstance(i, str)})


def overlaps(claims: list[Claim], live: LiveStore) -> dict[str, list[str]]:
    """Messages per claiming record path, for every record whose id or episode is already held."""
    out: dict[str, list[str]] = defaultdict(list)
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in claims:
        if c.id in live.ids:
            out[c.relpath].append(f"{c.relpath}: id {c.id!r} is already in the live store")
        if c.episode_key in live.episodes:
            out[c.relpath].append(f"{c.relpath}: episode_key {c.episode_key!r} is already held by "
                                  f"{live.episodes[c.episode_key]!r} in the live store (a confirm or conflict, "
                                  "not a new record)")
        for kind, value in (("id", c.id), ("episode_key", c.episode_key)):
            if value is not None:
                holders[kind, value].append(c.relpath)
    for (kind, value), paths in holders.items():
        for path in paths if len(paths) > 1 else ():
            others = ", ".join(p for p in paths if p != path)
            out[path].append(f"{path}: {kind} {value!r} is also claimed by {others}")
    return dict(out)


GATE = Gate("store-overlap", "no id or episode_key already in the live store or claimed twice in staging")
