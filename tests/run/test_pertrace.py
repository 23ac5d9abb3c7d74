"""The per-trace guard (optrace.run.pertrace): a failing trace is data. Its placeholders have the shape
each aggregate reads, a later stage passes the failure on without running, a bug still fails the job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optrace.errors import InputError
from optrace.gates import REPORT_SCHEMA
from optrace.mine.packetfile import read_packet_file
from optrace.run import pertrace
from optrace.run.summary import PLACEHOLDER_MARK
from tests.support.schemas import assert_valid

FAILED = {"stage": "ingest", "reason": "t: states <no> GPU & more", "label": "kernel_opt_001_x"}


def test_each_placeholder_has_the_shape_its_readers_expect(tmp_path):
    stage_of = {"001-x.json": "packets", "distill.json": "distill", "validation.json": "validate"}
    shape = {
        name: pertrace.placeholder(tmp_path / name, "001-x", FAILED, stage_of.get(name, "ingest"))
        for name in (
            "versions.jsonl",
            "meta.json",
            "001-x.json",
            "distill.json",
            "validation.json",
            "recon.json",
            "ladder.svg",
            "recon.md",
        )
    }
    assert shape["versions.jsonl"] == ""
    meta = json.loads(shape["meta.json"])
    assert meta == {"slug": "001-x", "source_label": "kernel_opt_001_x", "failed": FAILED}
    (tmp_path / "001-x.json").write_text(shape["001-x.json"])
    packets = read_packet_file(tmp_path / "001-x.json")  # the packets file's placeholder, as its readers read it
    assert packets.files == {}
    assert packets.manifest == {"slug": "001-x", "head_sha": None, "count": 0, "packets": [], "failed": FAILED}
    assert json.loads(shape["distill.json"]) == {
        "slug": "001-x",
        "mode": None,
        "counts": {},
        "packets": [],
        "failed": FAILED,
    }
    report = json.loads(shape["validation.json"])
    assert report["schema"] == REPORT_SCHEMA and report["records"] == [] and report["failed"] == FAILED
    assert report["counts"] == {"records": 0, "passed": 0, "failed": 0}
    assert json.loads(shape["recon.json"]) == {"slug": "001-x", "failed": FAILED}
    for name in ("meta.json", "001-x.json", "distill.json", "validation.json", "recon.json"):
        assert PLACEHOLDER_MARK in shape[name].encode() and shape[name].endswith("\n"), name
    line = "001-x: not analysed, the trace failed at ingest: t: states <no> GPU & more"
    assert shape["recon.md"] == f"# 001-x\n\n{line}\n"
    assert "states &lt;no&gt; GPU &amp; more" in shape["ladder.svg"] and "<no>" not in shape["ladder.svg"]
    assert shape["ladder.svg"].startswith("<svg ") and shape["ladder.svg"].endswith("</svg>\n")


def test_a_meta_placeholder_without_a_label_names_the_slug(tmp_path):
    meta = json.loads(pertrace.placeholder(tmp_path / "meta.json", "001-x", {"stage": "s", "reason": "r"}, "ingest"))
    assert meta["source_label"] == "001-x"


def test_the_upstream_failure_is_read_from_meta_json_only_when_it_is_one(tmp_path):
    meta = tmp_path / "meta.json"
    assert pertrace.upstream_failure(meta) is None  # not written yet
    meta.write_text(json.dumps({"slug": "a", "failed": FAILED}))
    assert pertrace.upstream_failure(meta) == FAILED
    for doc in ({"slug": "a"}, {"failed": "yes"}, ["failed"], {"failed": None}):
        meta.write_text(json.dumps(doc))
        assert pertrace.upstream_failure(meta) is None, doc


def guard(tmp_path: Path, stage: str, *stage_argv: str, outputs: tuple[str, ...] = ("out.json", "out.md")):
    outs = [tmp_path / o for o in outputs]
    argv = ["--slug", "001-x", "--meta", str(tmp_path / "meta.json"), "--label", "lab", "--outputs", *map(str, outs)]
    return pertrace.main([*argv, "--", stage, *stage_argv]), outs


def test_a_stage_after_a_failed_one_passes_the_failure_on_without_running(tmp_path, capsys):
    (tmp_path / "meta.json").write_text(json.dumps({"slug": "001-x", "failed": FAILED}))
    status, outs = guard(tmp_path, "partition", "--no-such-option")  # its code would refuse this argv
    assert status == 0
    assert json.loads(outs[0].read_text())["failed"] == FAILED and "failed at ingest" in outs[1].read_text()
    assert "skipped, the trace failed at ingest" in capsys.readouterr().out


def test_a_stage_that_ends_in_an_input_error_writes_placeholders_with_its_reason(tmp_path, capsys):
    status, outs = guard(tmp_path, "ingest", str(tmp_path / "no-such-trace"), "--out-dir", str(tmp_path / "w"))
    assert status == 0
    failed = json.loads(outs[0].read_text())["failed"]
    assert failed["stage"] == "ingest" and failed["label"] == "lab" and "trace not found" in failed["reason"]
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "placeholders written so the other traces go on" in err


def test_a_bug_in_a_stage_still_fails_the_job(tmp_path, monkeypatch):
    import optrace.mine.partition as partition

    def crash(argv):
        raise ZeroDivisionError("a bug, not bad input")

    monkeypatch.setattr(partition, "main", crash)
    (tmp_path / "meta.json").write_text(json.dumps({"slug": "001-x"}))
    with pytest.raises(ZeroDivisionError):
        guard(tmp_path, "partition")
    assert not (tmp_path / "out.json").exists()


def test_a_declared_input_missing_in_the_job_fails_the_job_not_the_trace(tmp_path):
    """On a node that shares nothing, an input that was not staged in is the run's fault: the guard
    refuses before the stage runs (exit 2 through run_main) and writes no placeholder."""
    (tmp_path / "meta.json").write_text(json.dumps({"slug": "001-x"}))
    present, absent = tmp_path / "meta.json", tmp_path / "segments.jsonl"
    argv = ["--slug", "001-x", "--meta", str(present), "--inputs", str(present), str(absent)]
    argv += ["--outputs", str(tmp_path / "out.json"), "--", "partition", "--no-such-option"]
    with pytest.raises(InputError, match="declared input of partition is missing") as err:
        pertrace.main(argv)
    assert err.value.where == str(absent)
    assert not (tmp_path / "out.json").exists()
    from optrace.cli import run_main

    assert run_main(pertrace.main, argv) == 2


def test_the_guard_runs_only_the_per_trace_commands_of_the_command_table():
    from optrace.cli import MODULES

    assert set(pertrace.PER_TRACE) <= set(MODULES)
    with pytest.raises(InputError, match="unknown stage 'dataset'"):
        pertrace.main(["--slug", "s", "--meta", "m", "--outputs", "o", "--", "dataset"])
    with pytest.raises(InputError, match="usage"):
        pertrace.main(["--slug", "s", "--meta", "m", "--outputs", "o", "ingest"])


def test_placeholders_validate_against_the_report_schema(tmp_path):
    report = json.loads(pertrace.placeholder(tmp_path / "validation.json", "001-x", FAILED, "validate"))
    report.pop("failed")
    assert_valid(report, "validation.schema.json")
