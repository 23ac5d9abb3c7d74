"""Gate `ncu-attribution`: profiler claims need a capture of the kernel under test.

A capture is usable when ingest found that it measured the kernel under test (not a harness kernel
such as torch's RNG fill): the packet says so (profiler.ncu_measured_the_kernel_under_test) and one of
its capture_dirs is usable in ingest's profiles.jsonl. Without one, bottleneck_evidence.basis cannot be
`profiler`, and the fields only a profiler can establish -- retrieval.signals.bottleneck and
evidence.summary.mechanism_metrics -- must be null or absent. The reference checked the basis only.
"""

from __future__ import annotations

from ..storegates.model import Gate, RecordView, obj
from .model import Evidence, needs_packet


def has_usable_capture(ev: Evidence) -> bool:
    packet = ev.packet
    dirs = packet.provenance.get("capture_dirs")
    return (obj(packet.agent_facing, "profiler").get("ncu_measured_the_kernel_under_test") is True
            and isinstance(dirs, list) and any(isinstance(d, str) and d in ev.trace.usable_captures for d in dirs))


@needs_packet
def check(view: RecordView, ev: Evidence) -> list[str]:
    if has_usable_capture(ev):
        return []
    rel, record = view.relpath, view.record
    summary = obj(record, "evidence", "summary")
    out = []
    if obj(summary, "bottleneck_evidence").get("basis") == "profiler":
        out.append(f"{rel}: evidence.summary.bottleneck_evidence.basis: 'profiler', but the packet has no usable "
                   "capture of the kernel under test")
    if obj(record, "retrieval", "signals").get("bottleneck") is not None:
        out.append(f"{rel}: retrieval.signals.bottleneck: set without a usable capture of the kernel under test")
    metrics = summary.get("mechanism_metrics")
    if metrics is not None and not (isinstance(metrics, dict) and all(v is None for v in metrics.values())):
        out.append(f"{rel}: evidence.summary.mechanism_metrics: set without a usable capture of the kernel under test")
    return out


GATE = Gate("ncu-attribution", "profiler basis, bottleneck and mechanism metrics only with a usable capture",
            check=check)
