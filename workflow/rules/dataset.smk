# The cost-model dataset: one job per trace publishes its kernel sources (scrubbed,
# so it needs the denylist), then ONE aggregate job over every trace builds the tables.
# Re-baselining comes from the ladder, so its thresholds are params: changing them re-runs the build.


rule dataset_sources:
    input:
        unpack(trace_inputs),
        versions=rules.ingest_trace.output.versions,
    output:
        sources=work("{slug}/sources.json"),
    log:
        logs("dataset/sources/{slug}.log"),
    benchmark:
        benchmarks("dataset/sources/{slug}.tsv")
    conda:
        ENV
    params:
        guard=guarded,
        trace=trace_path,
        work_dir=folder_of("sources"),
        fingerprint=trace_fingerprint,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("dataset"),
    shell:
        "{params.guard} dataset sources {params.trace:q} --work-dir {params.work_dir:q} "
        "--denylist-env {params.denylist_env} > {log} 2>&1"


rule dataset_build:
    input:
        versions=per_trace(rules.ingest_trace.output.versions),
        meta=per_trace(rules.ingest_trace.output.meta),
        autotune=per_trace(rules.ingest_trace.output.autotune),
        sources=per_trace(rules.dataset_sources.output.sources),
        targets=TARGETS,
    output:
        measurements=results("dataset/measurements.parquet"),
        autotune=results("dataset/autotune.parquet"),
        runs=results("dataset/runs.parquet"),
        kernels=results("dataset/kernels.parquet"),
        readme=report(
            results("dataset/README.md"),
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
    params:
        optrace=OPTRACE,
        work_dirs=lambda wildcards, input: [str(Path(m).parent) for m in input.meta],
        out_dir=folder_of("runs"),
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("dataset"),
    shell:
        "{params.optrace} dataset build {params.work_dirs:q} --out-dir {params.out_dir:q} {params.ladder} "
        "--targets {input.targets:q} --denylist-env {params.denylist_env} > {log} 2>&1"


# The split is its own job: a new fraction rewrites split.parquet and nothing else.
rule dataset_split:
    input:
        runs=rules.dataset_build.output.runs,
    output:
        split=results("dataset/split.parquet"),
    log:
        logs("dataset/split.log"),
    benchmark:
        benchmarks("dataset/split.tsv")
    conda:
        ENV
    params:
        optrace=OPTRACE,
        dataset_dir=folder_of("split"),
        test_fraction=config["dataset"]["test_fraction"],
        code=code_digest("dataset"),
    shell:
        "{params.optrace} dataset split {params.dataset_dir:q} --test-fraction {params.test_fraction} > {log} 2>&1"


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
    params:
        optrace=OPTRACE,
        code=code_digest("dataset"),
    shell:
        "{params.optrace} dataset csv {input.measurements:q} {input.autotune:q} > {log} 2>&1"


DATASET_TARGETS = [*rules.dataset_build.output, *rules.dataset_split.output] + (
    [*rules.dataset_csv.output] if config["dataset"]["csv"] else []
)
