"""Gate `lineage`: a strategy's snippet, `builds_on` and parent geomean refer to one previous claimed milestone.

The packet's diff is taken against the kernel of the version the step builds on (the previous anchor:
baseline, re-baseline or claimed milestone), and its gain is measured against that version's geomean.
So the record's `evidence.raw.effect.parent_geomean_us` (when given) must be the geomean of the packet's
`provenance.builds_on` version, which must be the packet's floor (`measurements.floor_before_us`); that
version must be a version of this trace with that commit (ingest's facts, not the packet's word);
`payload.trace.builds_on.approach` must be the packet's approach of that version when it states one
(`is_baseline` is a derived field the layout gate binds). A record that measures against one version while quoting a diff against another,
or a packet whose parent is not a version of the trace, fails. Only strategies are judged.
"""

from __future__ import annotations

from typing import Any

from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.trace.model import PacketEvidence, needs_packet


def applies(view: RecordView) -> bool:
    return view.record.get("type") == "strategy"


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    rel, agent, prov = view.relpath, ev.packet.agent_facing, ev.packet.provenance
    parent = prov.get("builds_on")
    if not isinstance(parent, dict):
        return [f"{rel}: the packet names no version this strategy builds on (provenance.builds_on)"]
    out = []
    # any JSON value: the packet is read as written
    version: Any = parent.get("version")
    commit, geo = parent.get("commit"), parent.get("geomean_us")
    if ev.trace.commits.get(version) != commit:
        out.append(f"{rel}: the packet's parent {version!r} with commit {commit!r} is not a version of this trace")
    floor = obj(agent, "measurements").get("floor_before_us")
    if floor != geo:
        out.append(f"{rel}: the packet's floor {floor!r} is not the geomean {geo!r} of the version it builds on")
    effect = obj(view.record, "evidence", "raw", "effect")
    if "parent_geomean_us" in effect and effect["parent_geomean_us"] != geo:  # may be left out, never another
        out.append(
            f"{rel}: evidence.raw.effect.parent_geomean_us {effect.get('parent_geomean_us')!r} is not the "
            f"geomean {geo!r} of the version the diff is taken against"
        )
    said = obj(agent, "builds_on")
    built = obj(view.record, "payload", "trace", "builds_on")
    approach = said.get("previous_approach")
    if (
        isinstance(approach, str)
        and approach.strip()
        and " ".join(str(built.get("approach")).split()) != " ".join(approach.split())
    ):
        out.append(
            f"{rel}: payload.trace.builds_on.approach is not the approach of the version the diff is taken against"
        )
    return out


GATE = Gate(
    "lineage",
    "a strategy's diff, builds_on and parent geomean refer to one previous milestone of the trace",
    check=check,
    applies=applies,
)
