rule stage:
    input:
        validation=rules.validate_summary.output.summary,
        packets=per_trace(rules.packets_trace.output.manifest),
        versions=per_trace(rules.ingest_trace.output.versions),
    output:
        index=f"{RESULTS}/staging/records/index.json",
        summary=f"{RESULTS}/staging/staged.json",
    params:
        slugs=" ".join(SLUGS),
        code=code_digest("stage"),
    log:
        f"{RESULTS}/logs/stage.log",
    benchmark:
        f"{RESULTS}/benchmarks/stage.tsv"
    shell:
        "{PY} -m optrace stage --results {RESULTS} --validation {input.validation} --summary {output.summary} "
        "{params.slugs} > {log} 2>&1"


rule readme:
    input:
        unpack(live_store_inputs),
        index=rules.stage.output.index,
        summary=rules.stage.output.summary,
        metas=per_trace(rules.ingest_trace.output.meta),
        segments=per_trace(rules.partition_trace.output.segments),
        ladders=per_trace(rules.recon_trace.output.svg),
    output:
        readme=report(f"{RESULTS}/staging/README.md", caption="../report/staging.rst", category="Results",
                      labels={"item": "staging README"}),
    params:
        slugs=" ".join(SLUGS),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        live_store=live_store_arg,
        code=code_digest("readme"),
    log:
        f"{RESULTS}/logs/readme.log",
    benchmark:
        f"{RESULTS}/benchmarks/readme.tsv"
    shell:
        "{PY} -m optrace readme --results {RESULTS} --out {output.readme} "
        "--denylist-env {params.denylist_env} {params.live_store} {params.slugs} > {log} 2>&1"
