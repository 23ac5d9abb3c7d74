"""One trace's validation run: where its files are, the content-hash cache, and judging its records.

    TraceRun(paths, profile, live, denylist_terms).run(cache_path) -> (verdicts, packets without a record)

The cache (`R/work/S/validation-cache.json` of a run by hand; a workflow job has none) maps sha256(context, record path and bytes, packet bytes,
code bytes) to the record's per-record verdicts; the context digest covers the gates' source code,
both schemas, ingest's versions.jsonl, profiles.jsonl and meta.json, the packets manifest and the
denylist. A run keeps only the entries it used; each entry carries an HMAC under a key kept outside the
results tree (gates.validate says why). Used by `optrace validate trace` (gates.validate) and by an
agent's `optrace validate record` (gates.selfcheck).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from optrace import PACKAGE_DIR
from optrace.distill.records import TraceRecords, read_drafts, shown_name
from optrace.errors import InputError
from optrace.gates.store.schema import CONTRACT
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes
from optrace.gates.trace.model import Packet, TraceContext, trace_context
from optrace.gates.trace.runner import Judged, RecordVerdict, finish, judge
from optrace.gates.trace.store_overlap import LiveStore
from optrace.jsonio import dumps_compact, load_or_none, read_json, read_jsonl, write_text_atomic
from optrace.mine.packetfile import judged_inputs, read_packet_file
from optrace.rows import manifest_packets
from optrace.run.codedigest import package_digest
from optrace.scrub.leak_patterns import denylist_pattern
from optrace.secret import cache_secret, mac, verifies

CACHE_NAME = "validation-cache.json"
CACHE_FORMAT = 2
# A record that cannot be parsed has nothing for its author to fix in place; distill re-drafts (or
# re-asks the agent for) exactly the packets whose record is missing.
REDRAFT_ADVICE = "; delete it and re-run (distill writes it again from its packet)"


# --- where a trace's files are -------------------------------------------------------------------


@dataclass(frozen=True)
class TracePaths:
    """The files one trace's validation reads: each named (the workflow's declared inputs), or the default
    layout under a results root (`TracePaths.under`)."""

    slug: str
    distilled: Path  # the agent's records: <results>/distilled/<slug>
    packets: Path  # the packets stage's file (optrace.mine.packetfile)
    versions: Path
    profiles: Path
    meta: Path
    drafts: Path | None = None  # distill's copies of its records (optrace.distill.records), when there are

    @classmethod
    def under(cls, results: Path, slug: str) -> TracePaths:
        work = results / "work" / slug
        drafts = work / "drafts.json"
        return cls(
            slug,
            results / "distilled" / slug,
            results / "packets" / f"{slug}.json",
            work / "versions.jsonl",
            work / "profiles.jsonl",
            work / "meta.json",
            drafts if drafts.is_file() else None,
        )

    def relpath(self, name: str) -> str:
        return f"distilled/{self.slug}/{shown_name(name)}"


def manifest_targets(path: Path, manifest: Any) -> dict[str, tuple[str, str | None]]:
    """Record id -> (seg_id, code file) from the packets manifest."""
    return {e["id"]: (e["seg_id"], e.get("code_file")) for e in manifest_packets(path, manifest)}


# --- the cache -----------------------------------------------------------------------------------


def context_digest(parts: list[bytes]) -> bytes:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.digest()


def record_key(context: bytes, relpath: str, record: bytes, packet: bytes, code: bytes) -> str:
    h = hashlib.sha256(context)
    for part in (relpath.encode(), record, packet, code):
        h.update(len(part).to_bytes(8, "little") + part)  # length-prefixed: no two splits hash alike
    return h.hexdigest()


def entry_parts(key: str, verdict: dict) -> tuple[bytes, bytes]:
    """What a cache entry's MAC covers: its key and its verdicts."""
    return key.encode(), dumps_compact(verdict).encode()


@dataclass
class Cache:
    """What a previous run left: per-record verdicts by key, and ingest's facts for the context it ran in."""

    entries: dict[str, Any]
    context: str = ""
    facts: dict | None = None


def load_cache(path: Path) -> Cache:
    """Anything unreadable or of another format is simply a cold cache."""
    data = load_or_none(path)
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("entries"), dict):
        return Cache({})
    facts = data.get("facts")
    return Cache(data["entries"], str(data.get("context")), facts if isinstance(facts, dict) else None)


def cached(entries: dict[str, Any], key: str, secret: bytes) -> Judged | None:
    """The verified entry for key, or None: absent, not what to_json wrote, or a MAC that does not verify
    (an entry written by anyone but the validator) -- then the record is judged again."""
    entry = entries.get(key)
    if not (isinstance(entry, dict) and isinstance(entry.get("mac"), str) and isinstance(entry.get("verdict"), dict)):
        return None
    try:
        if not verifies(secret, entry["mac"], *entry_parts(key, entry["verdict"])):
            return None
        return Judged.from_json(entry["verdict"])
    except (TypeError, ValueError):
        return None


# --- one trace -----------------------------------------------------------------------------------


def facts_json(trace: TraceContext) -> dict:
    return {
        "commits": dict(trace.commits),
        "usable_captures": sorted(trace.usable_captures),
        "capture_versions": dict(trace.capture_versions),
        "meta": dict(trace.meta),
        "names": [list(n) for n in trace.names],
        "prose_peers": {k: list(v) for k, v in trace.prose_peers.items()},
    }


