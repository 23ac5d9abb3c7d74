rule packets_trace:
    input:
        unpack(trace_inputs),
        segments=rules.partition_trace.output.segments,
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
        denylist=DENYLIST,
    output:
        # one file: the manifest and each segment's <seg_id>.json and .diff/.py (optrace.mine.packetfile)
        packets=results("packets/{slug}.json"),
    log:
        logs("packets/{slug}.log"),
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        trace=trace_path,
        work_dir=input_folder("segments"),
        fingerprint=trace_fingerprint,
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "packets {params.trace:q} --work-dir {params.work_dir:q} --out {output.packets:q} "
            "--slug {wildcards.slug} --denylist-env {params.denylist_env} > {log} 2>&1",
            guard=per_trace_guard(),
        )
