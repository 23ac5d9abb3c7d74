# The cost-model dataset: ONE aggregate job over every trace's ingest outputs (DESIGN §4, §5).
# Re-baselining comes from the ladder, so its thresholds are params: changing them re-runs this job.


rule dataset_build:
    input:
        versions=per_trace(rules.ingest_trace.output.versions),
        meta=per_trace(rules.ingest_trace.output.meta),
        autotune=per_trace(rules.ingest_trace.output.autotune),
    output:
        measurements=f"{RESULTS}/dataset/measurements.parquet",
        runs=f"{RESULTS}/dataset/runs.jsonl",
        autotune=f"{RESULTS}/dataset/autotune.parquet",
        readme=report(f"{RESULTS}/dataset/README.md", caption="../report/dataset.rst", category="Results",
                      labels={"item": "dataset README"}),
    params:
        work_dirs=per_trace(f"{RESULTS}/work/{{slug}}"),
        ladder=ladder_args(),
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/build.log",
    benchmark:
        f"{RESULTS}/benchmarks/dataset/build.tsv"
    shell:
        "{PY} -m optrace dataset build {params.work_dirs:q} --out-dir {RESULTS}/dataset {params.ladder} "
        "> {log} 2>&1"


# CSV copies are a separate job derived from the parquet files, so outputs stay static and flipping
# `dataset.csv` never rebuilds the parquet; the switch only decides whether the targets ask for them.
rule dataset_csv:
    input:
        measurements=rules.dataset_build.output.measurements,
        autotune=rules.dataset_build.output.autotune,
    output:
        measurements=f"{RESULTS}/dataset/measurements.csv",
        autotune=f"{RESULTS}/dataset/autotune.csv",
    params:
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/csv.log",
    benchmark:
        f"{RESULTS}/benchmarks/dataset/csv.tsv"
    shell:
        "{PY} -m optrace dataset csv {input.measurements:q} {input.autotune:q} > {log} 2>&1"


DATASET_TARGETS = [*rules.dataset_build.output] + ([*rules.dataset_csv.output] if config["dataset"]["csv"] else [])
