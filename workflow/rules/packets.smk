rule packets_trace:
    input:
        unpack(trace_inputs),
        segments=rules.partition_trace.output.segments,
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
    output:
        manifest=f"{RESULTS}/packets/{{slug}}/manifest.json",
    params:
        trace=trace_path,
        fingerprint=trace_fingerprint,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        guard=guard_args,
        code=code_digest("packets"),
    log:
        f"{RESULTS}/logs/packets/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- packets {params.trace:q} --work-dir {RESULTS}/work/{wildcards.slug} "
        "--out-dir {RESULTS}/packets/{wildcards.slug} --slug {wildcards.slug} "
        "--denylist-env {params.denylist_env} > {log} 2>&1"