def _str_map(value: Any) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def facts_from_json(slug: str, facts: dict, profile: str) -> TraceContext | None:
    """The cached facts, or None when they are not what facts_json wrote."""
    keys = ("commits", "usable_captures", "capture_versions", "meta", "names", "prose_peers")
    commits, usable, versions, meta, names, peers = (facts.get(k) for k in keys)
    if not (
        _str_map(commits)
        and _str_map(versions)
        and isinstance(meta, dict)
        and isinstance(usable, list)
        and all(isinstance(d, str) for d in usable)
        and isinstance(names, list)
        and all(isinstance(n, list) and len(n) == 2 and all(isinstance(x, str) for x in n) for n in names)
        and isinstance(peers, dict)
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in peers.values())
    ):
        return None
    pairs = tuple((n[0], n[1]) for n in names)
    prose = {k: tuple(v) for k, v in peers.items()}
    return TraceContext(slug, commits, frozenset(usable), profile, versions, meta, pairs, prose)


@dataclass
class TraceRun:
    paths: TracePaths
    profile: Path
    live: LiveStore
    denylist_terms: tuple[str, ...]
    checked: int = 0  # records judged this run (cache misses)

    def __post_init__(self) -> None:
        self.packet_file = read_packet_file(self.paths.packets)
        self.records = TraceRecords(self.paths.distilled, read_drafts(self.paths.drafts, self.paths.slug))
        self.manifest = self.packet_file.manifest
        self.targets = manifest_targets(self.paths.packets, self.manifest)
        self.denylist = denylist_pattern(self.denylist_terms)
        self._packet_files: dict[str, tuple[bytes, bytes]] = {}
        self._trace: TraceContext | None = None
        self.judged_inputs: str | None = None  # set by context(): the packets and versions judged
        self.secret = cache_secret()

    def packet_files(self, seg_id: str, code_file: str | None) -> tuple[bytes, bytes]:
        if seg_id not in self._packet_files:
            data = self.packet_file.data(f"{seg_id}.json")
            code = self.packet_file.data(code_file) if code_file else b""
            self._packet_files[seg_id] = data, code
        return self._packet_files[seg_id]

    @property
    def trace(self) -> TraceContext:
        if self._trace is None:  # parsing 3000 versions costs more than 10 records: only on a miss
            self._trace = trace_context(
                self.paths.slug,
                read_jsonl(self.paths.versions),
                read_jsonl(self.paths.profiles),
                str(self.profile),
                read_json(self.paths.meta),
                self.manifest,
            )
        return self._trace

    def context(self) -> bytes:
        files = [
            self.profile,
            CONTRACT,
            self.paths.versions,
            self.paths.profiles,
            self.paths.meta,
        ]
        try:
            parts = [path.read_bytes() for path in files]
        except OSError as exc:
            raise InputError(exc.filename, f"cannot be read ({exc.strerror})") from None
        self.judged_inputs = judged_inputs(self.packet_file, parts[files.index(self.paths.versions)])
        parts.append(dumps_compact(self.manifest).encode())  # the names of the trace's segments (the claims gate)
        return context_digest(
            [
                package_digest(PACKAGE_DIR).encode(),
                self.paths.slug.encode(),
                "\0".join(self.denylist_terms).encode(),
                *parts,
            ]
        )

    def parse_packet(self, target: tuple[str, str | None], data: bytes, code: bytes) -> Packet:
        seg_id, code_file = target
        try:
            return Packet.from_bytes(seg_id, data, code if code_file else None, code_file)
        except ValueError as exc:
            raise InputError(self.packet_file.where(f"{seg_id}.json"), f"packet is not valid JSON ({exc})") from None

    def judge_file(self, name: str, context: bytes, cache: Cache, used: dict) -> Judged:
        relpath = self.paths.relpath(name)
        data, error = self.records.read(name, MAX_RECORD_BYTES)
        target = self.targets.get(name[: -len(".json")])
        packet_bytes, code = self.packet_files(*target) if target else (b"", b"")
        key = record_key(context, relpath, data or (error or "").encode(), packet_bytes, code)
        judged = cached(cache.entries, key, self.secret)
        if judged is not None:
            used[key] = cache.entries[key]  # verified: kept as written
            return judged
        if judged is None:
            record = None
            if data is not None:
                record, error = parse_json_bytes(data)
            if error is not None and target is not None:
                error += REDRAFT_ADVICE
            packet = self.parse_packet(target, packet_bytes, code) if target else None
            judged = judge(relpath, record, error, packet, self.trace, self.denylist)
            judged = dataclasses.replace(judged, sha256=hashlib.sha256(data).hexdigest() if data is not None else None)
            self.checked += 1
        verdict = judged.to_json()
        used[key] = {"verdict": verdict, "mac": mac(self.secret, *entry_parts(key, verdict))}
        return judged

    def run(self, cache_path: Path | None) -> tuple[list[RecordVerdict], list[str]]:
        """(verdicts, seg_ids of packets without a record); refreshes the cache file when there is one."""
        cache, used = load_cache(cache_path) if cache_path else Cache({}), dict[str, dict]()
        context = self.context()
        if cache.context == context.hex() and cache.facts is not None:
            self._trace = facts_from_json(self.paths.slug, cache.facts, str(self.profile))
        names = self.records.names()
        judged = [self.judge_file(name, context, cache, used) for name in names]
        if cache_path and (used.keys() != cache.entries.keys() or cache.context != context.hex()):
            facts = facts_json(self._trace) if self._trace is not None else None
            write_text_atomic(
                cache_path,
                dumps_compact({"format": CACHE_FORMAT, "context": context.hex(), "facts": facts, "entries": used}),
            )
        covered = {name[: -len(".json")] for name in names}
        missing = sorted(seg for rid, (seg, _) in self.targets.items() if rid not in covered)
        return finish(judged, self.live), missing
