# The denylist's digest (never its terms) in a file of its own, rewritten only when the digest changes:
# the rules that scrub take it as an input, so editing the denylist re-scrubs, and the digest stays out
# of their params and their shell commands (both reach `snakemake --report`).
rule denylist_stamp:
    output:
        stamp=results("denylist.digest"),
    log:
        logs("denylist_stamp.log"),
    localrule: True
    conda:
        ENV
    params:
        digest=denylist_digest(),
    shell:
        "printf '%s\\n' {params.digest:q} > {output.stamp:q} 2> {log}"


DENYLIST = rules.denylist_stamp.output.stamp


# The embedded example, built from the package's own sources (their digest is in its shell command).
rule example_trace:
    output:
        trace=directory(EXAMPLE_PATH),
    log:
        logs("example_trace.log"),
    benchmark:
        benchmarks("example_trace.tsv")
    conda:
        ENV
    shell:
        optrace_shell(
            "example-trace --out {output.trace} > {log} 2>&1", sources=source_digest()
        )


rule ingest_trace:
    input:
        unpack(trace_inputs),
        unpack(targets_inputs),
        denylist=DENYLIST,
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
        trace=trace_path,
        label=trace_label,
        out_dir=folder_of("meta"),
        args=ingest_args,
        fingerprint=trace_fingerprint,
        non_target=",".join(config["non_target_kernels"]),
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "ingest {params.trace:q} --out-dir {params.out_dir:q} "
            + TARGETS_FLAG
            + " --non-target-kernels {params.non_target:q} --label={params.label:q} {params.args} "
            "--denylist-env {params.denylist_env} > {log} 2>&1",
            guard=per_trace_guard(
                "{output.meta:q}", label=" --label={params.label:q}"
            ),
            targets=TARGETS_DIGEST,
        )
