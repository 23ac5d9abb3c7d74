rule partition_trace:
    input:
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
        denylist=DENYLIST,
    output:
        segments=work("{slug}/segments.jsonl"),
        report=reports("{slug}/partition.md"),
        html=report(
            reports("{slug}/partition.html"),
            caption="../report/partition.rst",
            category="Traces",
            subcategory="{slug}",
            labels={"trace": "{slug}", "item": "partition"},
        ),
    log:
        logs("partition/{slug}.log"),
    conda:
        ENV
    params:
        work_dir=folder_of("segments"),
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "partition --work-dir {params.work_dir:q} --report {output.report:q} {params.ladder} "
            "--denylist-env {params.denylist_env} > {log} 2>&1",
            "report-page {output.report:q} --out {output.html:q} >> {log} 2>&1",
            guard=per_trace_guard(),
        )
