"""The kernel store's gates, fixed: the union of the store checker's and the admission gate's rules.

    run_store_gates(store_root)            -> [GateResult] for the 9 gates, in the store's order
    run_gates(load_store(root), terms)     -> the same on an already loaded (or mutated) store
    check_record(record, relpath, ctx)     -> {gate: [messages]} for one record, for the validation stage

One module per gate (schema, ids, anonymization, raw_isolation, relations, index, self_contained,
cross_reference, established_fact); each message names the record's path relative to the store root.

The package imports nothing: a stage that needs one gate's patterns, the store reader or the model
does not load every gate (each name is imported from the module that defines it, e.g. optrace.gates.store.runner).
"""
