rule stage:
    input:
        validation=rules.validate_summary.output.summary,
        packets=per_trace(rules.packets_trace.output.manifest),
        versions=per_trace(rules.ingest_trace.output.versions),
    output:
        index=results("staging/records/index.json"),
        summary=results("staging/staged.json"),
    log:
        logs("stage.log"),
    benchmark:
        benchmarks("stage.tsv")
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        optrace=OPTRACE,
        results=root_above("summary", 2),
        slugs=" ".join(SLUGS),
        code=code_digest("stage"),
    shell:
        "{params.optrace} stage --results {params.results:q} --validation {input.validation:q} "
        "--summary {output.summary:q} {params.slugs} > {log} 2>&1"


rule readme:
    input:
        unpack(live_store_inputs),
        index=rules.stage.output.index,
        summary=rules.stage.output.summary,
        metas=per_trace(rules.ingest_trace.output.meta),
        segments=per_trace(rules.partition_trace.output.segments),
        ladders=per_trace(rules.recon_trace.output.svg),
        distills=per_trace(rules.distill_trace.output.report),  # the packets that produced no record, and why
    output:
        readme=results("staging/README.md"),
        html=report(
            results("staging/README.html"),
            caption="../report/staging.rst",
            category="Results",
            labels={"item": "staging README"},
        ),
    log:
        logs("readme.log"),
    benchmark:
        benchmarks("readme.tsv")
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        optrace=OPTRACE,
        results=root_above("readme", 2),
        slugs=" ".join(SLUGS),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        live_store=live_store_arg,
        code=code_digest("readme"),
        page_code=code_digest("report-page"),
    shell:
        "{params.optrace} readme --results {params.results:q} --out {output.readme:q} "
        "--denylist-env {params.denylist_env} {params.live_store} {params.slugs} > {log} 2>&1 && "
        "{params.optrace} report-page {output.readme:q} --out {output.html:q} >> {log} 2>&1"
