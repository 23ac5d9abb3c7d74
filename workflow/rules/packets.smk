rule packets_trace:
    input:
        unpack(trace_inputs),
        segments=rules.partition_trace.output.segments,
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
    output:
        # a folder: manifest.json and each segment's <seg_id>.json and .diff/.py (never a file beside it)
        packets=directory(results("packets/{slug}")),
    log:
        logs("packets/{slug}.log"),
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        guard=guarded_folders("packets"),
        trace=trace_path,
        work_dir=input_folder("segments"),
        fingerprint=trace_fingerprint,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("packets"),
    shell:
        "{params.guard} packets {params.trace:q} --work-dir {params.work_dir:q} --out-dir {output.packets:q} "
        "--slug {wildcards.slug} --denylist-env {params.denylist_env} > {log} 2>&1"
