# Distill: one job per trace turns its packets into records under distilled/{slug}/ (DESIGN §5).
# The records are deliberately NOT declared outputs: Snakemake must never delete an agent's records when
# a job fails, and a record written later must not make this job stale. Only the report is an output;
# the job skips every packet whose record already exists, so re-running it never rewrites a record.
# Agent mode runs up to {threads} batches at once (raise it with --set-threads distill_trace=N).


rule distill_trace:
    input:
        manifest=rules.packets_trace.output.manifest,
    output:
        report=f"{RESULTS}/staging/reports/{{slug}}/distill.json",
    params:
        mode=config["distill"]["mode"],
        command=lambda wildcards: config["distill"]["command"],  # a function: its {packet} is no wildcard
        batch_size=config["distill"]["batch_size"],
        guard=guard_args,
        code=code_digest("distill"),
    threads: 4 if config["distill"]["mode"] == "agent" else 1
    log:
        f"{RESULTS}/logs/distill/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- distill --packets {RESULTS}/packets/{wildcards.slug} --out {RESULTS} "
        "--report {output.report} --mode {params.mode} --command={params.command:q} "
        "--batch-size {params.batch_size} --jobs {threads} > {log} 2>&1"
