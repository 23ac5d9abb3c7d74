"""optrace.ingest.captures: capture directories of both eras, the kernel each one measured, and usability."""

import json
from pathlib import Path

import jsonschema
import pytest

from optrace import SCHEMAS
from optrace.ingest.captures import ignored_profile_dirs, scan_profiles
from optrace.ingest.trace_files import WorkTreeFiles
from tests.support.paths import FIXTURES

FIXTURES = FIXTURES / "ncu"
RNG = "distribution_elementwise_grid_stride_kernel"
NON_TARGET = [RNG]
SCHEMA = json.loads((SCHEMAS / "profiles.schema.json").read_text(encoding="utf-8"))


def write(root: Path, rel: str, content: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def summary(kernel: str) -> str:
    return (
        "===== NCU Profile Summary =====\n"
        f"Kernel: {kernel}\n"
        "Duration: 35.2 us\n"
        "SM Throughput: 23.6%\n\n"
        "===== Diagnosis =====\nNo significant patterns detected.\n"
    )


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A trace work tree with captures of both eras and the usual damage."""
    root = tmp_path / "kernel_opt_001_fused_softmax_h4096"
    # Iteration era.
    write(root, "profiles/v3/summary.txt", summary(RNG))  # captured without a kernel filter
    write(root, "profiles/v3/REPORT.md", "# v3\n**Root cause**: the RNG fill dominates.\n")
    write(root, "profiles/v12_b/summary.txt", summary("_fused_softmax_kernel"))
    write(root, "profiles/v12_b/REPORT.md", "## Key Finding\nDRAM-bound at 87% of peak.\n")
    write(root, "profiles/v12_b/ncu_details.csv", (FIXTURES / "rng_then_target.csv").read_text())
    write(
        root,
        "profiles/v12-retry/analysis/metrics_key_run.json",
        json.dumps({"gpu__time_duration.sum": 35200, "__kernel_name__": "_fused_softmax_kernel"}),
    )
    write(root, "profiles/v7/analysis/metrics_key_run.json", '{"__kernel_name__": "_fused_softm')
    write(root, "profiles/v7/analysis/metrics_key_run.txt", "===== run =====\nKernel: _online_softmax\n\n")
    write(root, "profiles/v8/summary.txt", b"\xff\xfe\x00K\x00e\x00r\x00n\x00e\x00l\x00:\x00 \x00x\x00")
    write(root, "profiles/v8/REPORT.md", b"\x89PNG\r\n\x1a\n\xff\xff")
    # Long-horizon era: the agent's collect_ncu.sh wrote harness/ncu_full.csv (RNG launch first).
    write(root, "profiles/episode_4/harness/ncu_full.csv", (FIXTURES / "rng_then_target.csv").read_text())
    write(root, "profiles/episode_4/harness/ncu_full.err", "==PROF== Disconnected\n")
    write(root, "profiles/episode_4/shape-1/ncu_raw.csv", (FIXTURES / "raw_page.csv").read_text())
    write(root, "profiles/episode_5/shape-0/summary.txt", summary("_fused_softmax_kernel"))
    # Neither layout.
    write(root, "profiles/latest/summary.txt", summary("_fused_softmax_kernel"))
    write(root, "profiles/notes.txt", "not a capture\n")
    # Symlinks out of the trace: a whole capture dir, and one file inside a real capture.
    outside = tmp_path / "elsewhere"
    write(outside, "v9/summary.txt", summary("leaked_secret_kernel"))
    write(outside, "summary.txt", summary("leaked_secret_kernel"))
    (root / "profiles/v9").symlink_to(outside / "v9", target_is_directory=True)
    (root / "profiles/v10").mkdir()
    (root / "profiles/v10/summary.txt").symlink_to(outside / "summary.txt")
    return root


def scan(root: Path) -> dict:
    return {c.dir: c for c in scan_profiles(WorkTreeFiles(root), NON_TARGET)}


def test_both_layouts_are_found_sorted_by_dir(trace):
    captures = scan_profiles(WorkTreeFiles(trace), NON_TARGET)
    assert [c.dir for c in captures] == [
        "profiles/episode_4",
        "profiles/episode_4/shape-1",
        "profiles/episode_5/shape-0",  # episode_5 holds only shape dirs: a container, not a capture
        "profiles/v10",
        "profiles/v12-retry",
        "profiles/v12_b",
        "profiles/v3",
        "profiles/v7",
        "profiles/v8",
    ]
    where = {c.dir: (c.version, c.variant, c.episode, c.shape) for c in captures}
    assert where["profiles/v3"] == ("v3", None, None, None)
    assert where["profiles/v12_b"] == ("v12", "b", None, None)
    assert where["profiles/v12-retry"] == ("v12", "retry", None, None)
    assert where["profiles/episode_4"] == (None, None, 4, None)
    assert where["profiles/episode_4/shape-1"] == (None, None, 4, 1)


def test_version_numbers_lose_leading_zeros(tmp_path):
    write(tmp_path, "profiles/v03/summary.txt", summary("k"))
    write(tmp_path, "profiles/V007_rerun/summary.txt", summary("k"))
    write(tmp_path, "profiles/episode_04/summary.txt", summary("k"))
    got = {c.dir: (c.version, c.variant, c.episode) for c in scan_profiles(WorkTreeFiles(tmp_path), [])}
    assert got == {
        "profiles/V007_rerun": ("v7", "rerun", None),
        "profiles/episode_04": (None, None, 4),
        "profiles/v03": ("v3", None, None),
    }


def test_other_dirs_are_ignored_and_reported(trace):
    assert ignored_profile_dirs(WorkTreeFiles(trace)) == ["profiles/latest"]
    assert "profiles/latest" not in scan(trace)


def test_summary_naming_the_rng_kernel_is_unusable(trace):
    v3 = scan(trace)["profiles/v3"]
    assert (v3.kernel, v3.kernel_source) == (RNG, "summary.txt")
    assert not v3.usable
    assert v3.unusable_reason == f"captured harness kernel {RNG}"
    assert v3.report == "profiles/v3/REPORT.md"
    assert v3.duration_us is None


def test_summary_naming_a_triton_kernel_is_usable_with_report_and_csv_time(trace):
    v12 = scan(trace)["profiles/v12_b"]
    assert v12.usable and v12.unusable_reason is None
    # summary.txt outranks the CSV, whose first launch is the RNG fill.
    assert (v12.kernel, v12.kernel_normalized, v12.kernel_source) == (
        "_fused_softmax_kernel",
        "_fused_softmax_kernel",
        "summary.txt",
    )
    assert v12.report == "profiles/v12_b/REPORT.md"
    assert v12.duration_us == 35.2  # the target's launch in the CSV, not the RNG's 4.16


def test_metrics_key_run_json_alone_names_the_kernel(trace):
    retry = scan(trace)["profiles/v12-retry"]
    assert (retry.kernel, retry.kernel_source) == ("_fused_softmax_kernel", "analysis/metrics_key_run.json")
    assert retry.usable and retry.report is None
    assert retry.duration_us is None  # only an ncu CSV gives the time


def test_broken_json_is_skipped_for_the_next_source(trace):
    v7 = scan(trace)["profiles/v7"]
    assert (v7.kernel, v7.kernel_source) == ("_online_softmax", "analysis/metrics_key_run.txt")
    assert v7.usable


@pytest.mark.parametrize("doc", ['{"__kernel_name__": ', "[1, 2]", '{"__kernel_name__": 7}', "[" * 100_000])
def test_malformed_metrics_json_alone_gives_no_kernel(tmp_path, doc):
    write(tmp_path, "profiles/v1/analysis/metrics_key_run.json", doc)
    (v1,) = scan_profiles(WorkTreeFiles(tmp_path), NON_TARGET)
    assert v1.kernel is None and v1.unusable_reason == "no kernel name found"


def test_undecodable_files_count_as_absent(trace):
    v8 = scan(trace)["profiles/v8"]
    assert v8.kernel is None and v8.kernel_source is None
    assert v8.unusable_reason == "no kernel name found"
    assert v8.report is None


def test_csv_with_rng_then_target_uses_the_target(trace):
    ep = scan(trace)["profiles/episode_4"]
    assert ep.kernel_normalized == "_fused_softmax_kernel"
    assert ep.kernel_source == "harness/ncu_full.csv"
    assert ep.usable and ep.duration_us == 35.2


def test_raw_page_csv_in_a_shape_dir(trace):
    shape = scan(trace)["profiles/episode_4/shape-1"]
    assert (shape.kernel, shape.kernel_source, shape.duration_us) == ("_gemm_gate_up_kernel", "ncu_raw.csv", 41.6)


def test_csv_that_captured_only_the_harness_kernel_is_unusable(tmp_path):
    rng_only = f'"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","{RNG}","Duration","ns","4160"\n'
    write(tmp_path, "profiles/v2/ncu.log", "==PROF== Connected to process 1 (python)\n" + rng_only)
    (v2,) = scan_profiles(WorkTreeFiles(tmp_path), NON_TARGET)
    assert (v2.kernel, v2.kernel_source) == (RNG, "ncu.log")
    assert v2.unusable_reason == f"captured harness kernel {RNG}"
    assert v2.duration_us is None


def test_garbage_export_names_nothing(tmp_path):
    write(tmp_path, "profiles/v2/ncu.log", (FIXTURES / "no_header.log").read_text())
    write(tmp_path, "profiles/v2/harness/build.log", "nvcc: error: something\n")
    (v2,) = scan_profiles(WorkTreeFiles(tmp_path), NON_TARGET)
    assert v2.kernel is None and v2.unusable_reason == "no kernel name found"


def test_configured_non_target_list_decides(tmp_path):
    write(tmp_path, "profiles/v1/summary.txt", summary("void at::native::reduce_kernel<512, 1>(R)"))
    files = WorkTreeFiles(tmp_path)
    assert scan_profiles(files, NON_TARGET)[0].usable
    flushed = scan_profiles(files, [RNG, "reduce_kernel"])[0]
    assert flushed.unusable_reason == "captured harness kernel reduce_kernel"


def test_empty_kernel_line_does_not_borrow_the_next_line(tmp_path):
    write(tmp_path, "profiles/v1/summary.txt", "Kernel:   \nDuration: 3 us\nKernel: real_kernel\n")
    (v1,) = scan_profiles(WorkTreeFiles(tmp_path), NON_TARGET)
    assert v1.kernel == "real_kernel"


def test_symlinks_out_of_the_trace_are_not_followed(trace):
    files = WorkTreeFiles(trace)
    captures = scan_profiles(files, NON_TARGET)
    assert "profiles/v9" not in {c.dir for c in captures}
    assert "leaked_secret_kernel" not in json.dumps([c.to_row() for c in captures])
    assert scan(trace)["profiles/v10"].kernel is None  # its summary.txt points outside
    assert any(s.startswith("profiles/v9:") for s in files.skipped())
    assert any(s.startswith("profiles/v10/summary.txt:") for s in files.skipped())


def test_no_profiles_dir(tmp_path):
    files = WorkTreeFiles(tmp_path)
    assert scan_profiles(files, NON_TARGET) == []
    assert ignored_profile_dirs(files) == []


def test_every_row_matches_the_schema(trace):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    rows = [c.to_row() for c in scan_profiles(WorkTreeFiles(trace), NON_TARGET)]
    assert len(rows) == 9
    for row in rows:
        jsonschema.validate(row, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert set(rows[0]) == {
        "dir",
        "version",
        "variant",
        "episode",
        "shape",
        "kernel",
        "kernel_normalized",
        "kernel_source",
        "usable",
        "unusable_reason",
        "report",
        "duration_us",
    }


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"usable": True, "unusable_reason": "captured harness kernel x"},
        {"usable": False, "unusable_reason": None},
        {"version": "v03"},
        {"episode": 4},  # a version dir cannot also be an episode
        {"kernel": None},  # usable without a kernel
        {"duration_us": 0},
    ],
)
def test_schema_rejects_inconsistent_rows(trace, change):
    row = scan(trace)["profiles/v12_b"].to_row()
    jsonschema.validate(row, SCHEMA, cls=jsonschema.Draft202012Validator)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**row, **change}, SCHEMA, cls=jsonschema.Draft202012Validator)
