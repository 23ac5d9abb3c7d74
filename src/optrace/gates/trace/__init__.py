"""The trace gates: a record mined from a trace says only what its packet and the trace support.

    judge(relpath, record, error, packet, trace, denylist)  -> Judged: one record, store + trace gates
    finish(judged, live)                                    -> [RecordVerdict]: all 17 gates per record

One module per gate (profile, layout, verbatim, fabrication = no-fabrication, provenance,
ncu_attribution, lineage, store_overlap), in the store gates' style and on their types (gates.store.model).
`optrace validate` (optrace.gates.validate) runs them per trace with a content-hash cache.
"""

from optrace.gates.trace.model import TRACE_GATES, Evidence, Packet, TraceContext, trace_context
from optrace.gates.trace.runner import ALL_GATES, Judged, RecordVerdict, finish, judge
from optrace.gates.trace.store_overlap import Claim, LiveStore, holders, load_live_store, overlaps

__all__ = [
    "ALL_GATES",
    "TRACE_GATES",
    "Claim",
    "Evidence",
    "Judged",
    "LiveStore",
    "Packet",
    "RecordVerdict",
    "TraceContext",
    "finish",
    "holders",
    "judge",
    "load_live_store",
    "overlaps",
    "trace_context",
]
