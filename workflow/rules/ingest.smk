rule example_trace:
    input:
        plan=str(EXAMPLE_DIR / "trace.yaml"),
    output:
        trace=directory(EXAMPLE_PATH),
    params:
        sources=source_digest(),
        code=code_digest("example_trace"),
    log:
        f"{RESULTS}/logs/example_trace.log",
    benchmark:
        f"{RESULTS}/benchmarks/example_trace.tsv"
    shell:
        "{PY} -m optrace example-trace --out {output.trace} > {log} 2>&1"


rule ingest_trace:
    input:
        unpack(trace_inputs),
        targets=config["targets"],
    output:
        versions=f"{RESULTS}/work/{{slug}}/versions.jsonl",
        profiles=f"{RESULTS}/work/{{slug}}/profiles.jsonl",
        meta=f"{RESULTS}/work/{{slug}}/meta.json",
        autotune=f"{RESULTS}/work/{{slug}}/autotune.jsonl",
    params:
        trace=trace_path,
        args=ingest_args,
        fingerprint=trace_fingerprint,
        non_target=",".join(config["non_target_kernels"]),
        guard=guard_args,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("ingest"),
    log:
        f"{RESULTS}/logs/ingest/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- ingest {params.trace:q} --out-dir {RESULTS}/work/{wildcards.slug} "
        "--targets {input.targets:q} --non-target-kernels {params.non_target:q} {params.args} "
        "--denylist-env {params.denylist_env} "
        "> {log} 2>&1"
