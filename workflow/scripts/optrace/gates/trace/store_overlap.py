"""Gate `store-overlap`: a new record claims an id no other record holds, and an episode no other record
of its trace holds.

Within a trace (the trace's validation) no id and no episode_key is claimed twice, and every holder of
a duplicate fails, so a verdict never depends on the order records were read in. Partition gives each
segment of a trace its own episode (a repeated lever's later segment is `<technique>#2`, ...), so a
duplicate episode there is a record that took another's episode: one run counted twice would inflate
`verified_effective` if admission took it for a confirm.

Across traces (`optrace validate summary`) a duplicate id fails (the two records would be one file),
but a shared episode does not: two runs that found the same lever on the same operator and arch are
the store's confirm (same direction) or conflict (opposite direction). `optrace gate match` proposes
that, batch-aware, and the summary lists the shared episodes.

Against the live store (when `live_store` is configured): an id it holds for ANOTHER episode fails
(staging or admitting it would overwrite a different record). An episode it holds is not a failure:
that record is a confirm or a conflict, which `optrace gate match` proposes and the staging README
lists, so it must be staged; and an id it holds for the same episode is the record already admitted
(re-running after `gate commit-all` must not fail what was just admitted). The reference checked ids
against the live store only, merely noted episode keys, and never looked across the records it was
about to stage.
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


CLAIM_KINDS = ("id", "episode_key")


def holders(claims: list[Claim], kind: str) -> dict[str, list[str]]:
    """Record paths per claimed value of `kind` ("id" or "episode_key"), for values claimed more than once."""
    out: dict[str, list[str]] = defaultdict(list)
    for c in claims:
        value = getattr(c, kind)
        if value is not None:
            out[value].append(c.relpath)
    return {value: paths for value, paths in out.items() if len(paths) > 1}


def overlaps(claims: list[Claim], live: LiveStore, kinds: tuple[str, ...] = CLAIM_KINDS) -> dict[str, list[str]]:
    """Messages per claiming record path: an id the live store holds for another episode, or a value of
    `kinds` claimed twice among `claims` (one trace's records: ids and episodes; all traces: ids)."""
    out: dict[str, list[str]] = defaultdict(list)
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
    for kind in kinds:
        for value, paths in holders(claims, kind).items():
            for path in paths:
                others = ", ".join(p for p in paths if p != path)
                out[path].append(f"{path}: {kind} {value!r} is also claimed by {others}")
    return dict(out)


GATE: Gate[Evidence] = Gate(
    "store-overlap",
    "no id the live store holds for another episode; no id claimed twice in staging; "
    "no episode_key claimed twice within a trace",
)
