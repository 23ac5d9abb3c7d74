"""The deterministic drafter (`distill.mode: draft`): one packet -> one record, or a reason it cannot.

    draft_record(packet, code) -> (record | None, reason)

It fills only what the packet supports: scope, id, level, episode key and provenance from the packet's
target and provenance layers; a verbatim snippet (whole lines of the packet's code file); measured gain
numbers from `measurements`; the structured facts from optrace.pipeline_facts; and prose composed only
from the packet's evidence items, in the trace's order of authority (distill.strategy, distill.anti,
distill.reference). Every string it serves cites the items and slots it rests on
(`evidence.raw.evidence_extra.claims`, distill.claims). It never scores (the stage step ranks records)
and never guesses:

- prose that states an absolute latency is not served (latencies live in `evidence.raw.effect` only);
- the bottleneck basis is "profiler" only when a usable capture measured the kernel under test (a
  strategy's: the capture of the version it builds on);
- an anti-strategy is written only as an established fact: a cause optrace.facts judges a cause, of at
  least 40 characters, and a checkable condition.

`python -m optrace.distill.drafter PACKET.json` prints the draft of one packet (an agent's starting point).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from optrace.distill import anti, reference, strategy
from optrace.distill.claims import Claims, Sources
from optrace.distill.common import evidence, retrieval
from optrace.jsonio import read_json

# Never a score: the stage step computes rank from the worth formula. 0.0 / provisional reads as
# "not ranked yet" and is valid under the contract (score in [0, 1]).
UNRANKED = {"score": 0.0, "tier": "provisional"}
DRAFTERS = {"strategy": strategy.draft, "anti-strategy": anti.draft, "reference-kernel": reference.draft}


def draft_record(packet: dict, code: str | None) -> tuple[dict | None, str]:
    """(record, "drafted[; too thin for: ...]") or (None, why the packet cannot back a record)."""
    if not packet.get("provenance", {}).get("commit"):
        return None, "no commit to cite: the version exists only as a step record"
    record_type: Any = packet.get("record_type")  # as the packet states it
    build = DRAFTERS.get(record_type)
    if build is None:
        return None, f"unknown record type {packet.get('record_type')!r}"
    src, claims = Sources(packet), Claims(packet["seg_id"])
    draft = build(packet, code, src, claims)
    if isinstance(draft, str):
        return None, draft
    target = packet["target"]
    found = retrieval(packet, src, claims)
    record_evidence = evidence(packet, src, claims, draft.effect)
    record_evidence["raw"]["evidence_extra"] = {"claims": claims.block()}
    record = {
        "schema": target["schema"],
        "id": target["id"],
        "type": packet["record_type"],
        "level": target["level"],
        "status": "active",
        "episode_key": target["episode_key"],
        "retrieval": found,
        "payload": draft.payload,
        "evidence": record_evidence,
        "worth": {"rank": dict(UNRANKED), "gain": draft.gain},
    }
    return record, "drafted" + (f"; too thin for: {', '.join(draft.thin)}" if draft.thin else "")


def read_code(packet_path: Path, packet: dict) -> str | None:
    """The packet's sibling code file (.diff or .py), if it names one."""
    name = packet.get("agent_facing", {}).get("code_file")
    if not name:
        return None
    try:
        return (packet_path.parent / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m optrace.distill.drafter",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("packet", type=Path, help="a packet JSON (its code file sits beside it)")
    args = ap.parse_args(argv)
    packet = read_json(args.packet)
    record, reason = draft_record(packet, read_code(args.packet, packet))
    print(reason, file=sys.stderr)
    if record is None:
        return 1
    print(json.dumps(record, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
