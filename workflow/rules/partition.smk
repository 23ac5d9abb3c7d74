rule partition_trace:
    input:
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
    output:
        segments=f"{RESULTS}/work/{{slug}}/segments.jsonl",
        report=report(f"{RESULTS}/staging/reports/{{slug}}/partition.md", caption="../report/partition.rst",
                      category="Traces", subcategory="{slug}", labels={"trace": "{slug}", "item": "partition"}),
    params:
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        guard=guard_args,
        code=code_digest("partition"),
    log:
        f"{RESULTS}/logs/partition/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- partition --work-dir {RESULTS}/work/{wildcards.slug} --report {output.report} "
        "{params.ladder} --denylist-env {params.denylist_env} > {log} 2>&1"
