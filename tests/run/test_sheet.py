"""Which traces a run covers, and the cheap fingerprint that makes ingest stale."""

import os
import re

import pytest

from optrace.errors import InputError
from optrace.run.sheet import entry_for_path, fingerprint, head_sha, read_sheet, select_traces
from tests.support import tracekit


def test_sheet_rows_resolve_relative_paths_and_overrides(tmp_path):
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        "label\tpath\tproduct\tdsl\n# a comment\nkernel_opt_001_softmax\tt1\tH100\t\nmy trace\t/abs/t2\t\ttriton\n"
    )
    a, b = read_sheet(sheet)
    assert (a.slug, a.path, a.overrides) == ("001-softmax", str(tmp_path / "t1"), {"product": "H100"})
    assert (b.slug, b.path, b.overrides) == ("my-trace", "/abs/t2", {"dsl": "triton"})


@pytest.mark.parametrize(
    "text,problem",
    [
        ("", "has no rows"),
        ("name\tpath\nx\ty\n", "columns must be label, path"),
        ("label\tpath\nx\t\n", "every row needs a label and a path"),
        ("label\tpath\nkernel_opt_1_a\tp\n1-a\tq\n", "already used"),
    ],
)
def test_bad_sheets_name_the_file_and_problem(tmp_path, text, problem):
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(text)
    with pytest.raises(InputError) as exc:
        read_sheet(sheet)
    assert problem in exc.value.problem and str(sheet) in exc.value.where


def test_trace_and_traces_together_is_an_error():
    with pytest.raises(InputError, match="either"):
        select_traces({"trace": "a", "traces": "b"}, "ex", "ex")


def test_single_trace_label_from_bundle_stem_and_hardware_override():
    e = entry_for_path("/x/kernel_opt_004_gemm.bundle", "H100")
    assert (e.label, e.slug, e.overrides) == ("kernel_opt_004_gemm", "004-gemm", {"product": "H100"})


def test_example_is_the_default():
    (e,) = select_traces({"trace": "", "traces": "", "hardware": ""}, "results/example/x", "kernel_opt_007_x")
    assert e.example and e.slug == "007-x"


def test_fingerprint_tracks_head_and_untracked_files_but_not_other_files(tmp_path):
    tracekit.iteration_era(tmp_path / "t")
    base = fingerprint(str(tmp_path / "t"))
    assert base == fingerprint(str(tmp_path / "t"))
    (tmp_path / "t" / "scratch.txt").write_text("not read by ingest")
    assert fingerprint(str(tmp_path / "t")) == base
    (tmp_path / "t" / "profiles" / "v1").mkdir(parents=True)
    (tmp_path / "t" / "profiles" / "v1" / "summary.txt").write_text("Kernel: k\n")
    with_profile = fingerprint(str(tmp_path / "t"))
    assert with_profile != base
    os.system(
        f"cd {tmp_path / 't'} && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m 'v9: committed (+2%)'"
    )
    assert fingerprint(str(tmp_path / "t")) != with_profile
    assert fingerprint(str(tmp_path / "missing")) == "missing"


def test_head_sha_without_git_matches_git(tmp_path):
    head = tracekit.iteration_era(tmp_path / "t")
    assert head_sha(tmp_path / "t") == head
    os.system(f"cd {tmp_path / 't'} && git pack-refs --all && rm -f .git/refs/heads/main")
    assert head_sha(tmp_path / "t") == head


def test_a_neutral_label_never_reads_as_a_hash_to_the_anonymizer():
    """The hash name of a denylisted trace reaches packets and ids: it must not be refused as a hex id."""
    from optrace.run.sheet import neutral_label
    from optrace.scrub.anonymize import Scrubber

    scrubber = Scrubber.from_env("OPTRACE_TEST_NO_DENYLIST", {})
    names = {neutral_label(f"/data/traces/kernel_opt_{i:03d}_x") for i in range(500)}
    assert len(names) == 500
    assert not [n for n in names if scrubber.leaks(n) or re.search(r"[0-9a-f]{4,}", n.removeprefix("trace-"))]
