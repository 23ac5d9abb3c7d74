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


# Named targets. Each prints the run summary (optrace.run.lifecycle) from the files it declares: per
# trace and in total, what was staged, what failed and why, where the results are. A target has no
# output, so it runs, and prints, on every invocation.
CHAIN = [
    rules.ingest_trace,
    rules.recon_trace,
    rules.partition_trace,
    rules.packets_trace,
    rules.distill_trace,
    rules.validate_trace,
]
STORE = dict(
    validation_summary=rules.validate_summary.output.summary,
    staged=rules.stage.output.summary,
    staging_readme=rules.readme.output.readme,
)
SUMMARY = optrace_shell("run-summary {params.summary} --log {log}")
TARGET_ENV = "workflow/envs/optrace.yaml"  # the rule files' ENV, named from the top


rule all:
    default_target: True
    input:
        **summary_inputs(CHAIN, **STORE, dataset=rules.dataset_build.output.readme),
        recon=per_trace(rules.recon_trace.output.md),
        records=local(rules.store_tree.output.records),
        dataset_files=DATASET_TARGETS,
    log:
        logs("summary/all.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(
            CHAIN,
            "strict: true" if config["strict"] else "",
            **STORE,
            dataset=rules.dataset_build.output.readme,
        ),
    shell:
        SUMMARY


# After an agent batch: re-validates the traces whose records changed, restages, rewrites the index
# and the README, and exits 1 when a record fails (or when there is no record at all).
rule validate:
    input:
        **summary_inputs(CHAIN, **STORE),
        records=local(rules.store_tree.output.records),
    log:
        logs("summary/validate.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(
            CHAIN,
            "strict: true" if config["strict"] else "`snakemake validate`",
            need_records=True,
            **STORE,
        ),
    shell:
        SUMMARY


rule ingest:
    input:
        **summary_inputs(CHAIN[:1]),
    log:
        logs("summary/ingest.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(CHAIN[:1]),
    shell:
        SUMMARY


rule recon:
    input:
        **summary_inputs(CHAIN[:2]),
        recon=per_trace(rules.recon_trace.output.md),
    log:
        logs("summary/recon.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(CHAIN[:2]),
    shell:
        SUMMARY


rule partition:
    input:
        **summary_inputs(CHAIN[:1]),
        segments=per_trace(rules.partition_trace.output.segments),
    log:
        logs("summary/partition.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(CHAIN[:1]),
    shell:
        SUMMARY


rule packets:
    input:
        **summary_inputs([CHAIN[0], CHAIN[3]]),
    log:
        logs("summary/packets.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args([CHAIN[0], CHAIN[3]]),
    shell:
        SUMMARY


rule distill:
    input:
        **summary_inputs([CHAIN[0], *CHAIN[3:5]]),
    log:
        logs("summary/distill.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args([CHAIN[0], *CHAIN[3:5]]),
    shell:
        SUMMARY


rule staging:
    input:
        **summary_inputs(CHAIN, **STORE),
        records=local(rules.store_tree.output.records),
    log:
        logs("summary/staging.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(CHAIN, **STORE),
    shell:
        SUMMARY


rule dataset:
    input:
        **summary_inputs(CHAIN[:1], dataset=rules.dataset_build.output.readme),
        dataset_files=DATASET_TARGETS,
    log:
        logs("summary/dataset.log"),
    localrule: True
    conda:
        TARGET_ENV
    params:
        summary=summary_args(CHAIN[:1], dataset=rules.dataset_build.output.readme),
    shell:
        SUMMARY


onstart:
    run_started()


onsuccess:
    run_ended()


onerror:
    run_failed(summary_args(CHAIN, **STORE, dataset=rules.dataset_build.output.readme))
