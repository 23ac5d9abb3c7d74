"""Matching records against a store's index: scope candidates, closeness, the direction of a claim.

Pure functions over index entries (the fields records/index.json copies from each record), shared by
`optrace gate` and recon's live-store section; no I/O, so recon does not depend on the gates' code.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from optrace.rows import without_repeat


def _get(value: Any, *keys: str) -> dict:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def direction(record_type: Any, pct: Any) -> str:
    if record_type == "anti-strategy":
        return "negative"
    if type(pct) in (int, float) and pct != 0:
        return "positive" if pct > 0 else "negative"
    if record_type in ("strategy", "reference-kernel") and pct is None:
        return "positive"
    return "unknown"  # includes a gain of exactly 0: neither better nor worse


def record_direction(record: dict) -> str:
    return direction(record.get("type"), _get(record, "worth", "gain").get("pct"))


def entry_direction(entry: dict) -> str:
    return direction(entry.get("type"), entry.get("gain_pct"))


def opposite(a: str, b: str) -> bool:
    return {a, b} == {"positive", "negative"}


def key_parts(key: Any) -> list[str]:
    parts = key.split("|") if isinstance(key, str) else []
    return parts + [""] * (5 - len(parts))


def match_confidence(incoming_key: Any, existing_key: Any) -> float:
    """1.0 for the same episode_key, else the share of its five parts that agree."""
    a, b = key_parts(incoming_key), key_parts(existing_key)
    if isinstance(incoming_key, str) and incoming_key == existing_key:
        return 1.0
    return round(sum(x == y and x != "" for x, y in zip(a[:5], b[:5])) / 5, 2)


def scope_of(entry_or_record: dict) -> dict:
    return _get(entry_or_record, "retrieval", "scope")


class Catalogue:
    """The index arranged for matching: entries by (vendor, arch) and ids by episode_key."""

    def __init__(self, entries: dict[str, dict]):
        self.entries = entries
        self.by_scope: dict[tuple, list[dict]] = defaultdict(list)
        self.by_episode: dict[str, list[str]] = defaultdict(list)
        for rid in sorted(entries):
            entry = entries[rid]
            scope = scope_of(entry)
            self.by_scope[scope.get("vendor"), scope.get("arch")].append(entry)
            if isinstance(entry.get("episode_key"), str):
                self.by_episode[entry["episode_key"]].append(rid)

    def candidates(self, record: dict) -> list[dict]:
        """Same vendor and arch, dsl equal or `any` on either side, same operator family when it has one."""
        scope = scope_of(record)
        dsl, family = scope.get("dsl"), scope.get("operator_family")
        out = [
            e
            for e in self.by_scope.get((scope.get("vendor"), scope.get("arch")), ())
            if e["id"] != record.get("id")
            and (dsl == "any" or scope_of(e).get("dsl") in (dsl, "any"))
            and (not family or scope_of(e).get("operator_family") == family)
        ]
        return sorted(out, key=lambda e: closeness(record, e))

    def episode_matches(self, record: dict) -> list[str]:
        key: Any = record.get("episode_key")  # any JSON value
        return [rid for rid in self.by_episode.get(key, ()) if rid != record.get("id")]


def closeness(record: dict, entry: dict) -> tuple:
    """Sort key, closest first: same episode, same technique (a repeat mark `#<n>` aside: `tiling#2` is
    the second episode of `tiling` in one trace), same type, same dsl, shared tags."""
    mine, theirs = key_parts(record.get("episode_key")), key_parts(entry.get("episode_key"))
    tags = set(_get(record, "retrieval").get("technique_tags") or ()) & set(
        _get(entry, "retrieval").get("technique_tags") or ()
    )
    return (
        mine != theirs,
        without_repeat(mine[3]) != without_repeat(theirs[3]),
        record.get("type") != entry.get("type"),
        scope_of(record).get("dsl") != scope_of(entry).get("dsl"),
        -len(tags),
        entry["id"],
    )


def summary_of(entry: dict) -> dict:
    return {
        "id": entry["id"],
        "type": entry.get("type"),
        "episode_key": entry.get("episode_key"),
        "title": entry.get("title"),
        "tier": entry.get("tier"),
        "worth_score": entry.get("worth_score"),
        "gain_pct": entry.get("gain_pct"),
        "direction": entry_direction(entry),
        "path": entry.get("path"),
    }


def holdings(entries: Iterable[dict], vendor: str, arch: str, operator_family: str, closest: int = 5) -> dict:
    """What a store holds on this hardware (counts by type), and its records closest to this operator."""
    same_hw = [
        e
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("id"), str)
        and scope_of(e).get("vendor") == vendor
        and scope_of(e).get("arch") == arch
    ]
    same_op = [e for e in same_hw if scope_of(e).get("operator_family") == operator_family]
    probe = {"episode_key": f"{arch}||{operator_family}||", "retrieval": {"scope": {"arch": arch}}}
    ranked = sorted(same_op or same_hw, key=lambda e: closeness(probe, e))
    return {
        "same_hardware": len(same_hw),
        "same_hardware_by_type": dict(sorted(Counter(e.get("type") for e in same_hw).items())),
        "same_operator": len(same_op),
        "same_operator_by_type": dict(sorted(Counter(e.get("type") for e in same_op).items())),
        "closest": [summary_of(e) for e in ranked[:closest]],
    }
