rule recon_trace:
    input:
        unpack(live_store_inputs),
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
    output:
        md=report(f"{RESULTS}/staging/reports/{{slug}}/recon.md", caption="../report/recon.rst",
                  category="Traces", subcategory="{slug}", labels={"trace": "{slug}", "item": "recon"}),
        json=f"{RESULTS}/staging/reports/{{slug}}/recon.json",
        svg=report(f"{RESULTS}/staging/reports/{{slug}}/ladder.svg", caption="../report/ladder.rst",
                   category="Traces", subcategory="{slug}", labels={"trace": "{slug}", "item": "ladder plot"}),
    params:
        ladder=ladder_args(),
        live_store=live_store_arg,
        guard=guard_args,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("recon"),
    log:
        f"{RESULTS}/logs/recon/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- recon --work-dir {RESULTS}/work/{wildcards.slug} "
        "--out-dir {RESULTS}/staging/reports/{wildcards.slug} {params.ladder} "
        "{params.live_store} --denylist-env {params.denylist_env} > {log} 2>&1"
