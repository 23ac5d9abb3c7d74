"""The cost-model dataset (issues 6, 18, 15 item 8): only genuine measurements, content-derived keys,
published (scrubbed) kernel sources, typed context, a split by group, a loader, and the whole contract
on a sheet of three realistic traces through a real `snakemake dataset`."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from optrace.dataset.build import main, write_dataset
from optrace.dataset.columns import AXIS_PREFIX, FILES, HELION_DSL, column_names
from optrace.dataset.files import read_trace
from optrace.dataset.loader import load, sample_columns
from optrace.dataset.sources import git_blob_id, trace_sources
from optrace.dataset.split import report_lines, split_groups, split_report
from optrace.dataset.tables import TraceInput, build
from optrace.errors import InputError
from optrace.example.embedded import EXAMPLE_DIR, build_example
from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.ingest.hardware import HardwareTable
from optrace.ingest.ingest import DEFAULT_NON_TARGET, Overrides, ingest
from optrace.jsonio import write_json, write_jsonl
from optrace.mine.ladder import Thresholds
from optrace.scrub.anonymize import Scrubber
from tests.support import tracekit
from tests.support.paths import ROOT, SHARED_DATA
from tests.support.workflow import only_the_target_ran
from tests.support.workflow import run_snakemake as snakemake

TABLE = HardwareTable.load()
BUILT = ("measurements", "autotune", "runs", "kernels")
OUTPUTS = (*(FILES[n] for n in BUILT), "README.md")
SAMPLES = SHARED_DATA / "samples"


def ingested(path: Path, over: Overrides = Overrides(), scrubber: Scrubber | None = None) -> TraceInput:
    rows, _, meta, autotune = ingest(path, label=None, table=TABLE, over=over, non_target=DEFAULT_NON_TARGET)
    return TraceInput(meta, rows, autotune, trace_sources(path, rows, scrubber or Scrubber()))


def autotune_files() -> dict[str, str]:
    """The example's autotune pair, as untracked files of a trace (Helion writes them beside the run)."""
    return {
        str(p.relative_to(EXAMPLE_DIR)): p.read_text()
        for p in sorted((EXAMPLE_DIR / "autotune").rglob("*"))
        if p.is_file()
    }


def measured(ds) -> set[tuple[str, int]]:
    return {(m["trace"], m["version"]) for m in ds.tables["measurements"]}


def failing_trace(dest: Path) -> Path:
    """Every kind of non-genuine number, each on a version whose kernel.py did change."""
    k, m = tracekit.kernel, tracekit.memory
    incomplete = {"measurement_status": "not_evaluated_or_incomplete"}
    build_trace(
        dest,
        [
            CommitSpec("V0: baseline", {"kernel.py": k(0), "memory/v0.json": m(0, 100.0), **tracekit.meta_files()}),
            CommitSpec(
                "v1: committed (+10.0%)",
                {
                    "kernel.py": k(1),
                    "memory/v1.json": m(
                        1, 90.0, correctness={"status": "FAIL", "max_abs_err": 0.5, "max_rel_err": None}
                    ),
                },
            ),
            CommitSpec(
                "v2: committed (+15.0%)",
                {
                    "kernel.py": k(2),
                    "memory/v2.json": m(
                        2, 85.0, quality_gate={"result": "FAIL", "failure_reason": "slower than reference"}
                    ),
                },
            ),
            CommitSpec("v3: committed (+20.0%)", {"kernel.py": k(3), "memory/v3.json": m(3, 0)}),
            CommitSpec("v4: committed (+20.0%)", {"kernel.py": k(4), "memory/v4.json": m(4, float("nan"))}),
            CommitSpec(
                "v5: committed (+90.0%), re-baseline on smaller workloads",
                {"kernel.py": k(5), "memory/v5.json": m(5, 10.0)},
            ),
            CommitSpec("v6: committed (+5.0%)", {"kernel.py": k(6), "memory/v6.json": m(6, 9.5)}),
            CommitSpec(
                "v7: committed (+1.0%)",
                {"kernel.py": k(7), "memory/v7.json": m(7, 9.4, performance={"carried_from_version": "v6"})},
            ),
            CommitSpec(
                "v8: committed (+2.0%)", {"kernel.py": k(8), "memory/v8.json": m(8, 9.0, performance=incomplete)}
            ),
            CommitSpec(
                "v9: committed (+3.0%)",
                {"kernel.py": k(9), "memory/v9.json": m(9, 9.2, performance={"latency_us_by_shape": {}})},
            ),
        ],
    )
    return dest


def test_failed_carried_incomplete_and_rebaselined_numbers_never_appear(tmp_path):
    t = ingested(failing_trace(tmp_path / "kernel_opt_030_fail"))
    ds = build([t], Thresholds())
    assert measured(ds) == {("kernel_opt_030_fail", 0), ("kernel_opt_030_fail", 6)}
    assert dict(ds.summaries["kernel_opt_030_fail"].excluded) == {
        "failed_correctness": 1,
        "gate_failed": 1,
        "no_number": 3,
        "rebaseline": 1,
        "carried_forward": 1,
        "geomean_only": 1,
    }
    assert sorted(m["latency_us"] for m in ds.tables["measurements"]) == [4.75, 19.0, 50.0, 200.0]
    # the re-baseline is the ladder's call, from evidence (here the run's own text), not from the factor
    assert ("kernel_opt_030_fail", 5) not in measured(build([t], Thresholds(rebaseline_factor=20.0)))


def test_versions_that_did_not_commit_their_kernel_are_excluded(tmp_path):
    # iteration era: v2, v3, v6 are reverted without touching kernel.py; their numbers measured code
    # that never reached the history, so attaching them to the incumbent's blob would mislabel them
    tracekit.iteration_era(tmp_path / "kernel_opt_031_iter")
    ds = build([ingested(tmp_path / "kernel_opt_031_iter")], Thresholds())
    assert {v for _, v in measured(ds)} == {0, 1, 4, 5}
    assert ds.summaries["kernel_opt_031_iter"].excluded == {"uncommitted_kernel": 3}


