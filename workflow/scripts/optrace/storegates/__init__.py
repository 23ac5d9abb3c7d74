"""The kernel store's gates, fixed: the union of the store checker's and the admission gate's rules.

    run_store_gates(store_root)            -> [GateResult] for the 9 gates, in the store's order
    run_gates(load_store(root), terms)     -> the same on an already loaded (or mutated) store
    check_record(record, relpath, ctx)     -> {gate: [messages]} for one record, for the validation stage

One module per gate (schema, ids, anonymization, raw_isolation, relations, index, self_contained,
cross_reference, established_fact); each message names the record's path relative to the store root.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ loads, declared here for type checkers and for codedigest's closures
    from .model import FAIL, GATES, PASS, SKIP, GateContext, GateResult, RecordView
    from .runner import check_record, context_for, run_gates, run_store_gates
    from .store import Store, load_store

# Names are imported on first use (PEP 562), so a module that needs one submodule (ingest validates
# the hardware table with .fastschema) does not import every gate (~40 ms at start-up).
_EXPORTS = {"FAIL": "model", "GATES": "model", "PASS": "model", "SKIP": "model", "GateContext": "model",
            "GateResult": "model", "RecordView": "model", "check_record": "runner", "context_for": "runner",
            "run_gates": "runner", "run_store_gates": "runner", "Store": "store", "load_store": "store"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
