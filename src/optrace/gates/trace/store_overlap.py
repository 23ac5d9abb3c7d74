"""Gate `store-overlap`: a new record claims an id and an episode no other record holds.

Claims are checked against the live store's index (when `live_store` is configured) and across the
whole staging area: within a trace by the trace's validation, across traces by the validation summary
(ids are content-derived, so two traces collide only on episodes: the same lever on the same operator
and arch). Against the live store: an id it holds for ANOTHER episode fails (staging or admitting it
would overwrite a different record). An episode it holds is not a failure: that record is a confirm or
a conflict, which `optrace gate match` proposes and the staging README lists, so it must be staged; and
an id it holds for the same episode is the record already admitted (re-running after `gate commit-all`
must not fail what was just admitted). Every holder of a duplicate inside staging fails, so a verdict
never depends on which trace was validated first. The reference checked ids against the live store only,
merely noted episode keys, and never looked across the records it was about to stage.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from optrace.errors import InputError
from optrace.gates.store.index import index_entries
from optrace.gates.store.model import Gate
from optrace.gates.store.store import MAX_INDEX_BYTES, read_json_file
from optrace.gates.trace.model import Evidence


@dataclass(frozen=True)
class Claim:
    """What one record claims: its id and its episode (None when the record does not say)."""

    relpath: str
    id: str | None
    episode_key: str | None


@dataclass(frozen=True)
class LiveStore:
    episode_of: Mapping[str, str | None] = field(default_factory=dict)  # id -> its episode_key (None: unstated)


def load_live_store(index_path: str | os.PathLike) -> LiveStore:
    data, error = read_json_file(str(index_path), MAX_INDEX_BYTES)
    if error is not None:
        raise InputError(index_path, f"live store index {error}")
    entries, problems = index_entries(data)
    if problems and not entries:
        raise InputError(index_path, "; ".join(problems))
    rows = [(e.get("id"), e.get("episode_key")) for e in entries if isinstance(e, dict)]
    return LiveStore({i: k if isinstance(k, str) else None for i, k in rows if isinstance(i, str)})


def overlaps(claims: list[Claim], live: LiveStore) -> dict[str, list[str]]:
    """Messages per claiming record path: an id the live store holds for another episode, or an id or
    episode claimed twice in staging."""
    out: dict[str, list[str]] = defaultdict(list)
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in claims:
        if (
            c.id is not None
            and c.id in live.episode_of
            and (live.episode_of[c.id] is None or live.episode_of[c.id] != c.episode_key)
        ):
            out[c.relpath].append(
                f"{c.relpath}: id {c.id!r} is already in the live store for episode "
                f"{live.episode_of[c.id]!r}, not {c.episode_key!r}: it would overwrite that record"
            )
        for kind, value in (("id", c.id), ("episode_key", c.episode_key)):
            if value is not None:
                holders[kind, value].append(c.relpath)
    for (kind, value), paths in holders.items():
        for path in paths if len(paths) > 1 else ():
            others = ", ".join(p for p in paths if p != path)
            out[path].append(f"{path}: {kind} {value!r} is also claimed by {others}")
    return dict(out)


GATE: Gate[Evidence] = Gate(
    "store-overlap", "no id the live store holds for another episode; no id or episode_key claimed twice in staging"
)
