"""The cost-model dataset (issue 6 items 2-3): only genuine measurements, content-derived run_id,
the autotune join, byte-identical re-runs, plain-pandas readability and a real `snakemake dataset`."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import tracekit
from conftest import ROOT, assert_valid
from optrace.dataset import AUTOTUNE_SCHEMA, MEASUREMENTS_SCHEMA, TraceInput, build, main
from optrace.errors import InputError
from optrace.hardware import HardwareTable
from optrace.ingest import DEFAULT_NON_TARGET, Overrides, ingest
from optrace.jsonio import write_json, write_jsonl
from optrace.ladder import Thresholds
from optrace.tracebuild import CommitSpec, build_trace
from conftest import run_snakemake as snakemake

TABLE = HardwareTable.load(ROOT / "config" / "targets.yaml")
AUTOTUNE_FIXTURE = Path(__file__).resolve().parents[1] / "resources" / "example_trace"  # holds autotune/ci/
OUTPUTS = ("measurements.parquet", "runs.jsonl", "autotune.parquet", "README.md")


def ingested(path: Path, over: Overrides = Overrides()) -> TraceInput:
    rows, _, meta, autotune = ingest(path, label=None, table=TABLE, over=over, non_target=DEFAULT_NON_TARGET)
    return TraceInput(meta, rows, autotune)


def autotune_files() -> dict[str, str]:
    """The example's autotune pair, as untracked files of a trace (Helion writes them beside the run)."""
    return {str(p.relative_to(AUTOTUNE_FIXTURE)): p.read_text()
            for p in sorted((AUTOTUNE_FIXTURE / "autotune").rglob("*")) if p.is_file()}


def measured(ds) -> set[tuple[str, str]]:
    return {(m["trace"], m["version"]) for m in ds.measurements}


def failing_trace(dest: Path) -> Path:
    """Every kind of non-genuine number, each on a version whose kernel.py did change."""
    k, m = tracekit.kernel, tracekit.memory
    incomplete = {"measurement_status": "not_evaluated_or_incomplete"}
    build_trace(dest, [
        CommitSpec("V0: baseline", {"kernel.py": k(0), "memory/v0.json": m(0, 100.0), **tracekit.meta_files()}),
        CommitSpec("v1: committed (+10.0%)", {"kernel.py": k(1), "memory/v1.json": m(1, 90.0, correctness={
            "status": "FAIL", "max_abs_err": 0.5, "max_rel_err": None})}),
        CommitSpec("v2: committed (+15.0%)", {"kernel.py": k(2), "memory/v2.json": m(2, 85.0, quality_gate={
            "result": "FAIL", "failure_reason": "slower than reference"})}),
        CommitSpec("v3: committed (+20.0%)", {"kernel.py": k(3), "memory/v3.json": m(3, 0)}),
        CommitSpec("v4: committed (+20.0%)", {"kernel.py": k(4), "memory/v4.json": m(4, float("nan"))}),
        CommitSpec("v5: committed (+90.0%), re-baseline on smaller workloads", {"kernel.py": k(5),
                                                                                 "memory/v5.json": m(5, 10.0)}),
        CommitSpec("v6: committed (+5.0%)", {"kernel.py": k(6), "memory/v6.json": m(6, 9.5)}),
        CommitSpec("v7: committed (+1.0%)", {"kernel.py": k(7), "memory/v7.json": m(
            7, 9.4, performance={"carried_from_version": "v6"})}),
        CommitSpec("v8: committed (+2.0%)", {"kernel.py": k(8), "memory/v8.json": m(8, 9.0, performance=incomplete)}),
        CommitSpec("v9: committed (+3.0%)", {"kernel.py": k(9), "memory/v9.json": m(
            9, 9.2, performance={"latency_us_by_shape": {}})}),
    ])
    return dest


def test_failed_carried_incomplete_and_rebaselined_numbers_never_appear(tmp_path):
    t = ingested(failing_trace(tmp_path / "kernel_opt_030_fail"))
    ds = build([t], Thresholds())
    assert measured(ds) == {("kernel_opt_030_fail", "v0"), ("kernel_opt_030_fail", "v6")}
    assert dict(ds.summaries["kernel_opt_030_fail"].excluded) == {
        "failed_correctness": 1, "gate_failed": 1, "no_number": 3, "rebaseline": 1, "carried_forward": 1,
        "geomean_only": 1}
    assert sorted(m["latency_us"] for m in ds.measurements) == [4.75, 19.0, 50.0, 200.0]
    # the re-baseline is the ladder's call, from evidence (here the run's own text), not from the factor
    assert ("kernel_opt_030_fail", "v5") not in measured(build([t], Thresholds(rebaseline_factor=20.0)))


