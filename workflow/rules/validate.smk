# Validate: one job per trace runs all 17 gates over its distilled records.
#
# The records are not inputs (distill does not declare them, and an agent may write them at any time):
# a digest of their names, sizes and mtimes is a param (distilled_digest, common.smk), so a new or
# changed record re-runs this trace's validation and nothing else. The job also reads distill's drafts
# file (copies of the records it wrote), so a job that cannot see distilled/ judges them too; a record in
# distilled/ comes first. Every other file the job reads is a declared input, named to it (no results root). The job keeps no verdict cache (`optrace validate trace
# --results` by hand does): as an output Snakemake would delete it before the very re-run it exists for,
# and the job per trace already re-judges only the trace whose records changed.
#
# A trace's job exits 0 when records fail (failing records are data), so every report gets written.
# validate_summary merges them and adds the overlaps across traces; it also always succeeds, so its
# output stays up to date and nothing is re-run for it. Failing is the job of the output-less target
# rule `validate` (Snakefile): it runs whenever it is asked for, prints the summary and exits 1 when a
# record fails, and has no output for Snakemake to delete or to find missing on the next run.


rule validate_trace:
    input:
        unpack(live_store_inputs),
        packets=rules.packets_trace.output.packets,
        distill=rules.distill_trace.output.report,
        drafts=rules.distill_trace.output.drafts,
        versions=rules.ingest_trace.output.versions,
        profiles=rules.ingest_trace.output.profiles,
        meta=rules.ingest_trace.output.meta,
        denylist=DENYLIST,
    output:
        report=reports("{slug}/validation.json"),
    log:
        logs("validate/{slug}.log"),
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        distilled=distilled_folder,
        records=distilled_digest,
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "validate trace --slug {wildcards.slug} --distilled {params.distilled:q} --drafts {input.drafts:q} "
            "--packets {input.packets:q} --versions {input.versions:q} --profiles {input.profiles:q} "
            "--meta {input.meta:q} --out {output.report:q} "
            + LIVE_STORE_FLAG
            + " --denylist-env {params.denylist_env} > {log} 2>&1",
            guard=per_trace_guard(),
        )


rule validate_summary:
    input:
        reports=per_trace(rules.validate_trace.output.report),
    output:
        summary=reports("validation-summary.json"),
    log:
        logs("validate/summary.log"),
    benchmark:
        benchmarks("validate/summary.tsv")
    localrule: True
    conda:
        ENV
    shell:
        optrace_shell(
            "validate summary {input.reports:q} --out {output.summary:q} > {log} 2>&1"
        )
