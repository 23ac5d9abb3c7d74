rule recon_trace:
    input:
        unpack(live_store_inputs),
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
    output:
        md=f"{RESULTS}/staging/reports/{{slug}}/recon.md",
        json=f"{RESULTS}/staging/reports/{{slug}}/recon.json",
        svg=f"{RESULTS}/staging/reports/{{slug}}/ladder.svg",
    params:
        ladder=ladder_args(),
        live_store=live_store_arg,
        guard=guard_args,
        code=code_digest("recon"),
    log:
        f"{RESULTS}/logs/recon/{{slug}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/recon/{{slug}}.tsv"
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- recon --work-dir {RESULTS}/work/{wildcards.slug} "
        "--out-dir {RESULTS}/staging/reports/{wildcards.slug} {params.ladder} "
        "{params.live_store} > {log} 2>&1"