def recipe_ids(run: dict, dsl: str, sample: dict) -> tuple[str, str]:
    """(run_id, problem_id) as the README's Keys section states them."""
    problem = [run["kernel_blob"], run["shape"], run["vendor"], run["arch"], run["product"], dsl]
    run_fields = ["optrace.trace-run.v3", *problem, sample["trace"], str(sample["version"])]
    problem_fields = ["optrace.trace-problem.v1", *problem]
    return tuple(hashlib.sha256("\x00".join(f).encode()).hexdigest() for f in (run_fields, problem_fields))


def git_rev(repo: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_run_id_is_one_measured_run_and_problem_id_is_shared_across_traces(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_040_a")
    tracekit.iteration_era(tmp_path / "kernel_opt_041_b")
    a, b = ingested(tmp_path / "kernel_opt_040_a"), ingested(tmp_path / "kernel_opt_041_b")
    ds = build([a, b], Thresholds())
    runs = {r["run_id"]: r for r in ds.tables["runs"]}
    kernels = {k["kernel_blob"]: k for k in ds.tables["kernels"]}
    samples = ds.tables["measurements"]
    # #26: one run per measured (trace, version, shape): no run_id is shared by two samples
    assert len(runs) == len(ds.tables["runs"]) == len(samples) == len({m["run_id"] for m in samples})
    for m in samples:
        r = runs[m["run_id"]]
        assert (r["run_id"], r["problem_id"]) == recipe_ids(r, kernels[r["kernel_blob"]]["dsl"], m)
        assert r["shape"].startswith("softmax_h4096:") and r["group"] == "softmax/h100"
        assert (r["axis_hidden"], r["axis_batch_size"], r["compute_capability"]) == (4096, 8, "sm_90")
    # both traces start from the same kernel blob on the same shapes and GPU: two runs of one problem
    v0 = [m for m in samples if m["version"] == 0]
    assert len(v0) == 4 and len({m["run_id"] for m in v0}) == 4
    by_problem: dict = {}
    for m in v0:
        by_problem.setdefault(runs[m["run_id"]]["problem_id"], set()).add(m["trace"])
    assert list(by_problem.values()) == [{"kernel_opt_040_a", "kernel_opt_041_b"}] * 2
    # nothing to scrub in these sources: the key is the trace's own blob id, and the text its content
    head_blob = git_rev(tmp_path / "kernel_opt_040_a", "HEAD~3:kernel.py")
    assert runs[v0[0]["run_id"]]["kernel_blob"] == head_blob
    assert all(git_blob_id(k["source_text"].encode()) == k["kernel_blob"] for k in kernels.values())
    # V3 reverts to V1's kernel with another latency: runs of their own, one problem per shape
    v1_blob = next(v["kernel_blob"] for v in a.versions if v["version"] == "v1")
    restored = [m for m in samples if m["trace"] == "kernel_opt_040_a" and runs[m["run_id"]]["kernel_blob"] == v1_blob]
    assert sorted((m["version"], m["verdict"]) for m in restored) == [
        (1, "kept"),
        (1, "kept"),
        (3, "reverted"),
        (3, "reverted"),
    ]
    assert len({m["run_id"] for m in restored}) == 4 and len({runs[m["run_id"]]["problem_id"] for m in restored}) == 2
    assert {m["latency_us"] for m in restored if m["version"] == 1}.isdisjoint(
        m["latency_us"] for m in restored if m["version"] == 3
    )
    # same input, same ids; another GPU, other ids
    assert build([b, a], Thresholds()).tables == ds.tables
    on_a100 = build([ingested(tmp_path / "kernel_opt_040_a", Overrides(hardware="A100"))], Thresholds())
    assert not {r["problem_id"] for r in on_a100.tables["runs"]} & {r["problem_id"] for r in runs.values()}


def test_shape_keys_are_namespaced_by_definition(tmp_path):
    # two definitions that use the same workload uuids and the same kernel on the same GPU: without the
    # definition in the shape key their runs (and axes) would collide
    tracekit.skill_era(tmp_path / "kernel_opt_042_a")
    a = ingested(tmp_path / "kernel_opt_042_a")
    b_meta = {
        **a.meta,
        "source_label": "kernel_opt_043_b",
        "slug": "043-b",
        "operator_name": "softmax_h8192",
        "axes": {"const": {"hidden": 8192}, "var": ["batch_size"]},
    }
    ds = build([TraceInput(b_meta, a.versions, [], a.sources), a], Thresholds())
    assert not ds.conflicts
    by_def: dict = {}
    for r in ds.tables["runs"]:
        by_def.setdefault(r["shape"].split(":", 1)[0], set()).add((r["run_id"], r["axis_hidden"]))
    assert {d: {h for _, h in v} for d, v in by_def.items()} == {"softmax_h4096": {4096}, "softmax_h8192": {8192}}
    assert not {i for i, _ in by_def["softmax_h4096"]} & {i for i, _ in by_def["softmax_h8192"]}


def test_context_outside_the_hash_that_disagrees_is_named(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_044_a")
    a = ingested(tmp_path / "kernel_opt_044_a")
    b_meta = {
        **a.meta,
        "source_label": "kernel_opt_045_b",
        "slug": "045-b",
        "axes": {"const": {"hidden": 8192}, "var": []},
    }
    ds = build([TraceInput(b_meta, a.versions, [], a.sources), a], Thresholds())
    assert ds.conflicts and all(
        re.fullmatch(r"problem [0-9a-f]{64}: axis_hidden differ between kernel_opt_044_a and kernel_opt_045_b", c)
        for c in ds.conflicts
    )
    # each run keeps its own trace's context
    trace_of = {m["run_id"]: m["trace"] for m in ds.tables["measurements"]}
    hidden = {(trace_of[r["run_id"]], r["axis_hidden"]) for r in ds.tables["runs"]}
    assert hidden == {("kernel_opt_044_a", 4096), ("kernel_opt_045_b", 8192)}


def test_autotune_rows_join_their_run_and_kernel(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_046_tuned", untracked=autotune_files())
    t = ingested(tmp_path / "kernel_opt_046_tuned")
    ds = build([t], Thresholds())
    tuning = ds.tables["autotune"]
    assert len(tuning) == len(t.autotune) == 9
    tuned = [r for r in ds.tables["runs"] if r["source"] == "helion-autotune"]
    assert {r["run_id"] for r in tuned} == {r["run_id"] for r in tuning} == {r["run_id"] for r in t.autotune}
    assert len(tuned) == 2
    for r in tuned:
        assert (r["kernel_name"], r["product"], r["compute_capability"], r["dtypes"], r["backend"]) == (
            "fused_add_rmsnorm",
            "h100",
            "sm_90",
            "bfloat16,bfloat16,bfloat16",
            "triton",
        )
        assert r["shape"] is None and r["axis_hidden"] is None  # a Helion run has no named axes
    (kernel,) = [k for k in ds.tables["kernels"] if k["dsl"] == HELION_DSL]
    assert {r["kernel_blob"] for r in tuned} == {kernel["kernel_blob"]}
    assert (
        kernel["source_text"].startswith("@helion.kernel")
        and git_blob_id(kernel["source_text"].encode()) == kernel["kernel_blob"]
    )
    # lean: a sample table shares only the join key with runs, and the config id is not stored (derivable)
    assert set(column_names("autotune")) & set(column_names("runs")) == {"run_id"}
    assert set(column_names("measurements")) & set(column_names("runs")) == {"run_id"}
    assert "config_id" not in column_names("autotune")
    ok = [r for r in tuning if r["status"] in ("ok", "deduplicated")]
    assert ok and all(r["perf_ms"] > 0 for r in ok)


def denylist(tmp_path: Path, *terms: str) -> Scrubber:
    path = tmp_path / "denylist.txt"
    path.write_text("\n".join(terms) + "\n")
    return Scrubber.from_env("DL", {"DL": str(path)})


class CommentsOnly(Scrubber):
    """A scrub that leaves code alone, as `Scrubber.code` did before it renamed denylisted identifiers:
    what the dataset's own check must catch whatever the scrubber of the day misses."""

    def code(self, s: str, dsl: str) -> str:
        return s.replace("zanzibarco", "a private identifier")  # lowercase, i.e. comments only here


def private_trace(dest: Path) -> tuple[Path, str]:
    k, m = tracekit.kernel, tracekit.memory
    commented = k(1).replace("# step 1", "# ported from the zanzibarco fork")
    in_code = k(2).replace("BLOCK =", "ZANZIBARCO_BLOCK =")
    build_trace(
        dest,
        [
            CommitSpec("V0: baseline", {"kernel.py": k(0), "memory/v0.json": m(0, 50.0), **tracekit.meta_files()}),
            CommitSpec("v1: committed (+20.0%)", {"kernel.py": commented, "memory/v1.json": m(1, 40.0)}),
            CommitSpec("v2: committed (+10.0%)", {"kernel.py": in_code, "memory/v2.json": m(2, 36.0)}),
        ],
    )
    return dest, commented


def test_scrubbed_sources_get_a_published_key_and_no_private_hash_leaves(tmp_path):
    """A denylisted term in a comment is scrubbed and the key is the scrubbed text's blob id; the trace's
    id (a hash of the private text) and any run_id over it appear nowhere in what is written."""
    trace, commented = private_trace(tmp_path / "kernel_opt_047_private")
    scrubber = denylist(tmp_path, "zanzibarco")
    t = ingested(trace, scrubber=scrubber)
    ds = build([t], Thresholds(), scrubber)
    raw = {v["version"]: v["kernel_blob"] for v in t.versions}
    kernels = {k["kernel_blob"]: k for k in ds.tables["kernels"]}
    assert raw["v0"] in kernels and raw["v1"] not in kernels and raw["v2"] not in kernels
    (v1,) = [k for k in kernels.values() if k["blob_bytes"] == len(commented.encode())]
    assert "zanzibarco" not in v1["source_text"].lower() and "BLOCK = 256" in v1["source_text"]
    assert git_blob_id(v1["source_text"].encode()) == v1["kernel_blob"]
    # v2 names the term in code: it is published renamed, or withheld with its samples; never leaked
    withheld = ds.summaries["kernel_opt_047_private"].excluded.get("source_withheld", 0)
    assert {v for _, v in measured(ds)} == ({0, 1} if withheld else {0, 1, 2})
    wd = write_work(tmp_path / "work", t)
    os.environ["DL_TEST"] = str(tmp_path / "denylist.txt")
    try:
        assert (
            main(
                [
                    "build",
                    str(wd),
                    "--traces",
                    str(trace),
                    "--out-dir",
                    str(tmp_path / "out"),
                    "--denylist-env",
                    "DL_TEST",
                ]
            )
            == 0
        )
    finally:
        del os.environ["DL_TEST"]
    written = b"".join(pq.read_table(tmp_path / "out" / FILES[n]).to_pandas().to_csv().encode() for n in BUILT)
    written += (tmp_path / "out" / "README.md").read_bytes()
    assert b"zanzibarco" not in written.lower()
    assert raw["v1"].encode() not in written and raw["v2"].encode() not in written


def test_a_source_the_scrub_leaves_a_term_in_is_withheld_with_its_samples(tmp_path):
    trace, _ = private_trace(tmp_path / "kernel_opt_048_private")
    scrubber = CommentsOnly(["zanzibarco"])
    t = ingested(trace, scrubber=scrubber)
    ds = build([t], Thresholds(), scrubber)
    assert {v for _, v in measured(ds)} == {0, 1}
    summary = ds.summaries["kernel_opt_048_private"]
    assert summary.excluded == {"source_withheld": 1}
    assert summary.withheld == ["a denylisted term outside comments and strings"]
    assert not any("zanzibarco" in k["source_text"].lower() for k in ds.tables["kernels"])
    write_dataset(ds, tmp_path / "out", Thresholds())  # the CLI's scrubber is the env's, not this one
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "- kernel_opt_048_private: a denylisted term outside comments and strings" in readme


def test_sources_that_cannot_be_scrubbed_are_withheld_with_a_reason():
    from optrace.dataset.sources import SOURCE_CAP, publish_source

    scrub = Scrubber()
    assert publish_source(b"\xff\xfe", "triton", scrub).withheld == "not UTF-8 (byte 0)"
    assert publish_source(b"", HELION_DSL, scrub).withheld == "no source recorded (empty)"
    assert publish_source(b"#" * (SOURCE_CAP + 1), "triton", scrub).withheld.startswith("larger than")
    assert publish_source(b"x = 1\n", "verilog", scrub).withheld == "no scrub rule for DSL 'verilog'"
    ok = publish_source(b"x = 1  # see /home/alice/notes.md\n", "triton", scrub)
    assert ok.withheld is None and "alice" not in ok.source and ok.blob_bytes == 34
    assert ok.kernel_blob == git_blob_id(ok.source.encode())


def test_scrubbed_helion_source_gets_a_rederived_run_id(tmp_path):
    files = autotune_files()
    helion_ids = {
        json.loads(line)["run_id"] for p, text in files.items() if p.endswith(".jsonl") for line in text.splitlines()
    }
    files = {p: text.replace("output = rmsnorm(x", "zanzibarco: output = rmsnorm(x") for p, text in files.items()}
    tracekit.iteration_era(tmp_path / "kernel_opt_053_tuned", untracked=files)
    scrubber = denylist(tmp_path, "zanzibarco")
    t = ingested(tmp_path / "kernel_opt_053_tuned", scrubber=scrubber)
    ds = build([t], Thresholds(), scrubber)
    ids = {r["run_id"] for r in ds.tables["autotune"]}
    assert len(ids) == 2 and not ids & helion_ids and len(ds.tables["autotune"]) == 9
    # the unscrubbed source's hash would confirm a guessed term: it is nowhere
    assert not {r["run_id"] for r in t.autotune} & {r["run_id"] for r in ds.tables["runs"]}


def test_a_denylisted_term_no_scrub_reaches_refuses_the_build(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_049_tuned", untracked=autotune_files())
    t = ingested(tmp_path / "kernel_opt_049_tuned")
    rows = [{**r, "backend": "zanzibarco"} for r in t.autotune]  # a field the dataset copies verbatim
    with pytest.raises(InputError, match=r"runs\.backend.*denylisted term"):
        build([TraceInput(t.meta, t.versions, rows, t.sources)], Thresholds(), denylist(tmp_path, "zanzibarco"))
    # a denylisted trace label is replaced, not refused: the term takes its whole token with it
    meta = {**t.meta, "source_label": "kernel_opt_049_zanzibarco"}
    ds = build([TraceInput(meta, t.versions, t.autotune, t.sources)], Thresholds(), denylist(tmp_path, "zanzibarco"))
    assert {m["trace"] for m in ds.tables["measurements"]} == {"a private identifier"}


def test_split_is_by_group_deterministic_and_documented():
    samples = {f"family-{i}/h100": 10 for i in range(10)} | {"norm/a100": 10}
    one = split_groups(samples, 0.2)
    assert one == split_groups(dict(reversed(samples.items())), 0.2)  # order does not matter
    assert sum(s == "test" for s in one.values()) == 2 and set(one) == set(samples)
    assert split_groups(samples, 0.0) == dict.fromkeys(samples, "train")
    two = dict(list(samples.items())[:2])
    assert sum(s == "test" for s in split_groups(two, 0.01).values()) == 1  # at least one
    assert sum(s == "test" for s in split_groups(two, 0.9).values()) == 1  # never all
    assert split_groups({"only/h100": 5}, 0.5) == {"only/h100": "train"}
    with pytest.raises(InputError, match="not in"):
        split_groups(samples, 1.0)


def test_split_takes_a_fraction_of_the_samples_never_of_the_groups():
    # #29: one group holds 45 % of the samples; a fraction of groups could put it in a "20 %" test set
    samples = {"gemm/h100": 450} | {f"family-{i}/h100": 50 for i in range(11)}
    for fraction in (0.1, 0.2, 0.3, 0.5):
        assignment = split_groups(samples, fraction)
        report = split_report(samples, assignment)
        assert abs(report["test"]["share"] - fraction) <= 0.05, (fraction, report)
        assert report["train"]["samples"] + report["test"]["samples"] == 1000
        assert set(report["test"]["group_names"]).isdisjoint(report["train"]["group_names"])
    assert split_groups(samples, 0.2)["gemm/h100"] == "train"
    # a group too big for the fraction on its own never goes to test while a better fit exists
    assert split_groups({"big/h100": 90, "small/h100": 10}, 0.2) == {"big/h100": "train", "small/h100": "test"}
    # every group alone overshoots: the one closest to the target is test
    assert split_groups({"a/h100": 60, "b/h100": 40}, 0.1) == {"a/h100": "train", "b/h100": "test"}
    lines = report_lines(split_report(samples, split_groups(samples, 0.2)))
    assert (
        lines[0].startswith("  train: 8 group(s), 800 samples (80.0 %)") and "test: 4 group(s), 200 samples" in lines[1]
    )


def write_work(root: Path, t: TraceInput) -> Path:
    d = root / t.meta["slug"]
    write_jsonl(d / "versions.jsonl", t.versions)
    write_jsonl(d / "autotune.jsonl", t.autotune)
    write_json(d / "meta.json", t.meta)
    return d


def test_rerun_is_byte_identical_loader_and_readme(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_050_tuned", untracked=autotune_files())
    failing_trace(tmp_path / "kernel_opt_051_fail")
    names = ("kernel_opt_050_tuned", "kernel_opt_051_fail")
    dirs = [write_work(tmp_path / "work", ingested(tmp_path / n)) for n in names]
    traces = [str(tmp_path / n) for n in names]
    assert main(["build", *map(str, dirs), "--traces", *traces, "--out-dir", str(tmp_path / "one")]) == 0
    assert (
        main(["build", *map(str, reversed(dirs)), "--traces", *reversed(traces), "--out-dir", str(tmp_path / "two")])
        == 0
    )
    for d in ("one", "two"):
        assert main(["split", str(tmp_path / d), "--test-fraction", "0.5"]) == 0
    for name in (*OUTPUTS, FILES["split"]):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    one = tmp_path / "one"
    measurements = pd.read_parquet(one / FILES["measurements"])
    assert list(measurements.columns) == column_names("measurements") and len(measurements) == 12
    assert str(measurements["version"].dtype) == "int64"
    assert b"pandas" not in (pq.read_schema(one / FILES["measurements"]).metadata or {})
    readme = (one / "README.md").read_text()
    assert "| kernel_opt_051_fail | 10 | 2 | 4 |" in readme and "`rebaseline`" in readme
    assert_every_column_documented(one)
    # the README's loading recipe runs as written
    recipe = re.search(r"## Loading\n\n```python\n(.*?)```", readme, re.S).group(1)
    scope: dict = {}
    exec(recipe.replace('"results/dataset"', repr(str(one))), scope)
    assert len(scope["trace"]) == 12 and len(scope["tuning"]) == 9 and len(scope["with_code"]) == 12
    assert len(scope["train"]) + len(scope["test"]) == 12
    # CSV copies: deterministic too
    assert main(["csv", str(one / "measurements.parquet"), str(tmp_path / "two" / "measurements.parquet")]) == 0
    assert (one / "measurements.csv").read_bytes() == (tmp_path / "two" / "measurements.csv").read_bytes()
    assert len(pd.read_csv(one / "measurements.csv")) == 12


ARROW_TYPES = {
    "string": "string",
    "int64": "int64",
    "double": "float64",
    "dictionary<values=string, indices=int32, ordered=0>": "category",
}


def assert_every_column_documented(out: Path) -> None:
    """Every column of every written table, and every column `load` returns, is in the README with its type."""
    readme = (out / "README.md").read_text()
    for name in [*BUILT, "split"]:
        if not (out / FILES[name]).is_file():
            continue
        schema = pq.read_schema(out / FILES[name])
        section = readme.split(f"### `{FILES[name]}`", 1)[1].split("###", 1)[0]
        for f in schema:
            row = re.search(rf"^\| `{re.escape(f.name)}` \| (\w+)(\??) \| (.+) \|$", section, re.M)
            assert row, f"{name}.{f.name} is not documented"
            assert row.group(1) == ARROW_TYPES[str(f.type)], f.name
            assert (row.group(2) == "?") == f.nullable, f.name
    loading = readme.split("## Loading", 1)[1]
    for kind in ("measurements", "autotune"):
        section = loading.split(f'### kind="{kind}"', 1)[1].split("###", 1)[0]
        for col, dtype in load(out, kind=kind, source=True).dtypes.items():
            assert f"| `{col}` | {dtype} |" in section, (kind, col)


def test_load_returns_documented_dtypes(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_052_tuned", untracked=autotune_files())
    d = write_work(tmp_path / "work", ingested(tmp_path / "kernel_opt_052_tuned"))
    assert (
        main(["build", str(d), "--traces", str(tmp_path / "kernel_opt_052_tuned"), "--out-dir", str(tmp_path / "out")])
        == 0
    )
    pandas_of = {"string": "string", "category": "category", "int64": "Int64", "float64": "Float64"}
    for kind in ("measurements", "autotune"):
        frame = load(tmp_path / "out", kind=kind)
        expected = {c.name: pandas_of[c.type] for c in sample_columns(kind)}
        assert {c: str(t) for c, t in frame.dtypes.items() if not c.startswith(AXIS_PREFIX)} == expected
        assert frame["split"].isna().all()  # split has not run
        assert "source_text" not in frame and "source_text" in load(tmp_path / "out", kind=kind, source=True)
    trace = load(tmp_path / "out")
    assert list(trace.sort_values("version")["version"].unique()) == [0, 1, 4, 5]  # numeric order
    for col in ("vendor", "arch", "product", "verdict", "source", "dsl", "trace", "group"):
        assert str(trace[col].dtype) == "category", col
    assert str(load(tmp_path / "out", kind="autotune")["status"].dtype) == "category"
    with pytest.raises(InputError, match="not a dataset directory"):
        load(tmp_path)
    with pytest.raises(InputError, match=r"kind.*'samples' is not one of measurements, autotune"):
        load(tmp_path / "out", kind="samples")


def test_load_never_mixes_measurements_and_autotune_rows(tmp_path):
    # #29: load() mixed both kinds (about half of each row empty) and repeated source_text on every row
    tracekit.iteration_era(tmp_path / "kernel_opt_053_tuned", untracked=autotune_files())
    d = write_work(tmp_path / "work", ingested(tmp_path / "kernel_opt_053_tuned"))
    out = tmp_path / "out"
    assert main(["build", str(d), "--traces", str(tmp_path / "kernel_opt_053_tuned"), "--out-dir", str(out)]) == 0
    trace, tuning = load(out), load(out, kind="autotune")
    assert set(trace["source"]) == {"trace"} and len(trace) == len(pd.read_parquet(out / FILES["measurements"]))
    assert set(tuning["source"]) == {"helion-autotune"} and len(tuning) == 9
    for frame, kind_only in ((trace, ("latency_us", "version", "verdict")), (tuning, ("perf_ms", "config"))):
        assert not any(c in frame for c in ("perf_ms", "latency_us") if c not in kind_only)
    assert "shape" not in tuning and "kernel_name" not in trace
    # a column every row of its kind fills is never empty
    for col in ("latency_us", "version", "verdict", "shape", "dsl", "product"):
        assert trace[col].notna().all(), col
    for col in ("config", "generation", "kernel_name", "backend", "dsl", "product"):
        assert tuning[col].notna().all(), col
    # the source on demand: the kernels' own text, joined by kernel_blob
    kernels = pd.read_parquet(out / FILES["kernels"]).set_index("kernel_blob")["source_text"]
    joined = load(out, source=True)
    assert all(joined["source_text"] == joined["kernel_blob"].map(kernels))


def test_two_traces_with_one_label_are_refused(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_060_a")
    a = ingested(tmp_path / "kernel_opt_060_a")
    with pytest.raises(InputError, match="share this label"):
        build([a, a], Thresholds())


def test_import_is_cheap():
    code = "import sys, optrace.dataset; print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- three realistic traces, one real run


def fib_kgen_trace(dest: Path) -> Path:
    """The real FlashInfer-Bench fused_add_rmsnorm definition and workloads with the per-round results of
    a real 10-round agent run on an A800 (sources elided there: each round gets a kernel of our own)."""
    rounds = list(csv.DictReader((SAMPLES / "fib_kgen_run_20260316_172250_generation_feedback_records.csv").open()))
    final = list(csv.DictReader((SAMPLES / "fib_kgen_run_20260316_172250_trace_records.csv").open()))
    definition = (SAMPLES / "fib_definition_fused_add_rmsnorm_h4096.json").read_text()
    workloads = (SAMPLES / "fib_workload_fused_add_rmsnorm_h4096.jsonl").read_text()
    solution = json.dumps(
        {
            "name": "fib-kgen",
            "definition": "fused_add_rmsnorm_h4096",
            "spec": {"language": "cuda", "target_hardware": ["NVIDIA A800"]},
            "sources": [],
        }
    )

    def kernel(r: int) -> str:
        # the example's v0 kernel for the baseline: one blob shared with another trace of the sheet
        if r == 0:
            return (EXAMPLE_DIR / "kernels" / "v0.py").read_text()
        return (
            f"from torch.utils.cpp_extension import load_inline\n\n# round {r}\nSRC = r'''\n"
            f"__global__ void fused_add_rmsnorm(float* x) {{ /* vec width {2 ** (r % 4)} */ }}\n'''\n"
        )

    def memory(n: int, by_shape: dict, ok: bool = True) -> str:
        vals = list(by_shape.values())
        geo = round(float(pd.Series(vals).prod() ** (1 / len(vals))), 4) if vals else None
        return json.dumps(
            {
                "version": f"v{n}",
                "performance": {"latency_us_geomean": geo, "latency_us_by_shape": by_shape},
                "correctness": {"status": "PASS" if ok else "FAIL"},
                "quality_gate": {"result": "PASS" if ok else "FAIL", "failure_reason": None},
            }
        )

    feedback = rounds[0]["feedback_workload_uuid"]
    ref = float(next(r["reference_latency_ms"] for r in rounds if r["reference_latency_ms"]))
    commits = [
        CommitSpec(
            "V0: baseline (reference)",
            {
                "kernel.py": kernel(0),
                "definition.json": definition,
                "workload.jsonl": workloads,
                "solution.json": solution,
                "memory/v0.json": memory(0, {feedback: ref * 1000}),
            },
        )
    ]
    best = ref
    for r in rounds:
        n = int(r["generation_round"])
        if r["status"] != "PASSED":
            commits.append(
                CommitSpec(
                    f"v{n}: reverted (compile error) — dead-end recorded",
                    {f"memory/v{n}.json": memory(n, {}, ok=False)},
                )
            )
            continue
        lat = float(r["latency_ms"])
        shapes = {feedback: round(lat * 1000, 4)}
        if n == 4:  # the round the run benchmarked on all its workloads
            shapes = {f["benchmark_workload_uuid"]: round(float(f["latency_ms"]) * 1000, 4) for f in final}
        gain = (best - lat) / best * 100
        if gain > 0:
            best = lat
            commits.append(
                CommitSpec(
                    f"v{n}: committed (+{gain:.1f}%)", {"kernel.py": kernel(n), f"memory/v{n}.json": memory(n, shapes)}
                )
            )
        else:
            commits.append(
                CommitSpec(
                    f"v{n}: reverted ({gain:.1f}%) — dead-end recorded", {f"memory/v{n}.json": memory(n, shapes)}
                )
            )
    build_trace(dest, commits)
    return dest


def sol_trace(dest: Path) -> Path:
    """SOL-ExecBench dialect (languages list, LOCAL target, framework baseline naming the GPU)."""
    k, m = tracekit.kernel, tracekit.memory
    build_trace(
        dest,
        [
            CommitSpec(
                "V0: baseline (SOL reference wrapper)",
                {"kernel.py": k(0), "memory/v0.json": m(0, 900.0), **tracekit.meta_files("sol")},
            ),
            CommitSpec(
                "v1: framework baseline (triton) replacing the V0 PyTorch wrapper",
                {"kernel.py": k(1), "memory/v1.json": m(1, 400.0)},
            ),
            CommitSpec("v2: committed (+25.0%)", {"kernel.py": k(2, "cuda"), "memory/v2.json": m(2, 300.0)}),
        ],
    )
    return dest


@pytest.fixture(scope="module")
def sheet_run(tmp_path_factory):
    """One real `snakemake dataset` over three realistic traces (FlashInfer-Bench rounds on an A800, a
    SOL-ExecBench-style trace on a B200, the example on an H100 with its Helion telemetry), shared by
    the contract's asserts."""
    if not SAMPLES.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has none)")
    from tests.support.workflow import copy_workflow

    tmp = tmp_path_factory.mktemp("sheet")
    traces = {
        "kernel_opt_101_fused_add_rmsnorm_h4096": fib_kgen_trace(tmp / "fib"),
        "kernel_opt_102_softmax_h4096": sol_trace(tmp / "sol"),
    }
    example = tmp / "example"
    build_example(example)
    traces["kernel_opt_007_fused_add_rmsnorm_h4096"] = example
    sheet = tmp / "traces.tsv"
    sheet.write_text("label\tpath\n" + "".join(f"{label}\t{path}\n" for label, path in traces.items()))
    wd = copy_workflow(tmp / "wf")
    dl = tmp / "denylist.txt"
    dl.write_text("airulan\n")  # the real run's user name, in its paths
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(dl)}
    snakemake(wd, "dataset", "--config", f"traces={sheet}", env=env)
    again = snakemake(wd, "-n", "dataset", "--config", f"traces={sheet}", env=env)
    return {
        "wd": wd,
        "out": wd / "results" / "dataset",
        "traces": traces,
        "env": env,
        "noop": again.stdout + again.stderr,
    }


@pytest.mark.workflow
def test_sheet_contract_every_sample_joins_one_run_and_one_kernel(sheet_run):
    out = sheet_run["out"]
    runs = pd.read_parquet(out / FILES["runs"])
    kernels = pd.read_parquet(out / FILES["kernels"])
    samples = pd.concat([pd.read_parquet(out / FILES["measurements"]), pd.read_parquet(out / FILES["autotune"])])
    assert runs["run_id"].is_unique and kernels["kernel_blob"].is_unique
    assert set(samples["run_id"]) <= set(runs["run_id"]) and set(runs["run_id"]) <= set(samples["run_id"])
    assert set(runs["kernel_blob"]) == set(kernels["kernel_blob"])
    assert {r for r in samples["trace"]} == set(sheet_run["traces"])
    frame, tuning = load(out, source=True), load(out, kind="autotune", source=True)
    assert len(frame) + len(tuning) == len(samples)
    for f in (frame, tuning):
        assert f["source_text"].notna().all() and f["split"].notna().all()
    assert set(frame["source"]) == {"trace"} and set(tuning["source"]) == {"helion-autotune"}
    assert tuning["trace"].eq("kernel_opt_007_fused_add_rmsnorm_h4096").all()
    # typed context: the two definitions' axes, null where a definition lacks one
    fib = frame[frame.trace == "kernel_opt_101_fused_add_rmsnorm_h4096"]
    assert fib["axis_hidden_size"].eq(4096).all() and fib["axis_hidden"].isna().all()
    assert (fib["product"].unique().tolist(), fib["compute_capability"].unique().tolist()) == (["a800"], ["sm_80"])
    assert fib["dtypes"].eq("bfloat16,bfloat16,bfloat16").all() and fib["dsl"].isin(["cuda", "any"]).all()
    assert len(fib) > 14 and fib["axis_batch_size"].notna().all()
    # the example's v0 kernel is measured by two traces (on two GPUs): one kernel row, two runs
    raw_v0 = (EXAMPLE_DIR / "kernels" / "v0.py").read_text()
    v0 = kernels[kernels.source_text == Scrubber().code(raw_v0, "any")]  # its docstring names "V0"
    assert git_blob_id(raw_v0.encode()) not in set(kernels.kernel_blob)  # a scrubbed text gets its own key
    assert len(v0) == 1 and runs[runs.kernel_blob == v0.kernel_blob.iloc[0]]["product"].nunique() == 2
    assert only_the_target_ran(sheet_run["noop"])


@pytest.mark.workflow
def test_sheet_contract_split_never_shares_a_group(sheet_run):
    split = pd.read_parquet(sheet_run["out"] / FILES["split"])
    runs = pd.read_parquet(sheet_run["out"] / FILES["runs"])
    assert split["group"].is_unique and set(split["group"]) == set(runs["group"])
    assert set(split["split"]) == {"train", "test"}
    frame = load(sheet_run["out"])
    assert frame.groupby("group")["split"].nunique().eq(1).all()
    assert set(frame.loc[frame.split == "train", "group"]).isdisjoint(frame.loc[frame.split == "test", "group"])
    assert len(set(runs["group"])) >= 3


@pytest.mark.workflow
def test_sheet_contract_nothing_derivable_or_denylisted(sheet_run):
    out = sheet_run["out"]
    everything = b"".join(p.read_bytes() for p in sorted(out.iterdir()) if p.is_file())
    text = "".join(pd.read_parquet(out / FILES[n]).to_csv() for n in BUILT)
    assert "airulan" not in text.lower() and b"airulan" not in everything.lower()
    columns = {c for n in BUILT for c in pq.read_schema(out / FILES[n]).names}
    derivable = {
        "config_id",
        "definition",
        "latency_us_geomean",
        "geomean_us",
        "source_sha256",
        "n_shapes",
        "scrubbed",
        "axes",
    }
    assert not columns & derivable
    # the documented column table is exactly what is written
    for name in BUILT:
        names = pq.read_schema(out / FILES[name]).names
        assert [c for c in names if not c.startswith(AXIS_PREFIX)] == column_names(name)
    assert_every_column_documented(out)


@pytest.mark.workflow
def test_sheet_contract_rebuild_is_byte_identical(sheet_run, tmp_path):
    wd, out = sheet_run["wd"], sheet_run["out"]
    work = sorted((wd / "results" / "work").iterdir())
    traces = [str(sheet_run["traces"][json.loads((w / "meta.json").read_text())["source_label"]]) for w in work]
    env = {**sheet_run["env"], "PYTHONPATH": str(ROOT / "workflow" / "scripts")}
    cmd = [sys.executable, "-m", "optrace", "dataset"]
    subprocess.run(
        [*cmd, "build", *map(str, reversed(work)), "--traces", *reversed(traces), "--out-dir", str(tmp_path)],
        check=True,
        env=env,
        capture_output=True,
    )
    subprocess.run([*cmd, "split", str(tmp_path), "--test-fraction", "0.2"], check=True, env=env, capture_output=True)
    for name in (*OUTPUTS, FILES["split"]):
        assert (out / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert read_trace(work[0], traces[0], Scrubber()).sources["kernels"]


def test_a_trace_that_cannot_be_read_again_is_left_out_and_the_others_are_built(tmp_path, capsys):
    from optrace.cli import main as optrace

    work, traces = [], []
    for name in ("kernel_opt_001_one", "kernel_opt_002_two"):
        trace = tmp_path / name
        tracekit.iteration_era(trace)
        out = tmp_path / "work" / name
        assert optrace(["ingest", str(trace), "--out-dir", str(out), "--hardware", "H100"]) == 0
        work.append(out)
        traces.append(trace)
    (traces[1] / ".git").rename(tmp_path / "moved-git")  # ingested, then no longer a git repository
    capsys.readouterr()
    dataset = tmp_path / "dataset"
    args = ["dataset", "build", *map(str, work), "--traces", *map(str, traces), "--out-dir", str(dataset)]
    assert optrace(args) == 0
    said = capsys.readouterr().out
    assert f"warning: {work[1].name}: left out: " in said
    measurements = pd.read_parquet(dataset / FILES["measurements"])
    assert len(measurements) and set(measurements["trace"]) == {"kernel_opt_001_one"}  # the source label


# ---------------------------------------------------------------- #26, #29: the Helion trace, file metadata, the datasheet


@pytest.fixture(scope="module")
def helion_dataset(tmp_path_factory):
    from tests.support import more_traces

    if not more_traces.available("helion_add"):
        pytest.skip("../shared/data/samples/helion is absent")
    root = tmp_path_factory.mktemp("helion")
    trace = more_traces.build("helion_add", root)
    d = write_work(root / "work", ingested(trace))
    out = root / "dataset"
    assert main(["build", str(d), "--traces", str(trace), "--out-dir", str(out), "--rebaseline-factor", "4"]) == 0
    assert main(["split", str(out)]) == 0
    return out


def test_a_helion_kernel_has_one_dsl_in_both_tables(helion_dataset):
    # #26: the trace's kernels were labelled `any` while its autotune rows said `helion`
    kernels = pd.read_parquet(helion_dataset / FILES["kernels"])
    helion = kernels["source_text"].str.contains("@helion.kernel", regex=False)
    assert set(kernels[helion]["dsl"]) == {HELION_DSL} and (~helion).sum() == 1
    assert set(kernels[~helion]["dsl"]) == {"any"}  # v0, the eager PyTorch reference, is no Helion kernel
    trace, tuning = load(helion_dataset), load(helion_dataset, kind="autotune")
    assert set(tuning["dsl"]) == {HELION_DSL}
    assert set(trace[trace["version"] > 0]["dsl"]) == {HELION_DSL}


def test_categoricals_are_dictionary_encoded_and_every_file_says_what_made_it(helion_dataset):
    from optrace import __version__
    from optrace.dataset.columns import SCHEMA_VERSION, TABLES
    from optrace.dataset.files import read_metadata

    digests = set()
    for name in (*BUILT, "split"):
        schema = pq.read_schema(helion_dataset / FILES[name])
        for c in TABLES[name]:
            is_dict = str(schema.field(c.name).type).startswith("dictionary<values=string")
            assert is_dict == (c.type == "category"), (name, c.name)
        meta = read_metadata(helion_dataset / FILES[name])
        assert meta["optrace.builder"] == f"optrace {__version__}"
        assert meta["optrace.schema_version"] == SCHEMA_VERSION and meta["optrace.table"] == name
        config = json.loads(meta["optrace.config"])
        assert meta["optrace.config_digest"] == hashlib.sha256(meta["optrace.config"].encode()).hexdigest()[:16]
        if name != "split":
            assert config["ladder"]["rebaseline_factor"] == 4.0 and len(config["targets_sha256"]) == 64
            digests.add(meta["optrace.config_digest"])
        else:
            assert config == {"test_fraction": 0.2}
            report = json.loads(meta["optrace.split_report"])
            assert report["train"]["samples"] + report["test"]["samples"] > 0
    assert len(digests) == 1  # one build, one configuration
    for name in ("vendor", "arch", "product"):
        assert pq.read_schema(helion_dataset / FILES["runs"]).field(name).type.value_type == "string"


def test_the_readme_has_a_datasheet_generated_from_the_data(helion_dataset):
    readme = (helion_dataset / "README.md").read_text()
    sheet = readme.split("## Datasheet", 1)[1]
    for section in ("### Motivation", "### Composition", "### What is left out, and why", "### Units"):
        assert section in sheet, section
    measurements = pd.read_parquet(helion_dataset / FILES["measurements"])
    tuning = pd.read_parquet(helion_dataset / FILES["autotune"])
    assert f"- {len(measurements)} trace measurements from 1 trace(s), {len(tuning)} autotune rows" in sheet
    assert f"DSLs (kernels): {HELION_DSL} " in sheet and "GPUs: h100 " in sheet
    reverted = int((measurements["verdict"] == "reverted").sum())
    assert reverted and f"reverted {reverted}" in sheet
    # the unit slip (v4: ns written as µs) never reaches the dataset, and the sheet says so
    assert 4 not in set(measurements["version"]) and "Unit slips (1 version(s))" in sheet
    counts = re.search(r"\| kernel_opt_051_broadcast_add_h100 \| (\d+) \| (\d+) \| (\d+) \|", readme)
    assert counts and int(counts.group(3)) == len(measurements)
    assert re.search(r"Re-baselines \(\d+ version\(s\)\)", sheet) and "µs" in sheet and "ms (Helion" in sheet
