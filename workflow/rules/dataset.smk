# The cost-model dataset (DESIGN §4, §5): ONE aggregate job over every trace publishes their kernel
# sources (read from each trace, scrubbed, so it needs the denylist) and builds the tables. The sources
# were a job per trace once: ~90 ms of process for ~5 ms of reading (benchmarks/README.md). A trace's new
# commit re-runs its ingest, which re-runs the build. Re-baselining comes from the ladder, so its
# thresholds are params: changing them re-runs the build.


def all_trace_inputs(wildcards):
    return sorted({p for p in map(tracked_trace, TRACES.values()) if p})


rule dataset_build:
    input:
        versions=per_trace(rules.ingest_trace.output.versions),
        meta=per_trace(rules.ingest_trace.output.meta),
        autotune=per_trace(rules.ingest_trace.output.autotune),
        traces=all_trace_inputs,
        targets=config["targets"],
    output:
        measurements=f"{RESULTS}/dataset/measurements.parquet",
        autotune=f"{RESULTS}/dataset/autotune.parquet",
        runs=f"{RESULTS}/dataset/runs.parquet",
        kernels=f"{RESULTS}/dataset/kernels.parquet",
        readme=report(f"{RESULTS}/dataset/README.md", caption="../report/dataset.rst", category="Results",
                      labels={"item": "dataset README"}),
    params:
        work_dirs=per_trace(f"{RESULTS}/work/{{slug}}"),
        traces=[TRACES[slug].path for slug in SLUGS],
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/build.log",
    benchmark:
        f"{RESULTS}/benchmarks/dataset/build.tsv"
    shell:
        "{PY} -m optrace dataset build {params.work_dirs:q} --traces {params.traces:q} --out-dir {RESULTS}/dataset {params.ladder} "
        "--targets {input.targets:q} --denylist-env {params.denylist_env} > {log} 2>&1"


# The split is its own job: a new fraction rewrites split.parquet and nothing else.
rule dataset_split:
    input:
        runs=rules.dataset_build.output.runs,
    output:
        split=f"{RESULTS}/dataset/split.parquet",
    params:
        test_fraction=config["dataset"]["test_fraction"],
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/split.log",
    benchmark:
        f"{RESULTS}/benchmarks/dataset/split.tsv"
    shell:
        "{PY} -m optrace dataset split {RESULTS}/dataset --test-fraction {params.test_fraction} > {log} 2>&1"


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


DATASET_TARGETS = [*rules.dataset_build.output, *rules.dataset_split.output] + (
    [*rules.dataset_csv.output] if config["dataset"]["csv"] else []
)
