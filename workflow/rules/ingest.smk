rule example_trace:
    input:
        plan=str(EXAMPLE_DIR / "trace.yaml"),
    output:
        trace=directory(EXAMPLE_PATH),
    log:
        logs("example_trace.log"),
    benchmark:
        benchmarks("example_trace.tsv")
    conda:
        ENV
    params:
        optrace=OPTRACE,
        sources=source_digest(),
        code=code_digest("example-trace"),
    shell:
        "{params.optrace} example-trace --out {output.trace} > {log} 2>&1"


rule ingest_trace:
    input:
        unpack(trace_inputs),
        targets=TARGETS,
    output:
        versions=work("{slug}/versions.jsonl"),
        profiles=work("{slug}/profiles.jsonl"),
        meta=work("{slug}/meta.json"),
        autotune=work("{slug}/autotune.jsonl"),
    log:
        logs("ingest/{slug}.log"),
    conda:
        ENV
    params:
        guard=guarded,
        trace=trace_path,
        out_dir=folder_of("meta"),
        args=ingest_args,
        fingerprint=trace_fingerprint,
        non_target=",".join(config["non_target_kernels"]),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("ingest"),
    shell:
        "{params.guard} ingest {params.trace:q} --out-dir {params.out_dir:q} --targets {input.targets:q} "
        "--non-target-kernels {params.non_target:q} {params.args} --denylist-env {params.denylist_env} > {log} 2>&1"
