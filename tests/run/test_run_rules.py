"""Rules of a run that the mutation runs found unpinned (issue #27): the summary's exit status and its
failed-record count, a re-run ingest that must not believe its own old placeholder, and the MAC's
length prefix. Each test is named after the rule it pins; none needs Snakemake."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from optrace import secret
from optrace.run import pertrace
from optrace.run.summary import Places, RunSummary, TraceLine, exit_status, render
from tests.support import tracekit


def a_summary(tmp_path: Path, *traces: TraceLine) -> RunSummary:
    where = Places(
        validation_summary=tmp_path / "v.json",
        staged=tmp_path / "staged.json",
        staging_readme=tmp_path / "README.md",
        dataset=tmp_path / "dataset/README.md",
        trace_report=str(tmp_path / "reports/{slug}/validation.json"),
    )
    return RunSummary(places=where, traces=list(traces))


def validated(slug: str, records: int, failed: int) -> TraceLine:
    return TraceLine(slug, validated=True, records=records, failed=failed, staged=records - failed)


def test_a_failing_record_exits_1_exactly_when_the_run_is_strict(tmp_path):
    failing = a_summary(tmp_path, validated("a", 4, 1))
    assert exit_status(failing, "strict: true", need_records=False) == 1
    assert exit_status(failing, "`snakemake validate`", need_records=True) == 1
    assert exit_status(failing, "", need_records=False) == 0  # default: an agent batch iterates
    clean = a_summary(tmp_path, validated("a", 4, 0))
    assert exit_status(clean, "strict: true", need_records=False) == 0
    assert exit_status(clean, "`snakemake validate`", need_records=True) == 0


def test_a_run_without_a_denylist_exits_1_exactly_when_strict(tmp_path):
    """#29: scrubbing nothing private fails a strict run, whatever else it found; never a plain one."""
    unscrubbed = replace(a_summary(tmp_path, validated("a", 4, 0)), no_denylist="no denylist: $X is unset")
    assert exit_status(unscrubbed, "strict: true", need_records=False, strict=True) == 1
    assert exit_status(unscrubbed, "", need_records=False, strict=False) == 0
    assert exit_status(unscrubbed, "`snakemake validate`", need_records=True, strict=False) == 0
    scrubbed = a_summary(tmp_path, validated("a", 4, 0))
    assert exit_status(scrubbed, "strict: true", need_records=False, strict=True) == 0
    assert "no denylist: $X is unset" in render(unscrubbed)
    assert "this run exits 1 because it ran without a denylist (strict: true)" in render(unscrubbed, strict=True)
    assert "no denylist" not in render(scrubbed, strict=True)


def test_having_no_record_at_all_fails_only_a_run_that_needs_records(tmp_path):
    empty = a_summary(tmp_path, validated("a", 0, 0))
    assert exit_status(empty, "`snakemake validate`", need_records=True) == 1
    assert exit_status(empty, "strict: true", need_records=False) == 0
    assert exit_status(empty, "", need_records=True) == 0  # nothing asks this run to fail


def test_the_failed_record_count_is_the_sum_over_every_trace(tmp_path):
    summary = a_summary(tmp_path, validated("a", 5, 2), validated("b", 7, 3), TraceLine("c"))
    assert summary.failed_records == 5 and summary.records == 12
    text = render(summary, "strict: true")
    total = next(line for line in text.splitlines() if line.strip().startswith("total:"))
    assert "3 traces (0 failed), 12 records validated, 7 staged, 5 failed validation" in total
    assert "this run exits 1 because a record failed (strict: true)" in text


def test_a_rerun_ingest_does_not_read_its_own_failed_placeholder(tmp_path):
    """The trace failed once (its meta.json is a placeholder) and was fixed since: ingest runs again
    instead of passing the old failure on, as every later stage does."""
    trace = tmp_path / "kernel_opt_050_fixed"
    tracekit.iteration_era(trace)
    out = tmp_path / "work" / "050-fixed"
    meta = out / "meta.json"
    failed = {"stage": "ingest", "reason": "x: states no GPU", "label": "kernel_opt_050_fixed"}
    outputs = [out / "versions.jsonl", out / "profiles.jsonl", meta, out / "autotune.jsonl"]
    pertrace.write_placeholders(outputs, "050-fixed", failed, "ingest")
    argv = ["--slug", "050-fixed", "--meta", str(meta), "--outputs", *map(str, outputs), "--"]
    assert pertrace.main([*argv, "ingest", str(trace), "--out-dir", str(out)]) == 0
    doc = json.loads(meta.read_text())
    assert "failed" not in doc and doc["target"]["product"] == "h100"
    # a later stage of the same trace does pass a failure on without running its code
    pertrace.write_placeholders([meta], "050-fixed", failed, "ingest")
    report = out / "partition.md"
    assert pertrace.main(["--slug", "050-fixed", "--meta", str(meta), "--outputs", str(report), "--", "partition"]) == 0
    assert "the trace failed at ingest: x: states no GPU" in report.read_text()


def test_the_mac_length_prefix_keeps_every_split_of_the_same_bytes_apart():
    key = b"k" * 32
    assert secret.mac(key, b"ab", b"c") != secret.mac(key, b"a", b"bc")
    assert secret.mac(key, b"abc") != secret.mac(key, b"ab", b"c")
    assert secret.mac(key, b"", b"abc") != secret.mac(key, b"abc", b"")
    assert secret.mac(key, b"ab", b"c") == secret.mac(key, b"ab", b"c")
    assert secret.verifies(key, secret.mac(key, b"a", b"bc"), b"a", b"bc")
    assert not secret.verifies(key, secret.mac(key, b"a", b"bc"), b"ab", b"c")
