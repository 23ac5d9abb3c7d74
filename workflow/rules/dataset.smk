# The cost-model dataset (DESIGN §4, §5): one job per trace publishes its kernel sources (scrubbed,
# so it needs the denylist), then ONE aggregate job over every trace builds the tables.
# Re-baselining comes from the ladder, so its thresholds are params: changing them re-runs the build.


rule dataset_sources:
    input:
        unpack(trace_inputs),
        versions=rules.ingest_trace.output.versions,
    output:
        sources=f"{RESULTS}/work/{{slug}}/sources.json",
    params:
        trace=trace_path,
        fingerprint=trace_fingerprint,
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        guard=guard_args,
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/sources/{{slug}}.log",
    shell:
        "{PY} -m optrace.pertrace {params.guard} -- dataset sources {params.trace:q} --work-dir {RESULTS}/work/{wildcards.slug} "
        "--denylist-env {params.denylist_env} > {log} 2>&1"


rule dataset_build:
    input:
        versions=per_trace(rules.ingest_trace.output.versions),
        meta=per_trace(rules.ingest_trace.output.meta),
        autotune=per_trace(rules.ingest_trace.output.autotune),
        sources=per_trace(rules.dataset_sources.output.sources),
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
        ladder=ladder_args(),
        denylist_env=config["denylist_env"],
        denylist=denylist_digest(),
        code=code_digest("dataset"),
    log:
        f"{RESULTS}/logs/dataset/build.log",
    benchmark:
        f"{RESULTS}/benchmarks/dataset/build.tsv"
    shell:
        "{PY} -m optrace dataset build {params.work_dirs:q} --out-dir {RESULTS}/dataset {params.ladder} "
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
