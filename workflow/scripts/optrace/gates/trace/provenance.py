"""Gate `provenance`: evidence.raw names the version the packet is about and that version's own commit.

raw.source_repo is the trace's label, raw.version the packet's version, and raw.git_commit the commit
of that version -- in the packet and in ingest's versions.jsonl, so a commit is checked against the
trace itself, not only against what the packet says. The reference asked git whether the sha was any
commit: HEAD, an abbreviation or another version's commit all passed, and a staging area holding
several traces always failed.
"""

from __future__ import annotations

from optrace.gates.store.model import Gate, RecordView
from optrace.gates.trace.model import PacketEvidence, needs_packet


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    rel, raw, prov, trace = view.relpath, view.raw, ev.packet.provenance, ev.trace
    version, commit = raw.get("version"), raw.get("git_commit")
    out = []
    if raw.get("source_repo") != prov.get("source_label"):
        out.append(
            f"{rel}: evidence.raw.source_repo: {raw.get('source_repo')!r} is not the trace {prov.get('source_label')!r}"
        )
    if version != prov.get("version"):
        out.append(f"{rel}: evidence.raw.version: {version!r} is not the packet's version {prov.get('version')!r}")
    if not isinstance(commit, str) or commit not in trace.versions_of:
        out.append(f"{rel}: evidence.raw.git_commit: {commit!r} is not a commit of a version of this trace")
    elif not isinstance(version, str) or trace.commits.get(version) != commit:
        out.append(
            f"{rel}: evidence.raw.git_commit: {commit!r} is the commit of {', '.join(trace.versions_of[commit])}, "
            f"not of {version!r}"
        )
    elif commit != prov.get("commit"):
        out.append(f"{rel}: evidence.raw.git_commit: {commit!r} is not the packet's commit {prov.get('commit')!r}")
    return out


GATE = Gate("provenance", "raw names the trace, the packet's version and that version's own commit", check=check)
