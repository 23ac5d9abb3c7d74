"""What the trace gates judge a record against: its packet and the facts of the trace it was mined from.

Trace gates reuse the store gates' vocabulary (gates.store.model: Gate, RecordView, obj, messages that
start with the record's path). Where a store gate's check gets a GateContext, a trace gate's check
gets the record's `Evidence`: its packet (None when no packet targets the record) and the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, wraps
from typing import Any

from optrace import SCHEMAS
from optrace.gates.store.model import CLAIMS_AT as CLAIMS_AT  # where a mined record carries its claims' citations
from optrace.gates.store.model import RecordView, obj
from optrace.gates.store.store import parse_json_bytes

PROFILE = SCHEMAS / "opt-trace-1.0.schema.json"

# Run order after the 9 store gates; every gate has an injection case (gates.trace.injection).
TRACE_GATES = (
    "profile",
    "layout",
    "verbatim",
    "no-fabrication",
    "claims",
    "structured-facts",
    "provenance",
    "ncu-attribution",
    "lineage",
    "store-overlap",
)


@dataclass(frozen=True)
class Packet:
    """One packet as the packets stage wrote it: `<seg_id>.json` and its sibling `.diff`/`.py` (if any)."""

    seg_id: str
    data: dict
    code: str | None = None
    code_file: str | None = None

    @classmethod
    def from_bytes(cls, seg_id: str, data: bytes, code: bytes | None, code_file: str | None) -> Packet:
        """ValueError when data is not a packet's JSON (no string-length limit: packets quote prose)."""
        parsed, error = parse_json_bytes(data, max_string=None)
        if error is not None:
            raise ValueError(error)
        return cls(
            seg_id,
            parsed if isinstance(parsed, dict) else {},
            code.decode("utf-8", errors="replace") if code is not None else None,
            code_file,
        )

    @property
    def target(self) -> dict:
        return obj(self.data, "target")

    @property
    def provenance(self) -> dict:
        return obj(self.data, "provenance")

    @property
    def agent_facing(self) -> dict:
        return obj(self.data, "agent_facing")


@dataclass(frozen=True)
class TraceContext:
    """What the trace gates know beyond a record: ingest's facts about the trace (the gates must not take
    a packet's word for commits and captures) and the profile in force."""

    slug: str
    commits: Mapping[str, str] = field(default_factory=dict)  # version -> sha (versions.jsonl)
    usable_captures: frozenset[str] = frozenset()  # profile dirs that captured the kernel under test
    profile: str = str(PROFILE)
    capture_versions: Mapping[str, str] = field(default_factory=dict)  # usable dir -> the version it captured
    meta: Mapping[str, Any] = field(default_factory=dict)  # meta.json's facts (META_FACTS), {} when unknown
    # (seg_id, the lever or change it is about) of every packet of the trace (the packets manifest)
    names: tuple[tuple[str, str], ...] = ()
    # seg_id -> the other failed levers its version's prose is about (the manifest's shares_prose_with)
    prose_peers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def versions_of(self) -> dict[str, tuple[str, ...]]:
        """sha -> the versions it is the commit of (one dead-end commit may record several)."""
        out: dict[str, tuple[str, ...]] = {}
        for version, sha in self.commits.items():
            out[sha] = (*out.get(sha, ()), version)
        return out

    @cached_property
    def name_of(self) -> dict[str, str]:
        """seg_id -> the lever or change its packet is about."""
        return dict(self.names)


# What the gates take from meta.json: the hardware, the operator's constants and its names.
META_FACTS = ("target", "axes", "workload_family", "operator_name", "operator_slug", "source_label", "harness")


def meta_facts(meta: Any) -> dict:
    return {k: meta[k] for k in META_FACTS if k in meta} if isinstance(meta, dict) else {}


def manifest_names(manifest: Any) -> tuple[tuple[str, str], ...]:
    """(seg_id, name) of every packet entry that names a lever or change."""
    entries = manifest.get("packets") if isinstance(manifest, dict) else None
    rows = entries if isinstance(entries, list) else []
    return tuple(
        (e["seg_id"], e["names"])
        for e in rows
        if isinstance(e, dict) and isinstance(e.get("seg_id"), str) and isinstance(e.get("names"), str)
    )


def manifest_peers(manifest: Any) -> dict[str, tuple[str, ...]]:
    """seg_id -> the seg_ids of the failed levers that share its version's prose."""
    entries = manifest.get("packets") if isinstance(manifest, dict) else None
    out = {}
    for e in entries if isinstance(entries, list) else []:
        peers = e.get("shares_prose_with") if isinstance(e, dict) else None
        if isinstance(e.get("seg_id"), str) and isinstance(peers, list) and all(isinstance(p, str) for p in peers):
            out[e["seg_id"]] = tuple(peers)
    return out


def trace_context(
    slug: str,
    versions: list[Any],
    profiles: list[Any],
    profile: str = str(PROFILE),
    meta: Any = None,
    manifest: Any = None,
) -> TraceContext:
    """Facts from ingest's rows (versions.jsonl, profiles.jsonl, meta.json) and the packets manifest; rows
    of an unexpected shape are ignored."""
    rows = [r for r in versions if isinstance(r, dict)]
    commits = {
        r["version"]: r["sha"] for r in rows if isinstance(r.get("version"), str) and isinstance(r.get("sha"), str)
    }
    usable_rows = [
        p for p in profiles if isinstance(p, dict) and p.get("usable") is True and isinstance(p.get("dir"), str)
    ]
    usable = frozenset(p["dir"] for p in usable_rows)
    versions_of = {p["dir"]: p["version"] for p in usable_rows if isinstance(p.get("version"), str)}
    return TraceContext(
        slug,
        commits,
        usable,
        profile,
        versions_of,
        meta_facts(meta),
        manifest_names(manifest),
        manifest_peers(manifest),
    )


@dataclass(frozen=True)
class Evidence:
    """A trace gate's context for one record."""

    packet: Packet | None
    trace: TraceContext


@dataclass(frozen=True)
class PacketEvidence:
    """The Evidence a gate that compares with the packet reads: needs_packet has found the packet."""

    packet: Packet
    trace: TraceContext


def needs_packet(
    check: Callable[[RecordView, PacketEvidence], list[str]],
) -> Callable[[RecordView, Evidence], list[str]]:
    """A gate that compares with the packet FAILs a record no packet targets: nothing vouches for it."""

    @wraps(check)
    def guarded(view: RecordView, ev: Evidence) -> list[str]:
        if ev.packet is None:
            return [f"{view.relpath}: no packet targets this record, so nothing can vouch for it"]
        return check(view, PacketEvidence(ev.packet, ev.trace))

    return guarded
