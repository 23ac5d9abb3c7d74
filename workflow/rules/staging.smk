# Stage, the store's tree and the staging README: every file each reads or writes is declared, named
# to it. Stage writes every scored copy into one file (it travels through storage as one object); the
# tree the store's tools read is written from it where the controller is (local(): a folder output an
# isolated job uploads is not seen by the S3 plugin, #30).


rule stage:
    input:
        validation=rules.validate_summary.output.summary,
        packets=per_trace(rules.packets_trace.output.packets),
        versions=per_trace(rules.ingest_trace.output.versions),
        drafts=per_trace(rules.distill_trace.output.drafts),
    output:
        index=results("staging/index.json"),
        store=results("staging/store.json"),
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
        records_root=records_root,  # the summary names records as distilled/... under it
        traces=per_trace_args("versions", "packets", "drafts"),
    shell:
        optrace_shell(
            "stage --records-root {params.records_root:q} {params.traces} --validation {input.validation:q} "
            "--summary {output.summary:q} --index {output.index:q} --store {output.store:q} > {log} 2>&1"
        )


rule store_tree:
    input:
        index=rules.stage.output.index,
        store=rules.stage.output.store,
    output:
        records=local(directory(results("staging/records"))),
    log:
        logs("store_tree.log"),
    localrule: True
    conda:
        ENV
    shell:
        optrace_shell(
            "store-tree --store {input.store:q} --index {input.index:q} --out {output.records:q} > {log} 2>&1"
        )


rule readme:
    input:
        unpack(live_store_inputs),
        index=rules.stage.output.index,
        store=rules.stage.output.store,  # the records admission is asked about (with a live store)
        summary=rules.stage.output.summary,
        metas=per_trace(rules.ingest_trace.output.meta),
        versions=per_trace(rules.ingest_trace.output.versions),
        segments=per_trace(rules.partition_trace.output.segments),
        distills=per_trace(rules.distill_trace.output.report),  # the packets that produced no record, and why
        validations=per_trace(rules.validate_trace.output.report),
        recons=per_trace(rules.recon_trace.output.json),
        ladders=per_trace(rules.recon_trace.output.svg),  # linked from the README
        denylist=DENYLIST,
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
        traces=per_trace_args(
            "metas", "versions", "segments", "distills", "validations", "recons"
        ),
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "readme --index {input.index:q} --store {input.store:q} --staged {input.summary:q} {params.traces} "
            "--out {output.readme:q} --denylist-env {params.denylist_env} "
            + LIVE_STORE_FLAG
            + " > {log} 2>&1",
            "report-page {output.readme:q} --out {output.html:q} >> {log} 2>&1",
        )
