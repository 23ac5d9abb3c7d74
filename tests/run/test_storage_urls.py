"""Traces as storage URLs (#30 item 2): taken as written, never stat'ed on the controller, only bundles;
and the run summary naming the job's copies of results by their URLs."""

import pytest

from optrace.errors import InputError
from optrace.run.lifecycle import as_stored
from optrace.run.settings import checked
from optrace.run.sheet import entry_for_path, fingerprint, is_url, read_sheet, select_traces

URL = "s3://bucket/traces/kernel_opt_004_gemm.bundle"


def test_a_url_is_told_from_a_path():
    assert is_url(URL) and is_url("gs://b/x.bundle") and is_url("s3+tls://b/x")
    assert not is_url("/data/s3://x") and not is_url("traces/x.bundle") and not is_url("-h")


def test_a_url_trace_keeps_its_url_and_is_named_by_its_object():
    e = entry_for_path(URL, "H100")
    assert (e.path, e.label, e.slug) == (URL, "kernel_opt_004_gemm", "004-gemm")
    (e,) = select_traces({"trace": URL}, "x", "x", environ={})
    assert e.path == URL  # no local existence check: Snakemake finds (or misses) the object


def test_a_sheet_row_with_a_url_is_not_made_a_local_path(tmp_path):
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(f"label\tpath\ngemm\t{URL}\nlocal\tkernel_opt_005\n")
    url_row, local_row = read_sheet(sheet)
    assert url_row.path == URL
    assert local_row.path == str(tmp_path / "kernel_opt_005")


@pytest.mark.parametrize(
    "url, says",
    [
        ("s3://bucket/traces/kernel_opt_004_gemm", "must be a .bundle file"),
        ("s3://bucket/x.bundle?versionId=1", "no query"),
    ],
)
def test_a_url_that_cannot_be_a_trace_is_one_line_naming_the_row(tmp_path, url, says):
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(f"label\tpath\ngemm\t{url}\n")
    with pytest.raises(InputError) as exc:
        read_sheet(sheet)
    assert exc.value.where == f"{sheet}:2" and says in exc.value.problem
    with pytest.raises(InputError) as exc:
        checked({"trace": url})
    assert says in exc.value.problem


def test_a_url_fingerprint_is_its_url_without_touching_the_file_system(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s3:").mkdir()  # a local look-alike of the URL's path must not be read
    assert fingerprint(URL) == fingerprint(URL) != fingerprint(URL.replace("004", "005"))
    assert fingerprint(URL) != "missing"


def test_the_summary_names_storage_copies_by_their_url():
    text = "  dataset            .snakemake/storage/s3/b/run1/results/dataset/README.md\n  log: results/logs/x.log\n"
    shown = as_stored(text, ".snakemake/storage/s3/", "s3://")
    assert "  dataset            s3://b/run1/results/dataset/README.md\n" in shown
    assert "  log: results/logs/x.log" in shown  # a path outside the copy is left as it is
