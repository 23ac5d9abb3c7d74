"""What a record must satisfy to enter a live store, and what identifies the run it was measured in.

Admissible: the union of every per-record store gate (schema, ids with the 5-segment rule,
anonymization, raw-isolation, relations against the store, self-contained, no-cross-reference,
established-fact with both phrase lists), the opt-trace-1.0 profile every mined record satisfies, a
safe store path and an episode_key that says what the record says.

The run identity (`run_tokens`) is how admission tells an independent confirmation from the same
measurement again: a copy of a trace under another name, or with its commits rewritten (authors,
dates), has other ids and commits but the very same measured numbers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from optrace.gates.store.model import GATES, GateContext, RecordView, obj
from optrace.gates.store.runner import check_view
from optrace.gates.store.schema import errors_of as schema_errors
from optrace.gates.store.store import store_path
from optrace.gates.trace.corpus_profile import narrowings
from optrace.gates.trace.model import PROFILE
from optrace.scrub.leak_patterns import Denylist

# evidence.raw.effect's numbers: absolute latencies to the harness's precision, which two independent
# runs do not repeat.
EFFECT_NUMBERS = ("new_geomean_us", "parent_geomean_us", "baseline_geomean_us", "delta_pct")


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


def evidence_commit(record: dict) -> str | None:
    """The trace commit a mined record's evidence is (evidence.raw.git_commit, bound to the trace by the
    provenance gate); None for a curated record."""
    commit = obj(record, "evidence", "raw").get("git_commit")
    return commit if isinstance(commit, str) and commit else None


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def measurement_fingerprint(record: dict) -> str | None:
    """A digest of the absolute numbers the record's run measured (evidence.raw.effect), None when it
    states no absolute latency (a qualitative record: nothing to compare)."""
    effect = obj(record, "evidence", "raw", "effect")
    numbers = {k: effect[k] for k in EFFECT_NUMBERS if _number(effect.get(k))}
    if not any(_number(effect.get(k)) for k in EFFECT_NUMBERS[:3]):
        return None
    metrics = [
        {k: m.get(k) for k in ("metric", "delta_pct", "before", "after")}
        for m in obj(record, "worth", "gain").get("metrics") or ()
        if isinstance(m, dict)
    ]
    text = json.dumps({"effect": numbers, "metrics": metrics}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_tokens(record: dict) -> set[str]:
    """What identifies the run a record was measured in: `m<digest>` of its measurements, `c<commit>`
    of its evidence commit (either may be absent). Two records sharing a token are one run."""
    tokens = set()
    if (fp := measurement_fingerprint(record)) is not None:
        tokens.add(f"m{fp}")
    if (commit := evidence_commit(record)) is not None:
        tokens.add(f"c{commit[:16]}")
    return tokens


def confirm_key(target: str, incoming: str, tokens: set[str]) -> str:
    """worth.track.confirm_keys entry of one counted confirmation: `<target>:<incoming>` (the store's
    own form, counted once per pair), then `@` and the confirming run's tokens. Ids never hold `:`,
    `@` or `+`, so the parts read back unambiguously."""
    return f"{target}:{incoming}" + ("@" + "+".join(sorted(tokens)) if tokens else "")


def key_pair(key: str) -> str:
    """The `<target>:<incoming>` part of a confirm key."""
    return key.partition("@")[0]


def key_tokens(key: str) -> set[str]:
    """The run tokens a confirm key carries (none for a key in the store's plain form)."""
    tail = key.partition("@")[2]
    return set(tail.split("+")) if tail else set()
