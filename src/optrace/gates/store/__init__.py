"""The kernel store's gates, fixed: the union of the store checker's and the admission gate's rules.

    run_store_gates(store_root)            -> [GateResult] for the 9 gates, in the store's order
    run_gates(load_store(root), terms)     -> the same on an already loaded (or mutated) store
    check_record(record, relpath, ctx)     -> {gate: [messages]} for one record, for the validation stage

One module per gate (schema, ids, anonymization, raw_isolation, relations, index, self_contained,
cross_reference, established_fact); each message names the record's path relative to the store root.
"""

from optrace.gates.store.model import FAIL, GATES, PASS, SKIP, GateContext, GateResult, RecordView
from optrace.gates.store.runner import check_record, context_for, run_gates, run_store_gates
from optrace.gates.store.store import Store, load_store

__all__ = [
    "FAIL",
    "GATES",
    "PASS",
    "SKIP",
    "GateContext",
    "GateResult",
    "RecordView",
    "Store",
    "check_record",
    "context_for",
    "load_store",
    "run_gates",
    "run_store_gates",
]
