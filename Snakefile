# opt-trace-mining: GPU-kernel optimization traces -> validated knowledge records + a cost-model dataset.
# Thin on purpose: wiring lives in workflow/rules/*.smk, logic in the `optrace` package.
from snakemake.utils import min_version

min_version("9.23")


configfile: "config/config.yaml"


# `snakemake --report report.html`: the ladder plot, recon and partition reports of each trace and the
# staging and dataset READMEs, with the captions in workflow/report/.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# Slugs are made by optrace.run.families: lower-case, digits, dots and dashes.
wildcard_constraints:
    slug="[a-z0-9][a-z0-9.-]*",


include: "workflow/rules/ingest.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/partition.smk"
include: "workflow/rules/packets.smk"
include: "workflow/rules/distill.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/staging.smk"
include: "workflow/rules/dataset.smk"
include: "workflow/rules/admission.smk"


rule all:
    default_target: True
    input:
        per_trace(rules.recon_trace.output.md),
        rules.readme.output.readme,
        DATASET_TARGETS,


rule ingest:
    input:
        per_trace(rules.ingest_trace.output.meta),


rule recon:
    input:
        per_trace(rules.recon_trace.output.md),


rule partition:
    input:
        per_trace(rules.partition_trace.output.segments),


rule packets:
    input:
        per_trace(rules.packets_trace.output.manifest),


rule distill:
    input:
        per_trace(rules.distill_trace.output.report),


# After an agent batch: re-validates the traces whose records changed, restages, rewrites the index and
# the README; the run summary (onsuccess) then exits 1 when a record fails. No output, so nothing for
# Snakemake to delete or redo (see validate.smk); a command that does nothing, because a rule with
# neither output nor command is skipped when its inputs are up to date, and then no summary is printed.
rule validate:
    input:
        reports=per_trace(rules.validate_trace.output.report),
        summary=rules.validate_summary.output.summary,
        index=rules.stage.output.index,
        readme=rules.readme.output.readme,
    log:
        logs("validate.log"),
    localrule: True
    conda:
        "workflow/envs/optrace.yaml"
    shell:
        "true > {log}"


rule staging:
    input:
        rules.stage.output.index,
        rules.readme.output.readme,


rule dataset:
    input:
        DATASET_TARGETS,


# The run summary (optrace.run.summary): per trace and in total, what was staged, what failed and why, and
# where the results are. `strict: true` (or the `validate` target) turns a failing record into exit 1.
onsuccess:
    end_of_run()
    status = run_summary(run_failed=False)
    if status:
        raise SystemExit(status)


onerror:
    end_of_run()
    run_summary(run_failed=True)
