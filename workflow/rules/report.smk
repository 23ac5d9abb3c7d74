rule recon_trace:
    input:
        unpack(live_store_inputs),
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
        denylist=DENYLIST,
    output:
        md=reports("{slug}/recon.md"),
        html=report(
            reports("{slug}/recon.html"),
            caption="../report/recon.rst",
            category="Traces",
            subcategory="{slug}",
            labels={"trace": "{slug}", "item": "recon"},
        ),
        json=reports("{slug}/recon.json"),
        svg=report(
            reports("{slug}/ladder.svg"),
            caption="../report/ladder.rst",
            category="Traces",
            subcategory="{slug}",
            labels={"trace": "{slug}", "item": "ladder plot"},
        ),
    log:
        logs("recon/{slug}.log"),
    conda:
        ENV
    params:
        work_dir=input_folder("meta"),
        out_dir=folder_of("json"),
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "recon --work-dir {params.work_dir:q} --out-dir {params.out_dir:q} {params.ladder} "
            + LIVE_STORE_FLAG
            + " --denylist-env {params.denylist_env} > {log} 2>&1",
            "report-page {output.md:q} --out {output.html:q} >> {log} 2>&1",
            guard=per_trace_guard(),
        )
