"""The trace gates: a record mined from a trace says only what its packet and the trace support.

    judge(relpath, record, error, packet, trace, denylist)  -> Judged: one record, store + trace gates
    finish(judged, live)                                    -> [RecordVerdict]: all 17 gates per record

One module per gate (profile, layout, verbatim, fabrication = no-fabrication, provenance,
ncu_attribution, lineage, store_overlap), in the store gates' style and on their types (gates.store.model).
`optrace validate` (optrace.gates.validate) runs them per trace with a content-hash cache.

The package imports nothing: a stage that needs one gate's patterns, the store reader or the model
does not load every gate (each name is imported from the module that defines it, e.g. optrace.gates.trace.runner).
"""
