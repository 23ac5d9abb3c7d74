"""The harness a trace's records are measured on is the one the trace names, never a hard-coded guess."""

import json

import pytest

from optrace.ingest.ingest import Overrides, harness_of
from optrace.ingest.metadata import read_metadata
from optrace.ingest.trace_files import WorkTreeFiles


def trace(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return read_metadata(WorkTreeFiles(tmp_path), tmp_path.name)


SOL = json.dumps({"spec": {"languages": ["triton"], "target_hardware": ["LOCAL"]}})
CONFIG = json.dumps({"seed": 200, "warmup_runs": 10, "iterations": 50, "benchmark_reference": True})


def test_the_readme_names_the_harness(tmp_path):
    meta = trace(tmp_path, {"README.md": "# x\n\n- platform: H100\n- harness: triton.testing.do_bench (median)\n"})
    assert harness_of(meta, Overrides()) == "triton.testing.do_bench (median)"
    assert harness_of(meta, Overrides(harness="my rig")) == "my rig"  # the user's word wins


@pytest.mark.parametrize(
    "files,expected",
    [
        (
            {"solution.json": SOL, "config.json": CONFIG},
            "SOL-ExecBench harness, 10 warm-up and 50 timed runs (seed 200)",
        ),
        ({"solution.json": SOL}, "SOL-ExecBench harness"),
        ({"solution.json": json.dumps({"spec": {"language": "cuda"}})}, "FlashInfer-Bench evaluator"),
        ({}, "the trace's own benchmark harness"),
        ({"config.json": json.dumps({"warmup_runs": True, "iterations": "50"})}, "the trace's own benchmark harness"),
    ],
)
def test_otherwise_the_benchmark_files_say_what_it_is(tmp_path, files, expected):
    assert harness_of(trace(tmp_path, files), Overrides()) == expected


def test_no_generic_name_holds_a_file_name_the_scrubber_would_rewrite(tmp_path):
    # "SOL-ExecBench harness (atrex test_kernel.py)" reached 13 records as "(atrex the kernel source)"
    from optrace.scrub.anonymize import Scrubber

    for files in ({"solution.json": SOL, "config.json": CONFIG}, {"solution.json": SOL}, {}):
        name = harness_of(trace(tmp_path / str(len(files)), files), Overrides())
        assert Scrubber().text(name) == name


@pytest.mark.parametrize(
    "readme,expected",
    [
        ("- harness: SOL-ExecBench\r\n- gpu: H100\r\n", "SOL-ExecBench"),  # a CRLF README: no \r in the name
        ("* Benchmark harness: `python test_kernel.py --warmup 10`\n", "python test_kernel.py --warmup 10"),
        ("- harness:   \n- harness: do_bench\n", "do_bench"),  # a blank line names nothing: the next one does
        ("- harness: ``\n- harness: do_bench\n", "do_bench"),
        ("- harness: do\x1b[2J_bench\u200b  (median)\n", "do[2J_bench (median)"),  # control and format characters go
        ("- harness: " + "x" * 500 + "\n", "x" * 200),
        ("- harness:\n", None),
    ],
)
def test_a_readme_harness_line_is_read_as_a_name(tmp_path, readme, expected):
    assert trace(tmp_path, {"README.md": readme}).harness == expected
