# The cost-model dataset: ONE aggregate job over every trace publishes their kernel sources (read
# from each trace, scrubbed, so it needs the denylist) and builds the tables; a job per trace would
# cost far more in process start-up than in reading (benchmarks/README.md). A trace's new commit
# re-runs its ingest, which re-runs the build. Re-baselining comes from the ladder, so its thresholds
# are params: changing them re-runs the build.


rule dataset_build:
    input:
        unpack(targets_inputs),
        versions=per_trace(rules.ingest_trace.output.versions),
        meta=per_trace(rules.ingest_trace.output.meta),
        autotune=per_trace(rules.ingest_trace.output.autotune),
        traces=trace_sources,
        denylist=DENYLIST,
    output:
        measurements=results("dataset/measurements.parquet"),
        autotune=results("dataset/autotune.parquet"),
        runs=results("dataset/runs.parquet"),
        kernels=results("dataset/kernels.parquet"),
        readme=results("dataset/README.md"),
        html=report(
            results("dataset/README.html"),
            caption="../report/dataset.rst",
            category="Results",
            labels={"item": "dataset README"},
        ),
    log:
        logs("dataset/build.log"),
    benchmark:
        benchmarks("dataset/build.tsv")
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        work_dirs=input_folders("meta"),
        out_dir=folder_of("runs"),
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
    shell:
        optrace_shell(
            "dataset build {params.work_dirs:q} --traces {input.traces:q} --out-dir {params.out_dir:q} {params.ladder} "
            + TARGETS_FLAG
            + " --denylist-env {params.denylist_env} > {log} 2>&1",
            "report-page {output.readme:q} --out {output.html:q} >> {log} 2>&1",
            targets=TARGETS_DIGEST,
        )


# The split is its own job: a new fraction rewrites split.parquet and nothing else.
rule dataset_split:
    input:
        runs=rules.dataset_build.output.runs,
        measurements=rules.dataset_build.output.measurements,  # the samples it splits
        autotune=rules.dataset_build.output.autotune,
    output:
        split=results("dataset/split.parquet"),
    log:
        logs("dataset/split.log"),
    benchmark:
        benchmarks("dataset/split.tsv")
    conda:
        ENV
    params:
        dataset_dir=folder_of("split"),
        test_fraction=config["dataset"]["test_fraction"],
    shell:
        optrace_shell(
            "dataset split {params.dataset_dir:q} --test-fraction {params.test_fraction} > {log} 2>&1"
        )


# CSV copies are a separate job derived from the parquet files, so outputs stay static and flipping
# `dataset.csv` never rebuilds the parquet; the switch only decides whether the targets ask for them.
rule dataset_csv:
    input:
        measurements=rules.dataset_build.output.measurements,
        autotune=rules.dataset_build.output.autotune,
    output:
        measurements=results("dataset/measurements.csv"),
        autotune=results("dataset/autotune.csv"),
    log:
        logs("dataset/csv.log"),
    benchmark:
        benchmarks("dataset/csv.tsv")
    conda:
        ENV
    shell:
        optrace_shell(
            "dataset csv {input.measurements:q} {input.autotune:q} > {log} 2>&1"
        )


DATASET_TARGETS = [*rules.dataset_build.output, *rules.dataset_split.output] + (
    [*rules.dataset_csv.output] if config["dataset"]["csv"] else []
)
