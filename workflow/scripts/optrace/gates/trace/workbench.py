"""A mined trace as the gates' tests and the injection suite use it: its packets, ingest's facts and the
drafter's records of them, validated in memory exactly as `optrace validate trace` validates them.

    mine_example(root) -> root        the example trace, ingested, partitioned and packed under root
    workbench(root, slug) -> Workbench
    validate_records(bench, records, live) -> [RecordVerdict]
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from optrace.cli import main as optrace
from optrace.distill.drafter import draft_record
from optrace.errors import InputError
from optrace.example.embedded import build_example, example_name
from optrace.gates.store.specimens import index_for
from optrace.gates.store.store import IndexFile, RecordFile, Store
from optrace.gates.trace.layout import staged_path
from optrace.gates.trace.model import Packet, TraceContext, trace_context
from optrace.gates.trace.runner import RecordVerdict, finish, judge
from optrace.gates.trace.store_overlap import LiveStore
from optrace.jsonio import read_jsonl
from optrace.mine.packetfile import read_packet_file

SLUG = "example"


@dataclass(frozen=True)
class Workbench:
    """One mined trace: its packets by record id, ingest's facts, and the drafter's records of it."""

    slug: str
    packets: dict[str, Packet]
    trace: TraceContext
    records: tuple[tuple[str, dict], ...]  # (relpath, record), distilled layout

    def packet_at(self, relpath: str) -> Packet | None:
        return self.packets.get(relpath.rsplit("/", 1)[-1][: -len(".json")])

    def packet_of(self, relpath: str) -> Packet:
        """The packet a workbench record was drafted from (every one of them was)."""
        packet = self.packet_at(relpath)
        assert packet is not None, relpath
        return packet

    def store(self) -> Store:
        """The records as a store would hold them, with their index (what check-store judges)."""
        staged: list[tuple[str, dict]] = []
        for rel, record in self.records:
            path = staged_path(self.packet_of(rel))
            assert path is not None, rel  # a drafted packet's target always has a store path
            staged.append((path, record))
        return Store(
            Path(f"<{self.slug} staged>"),
            tuple(RecordFile(rel, rec) for rel, rec in staged),
            IndexFile(index_for(staged)),
        )


def mine_example(root: Path) -> Path:
    """The example trace, ingested, partitioned and packed under root (as the workflow would)."""
    trace, work, packets = root / example_name(), root / "work" / SLUG, root / "packets" / f"{SLUG}.json"
    build_example(trace)
    steps = (
        ["ingest", str(trace), "--out-dir", str(work)],
        ["partition", "--work-dir", str(work), "--report", str(root / "partition.md")],
        ["packets", str(trace), "--work-dir", str(work), "--out", str(packets), "--slug", SLUG],
    )
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in steps:
            if optrace(argv) != 0:
                raise InputError(trace, f"the example trace could not be mined (optrace {argv[0]} failed)")
    return root


def workbench(root: Path, slug: str = SLUG) -> Workbench:
    """Packets, facts and drafted records of a mined trace at root (packets/ and work/ of slug)."""
    packet_file, work = read_packet_file(root / "packets" / f"{slug}.json"), root / "work" / slug
    packets = {}
    manifest = packet_file.manifest
    for entry in manifest["packets"]:
        code_file = entry.get("code_file")
        code = packet_file.data(code_file) if code_file else None
        packets[entry["id"]] = Packet.from_bytes(
            entry["seg_id"], packet_file.data(f"{entry['seg_id']}.json"), code, code_file
        )
    trace = trace_context(
        slug,
        read_jsonl(work / "versions.jsonl"),
        read_jsonl(work / "profiles.jsonl"),
        meta=json.loads((work / "meta.json").read_text(encoding="utf-8")),
        manifest=manifest,
    )
    records = []
    for rid, packet in sorted(packets.items()):
        record, _ = draft_record(packet.data, packet.code)
        if record is not None:
            records.append((f"distilled/{slug}/{rid}.json", record))
    return Workbench(slug, packets, trace, tuple(records))


def validate_records(
    bench: Workbench, records: Iterable[tuple[str, dict] | list], live: LiveStore
) -> list[RecordVerdict]:
    """The validation of one trace's records in memory: the same judge/finish as `optrace validate trace`.

    `records` are (relpath, record) pairs: the workbench's tuples, or [relpath, record] lists an
    injection edits in place."""
    judged = [judge(rel, record, None, bench.packet_at(rel), bench.trace, None) for rel, record in records]
    return finish(judged, live)