def test_versions_that_did_not_commit_their_kernel_are_excluded(tmp_path):
    # iteration era: v2, v3, v6 are reverted without touching kernel.py; their numbers measured code
    # that never reached the history, so attaching them to the incumbent's blob would mislabel them
    tracekit.iteration_era(tmp_path / "kernel_opt_031_iter")
    ds = build([ingested(tmp_path / "kernel_opt_031_iter")], Thresholds())
    assert {v for _, v in measured(ds)} == {"v0", "v1", "v4", "v5"}
    assert ds.summaries["kernel_opt_031_iter"].excluded == {"uncommitted_kernel": 3}


def recipe_run_id(line: dict) -> str:
    fields = ["optrace.trace-run.v1", line["kernel_blob"], line["shape"], line["vendor"], line["arch"],
              line["product"], line["dsl"]]
    return hashlib.sha256("\x00".join(fields).encode()).hexdigest()


def test_run_id_is_content_derived_and_shared_across_traces(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_040_a")
    tracekit.iteration_era(tmp_path / "kernel_opt_041_b")
    a, b = ingested(tmp_path / "kernel_opt_040_a"), ingested(tmp_path / "kernel_opt_041_b")
    ds = build([a, b], Thresholds())
    assert_valid(ds.runs, "runs.schema.json")
    runs = {r["run_id"]: r for r in ds.runs}
    assert len(runs) == len(ds.runs)  # one line per run_id
    for line in ds.runs:
        assert line["run_id"] == recipe_run_id(line)
    # both traces start from the same kernel blob on the same shapes and GPU: one run, two samples
    v0 = {m["run_id"] for m in ds.measurements if m["version"] == "v0"}
    assert len(v0) == 2 and all({m["trace"] for m in ds.measurements if m["run_id"] == r} ==
                                {"kernel_opt_040_a", "kernel_opt_041_b"} for r in v0)
    assert {runs[r]["axes"]["hidden"] for r in v0} == {4096}
    # V3 reverts to V1's kernel: same run, verdicts differ, so the verdict lives on the sample row
    samples = [(m["version"], m["verdict"]) for m in ds.measurements if m["trace"] == "kernel_opt_040_a"
               and runs[m["run_id"]]["kernel_blob"] == next(v["kernel_blob"] for v in a.versions if v["version"] == "v1")]
    assert sorted(samples) == [("v1", "kept"), ("v1", "kept"), ("v3", "reverted"), ("v3", "reverted")]
    # same input, same ids; another GPU, other ids
    assert build([b, a], Thresholds()).runs == ds.runs
    on_a100 = build([ingested(tmp_path / "kernel_opt_040_a", Overrides(hardware="A100"))], Thresholds())
    assert not {r["run_id"] for r in on_a100.runs} & set(runs)


def test_context_outside_the_hash_that_disagrees_is_named(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_042_a")
    a = ingested(tmp_path / "kernel_opt_042_a")
    b_meta = {**a.meta, "source_label": "kernel_opt_043_b", "slug": "043-b", "axes": {"const": {"hidden": 8192}, "var": []}}
    ds = build([TraceInput(b_meta, a.versions, []), a], Thresholds())
    assert ds.conflicts and all("axes differ between kernel_opt_042_a and kernel_opt_043_b" in c for c in ds.conflicts)
    assert {r["axes"]["hidden"] for r in ds.runs} == {4096}  # the first label's context is kept


def test_autotune_rows_join_and_their_context_goes_to_runs(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_044_tuned", untracked=autotune_files())
    t = ingested(tmp_path / "kernel_opt_044_tuned")
    ds = build([t], Thresholds())
    assert len(ds.autotune) == len(t.autotune) == 9
    tuned = [r for r in ds.runs if r["source"] == "helion-autotune"]
    assert {r["run_id"] for r in tuned} == {r["run_id"] for r in ds.autotune} and len(tuned) == 2
    assert {r["kernel_name"] for r in tuned} == {"mul"}
    assert_valid(ds.runs, "runs.schema.json")
    # lean: the only column shared between a table and its sidecar is the join key
    assert set(AUTOTUNE_SCHEMA.names) & set(tuned[0]) == {"run_id"}
    trace_runs = [r for r in ds.runs if r["source"] == "trace"]
    assert set(MEASUREMENTS_SCHEMA.names) & set(trace_runs[0]) == {"run_id"}
    assert ds.autotune == sorted(ds.autotune, key=lambda r: (r["run_id"], r["generation"], r["config_id"]))
    ok = [r for r in ds.autotune if r["status"] in ("ok", "deduplicated")]
    assert ok and all(r["perf_ms"] > 0 for r in ok)
    assert all(hashlib.sha256(r["config"].encode()).hexdigest()[:16] == r["config_id"] for r in ds.autotune)


def write_work(root: Path, t: TraceInput) -> Path:
    d = root / t.meta["slug"]
    write_jsonl(d / "versions.jsonl", t.versions)
    write_jsonl(d / "autotune.jsonl", t.autotune)
    write_json(d / "meta.json", t.meta)
    return d


def test_rerun_is_byte_identical_and_readable_with_plain_pandas(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_050_tuned", untracked=autotune_files())
    failing_trace(tmp_path / "kernel_opt_051_fail")
    dirs = [write_work(tmp_path / "work", ingested(tmp_path / n)) for n in ("kernel_opt_050_tuned", "kernel_opt_051_fail")]
    assert main(["build", *map(str, dirs), "--out-dir", str(tmp_path / "one")]) == 0
    assert main(["build", *map(str, reversed(dirs)), "--out-dir", str(tmp_path / "two")]) == 0
    for name in OUTPUTS:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    one = tmp_path / "one"
    measurements = pd.read_parquet(one / "measurements.parquet")
    assert list(measurements.columns) == MEASUREMENTS_SCHEMA.names and len(measurements) == 12
    assert b"pandas" not in (pq.read_schema(one / "measurements.parquet").metadata or {})
    assert list(pd.read_parquet(one / "autotune.parquet").columns) == AUTOTUNE_SCHEMA.names
    readme = (one / "README.md").read_text()
    assert "| kernel_opt_051_fail | 10 | 2 | 4 |" in readme and "`rebaseline`" in readme
    # the README's join recipe runs as written
    recipe = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    scope: dict = {}
    cwd = os.getcwd()
    try:
        os.chdir(one)
        exec(recipe, scope)
    finally:
        os.chdir(cwd)
    assert len(scope["samples"]) == 12 and scope["samples"]["kernel_blob"].notna().all()
    assert len(scope["tuning"]) == 9 and isinstance(scope["tuning"]["config"].iloc[0], dict)
    # CSV copies: deterministic too
    assert main(["csv", str(one / "measurements.parquet"), str(tmp_path / "two" / "measurements.parquet")]) == 0
    assert (one / "measurements.csv").read_bytes() == (tmp_path / "two" / "measurements.csv").read_bytes()
    assert len(pd.read_csv(one / "measurements.csv")) == 12


def test_two_traces_with_one_label_are_refused(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_060_a")
    a = ingested(tmp_path / "kernel_opt_060_a")
    with pytest.raises(InputError, match="share this label"):
        build([a, a], Thresholds())


@pytest.mark.workflow
def test_snakemake_dataset_on_a_trace_with_autotune(workdir, tmp_path):  # noqa: F811
    trace = tmp_path / "kernel_opt_070_tuned"
    tracekit.iteration_era(trace, untracked=autotune_files())
    # a YAML file, not `--config dataset={csv: true}`: Snakemake hands nested --config values over as strings
    extra = tmp_path / "csv.yaml"
    extra.write_text("dataset:\n  csv: true\n")
    args = ("--configfile", str(extra), "--config", f"trace={trace}")
    snakemake(workdir, "dataset", *args)
    out = workdir / "results" / "dataset"
    for name in (*OUTPUTS, "measurements.csv", "autotune.csv"):
        assert (out / name).stat().st_size > 0, name
    autotune = pd.read_parquet(out / "autotune.parquet")
    assert len(autotune) == 9 and set(autotune["status"]) >= {"ok", "error"}
    assert len(pd.read_parquet(out / "measurements.parquet")) == 8
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert_valid(runs, "runs.schema.json")
    assert {r["source"] for r in runs} == {"trace", "helion-autotune"}
    again = snakemake(workdir, "-n", "dataset", *args)
    assert "Nothing to be done" in again.stdout + again.stderr
