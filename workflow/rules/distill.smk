# Distill: one job per trace turns its packets into records under distilled/{slug}/.
# The records are deliberately NOT declared outputs: Snakemake must never delete an agent's records when
# a job fails, and a record written later must not make this job stale. The report and the drafts file
# (copies of the records, which travel to jobs that share no file system with this one) are the outputs;
# the job skips every packet whose record already exists, so re-running it never rewrites a record.
# A record distill wrote and someone deleted changes its `deleted` input (deleted_records_marker), so
# the next run drafts (or asks the agent for) exactly the packets without a record.
# Agent mode runs up to {threads} batches at once (raise it with --set-threads distill_trace=N).


rule distill_trace:
    input:
        packets=rules.packets_trace.output.packets,
        meta=rules.ingest_trace.output.meta,  # the guard reads it: a failed trace is passed on
        deleted=deleted_records_marker,
    output:
        report=reports("{slug}/distill.json"),
        # copies of the records its packets have, for jobs that cannot see distilled/ (optrace.distill.records)
        drafts=work("{slug}/drafts.json"),
    log:
        logs("distill/{slug}.log"),
    conda:
        ENV
    threads: 4 if config["distill"]["mode"] == "agent" else 1
    resources:
        runtime=120 if config["distill"]["mode"] == "agent" else 10,
    params:
        records_root=records_root,  # records go to <root>/distilled/{slug}/ (never outputs)
        mode=config["distill"]["mode"],
        command=distill_command,
        batch_size=config["distill"]["batch_size"],
    shell:
        optrace_shell(
            "distill --packets {input.packets:q} --out {params.records_root:q} --report {output.report:q} "
            "--drafts {output.drafts:q} "
            "--mode {params.mode} --command={params.command:q} --batch-size {params.batch_size} --jobs {threads} "
            "2>&1 | tee {log}",
            guard=per_trace_guard(),
        )
