# The embedded example, built from the package's own sources (their digest is a param).
rule example_trace:
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
        unpack(targets_inputs),
    output:
        versions=work("{slug}/versions.jsonl"),
        profiles=work("{slug}/profiles.jsonl"),
        meta=work("{slug}/meta.json"),
        autotune=work("{slug}/autotune.jsonl"),
    log:
        logs("ingest/{slug}.log"),
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=20,
    params:
        guard=guarded,
        trace=trace_path,
        out_dir=folder_of("meta"),
        args=ingest_args,
        targets=targets_arg,
        targets_digest=TARGETS_DIGEST,
        fingerprint=trace_fingerprint,
        non_target=",".join(config["non_target_kernels"]),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("ingest"),
    shell:
        "{params.guard} ingest {params.trace:q} --out-dir {params.out_dir:q} {params.targets} "
        "--non-target-kernels {params.non_target:q} {params.args} --denylist-env {params.denylist_env} > {log} 2>&1"
