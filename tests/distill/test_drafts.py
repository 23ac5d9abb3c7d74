"""distill's drafts file (optrace.distill.records): the records a trace's packets have, copied into one
declared output, so a validation or stage job that cannot see distilled/ (isolated jobs, #30) judges and
stages exactly what a job beside the area does; a record in the area comes first."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from optrace.distill.records import TraceRecords, drafts_json, read_drafts, records_digest
from optrace.errors import InputError
from optrace.gates.trace.injection import SLUG
from optrace.gates.validate import TracePaths, summarize, validate_trace
from optrace.publish import staging
from tests.support.mined import copy_mined, mined_example


def test_the_area_comes_first_and_the_copies_fill_in(tmp_path):
    area = tmp_path / "distilled" / "t"
    area.mkdir(parents=True)
    (area / "a.json").write_bytes(b'{"in": "area"}')
    records = TraceRecords(area, {"a.json": b'{"in": "copy"}', "b.json": b'{"only": "copy"}'})
    assert records.names() == ["a.json", "b.json"]
    assert records.read("a.json", 1000) == (b'{"in": "area"}', None)
    assert records.read("b.json", 1000) == (b'{"only": "copy"}', None)
    assert records.read("b.json", 4)[0] is None and "over the 4-byte limit" in records.read("b.json", 4)[1]
    assert TraceRecords(tmp_path / "none", {}).names() == []


def test_a_drafts_file_gives_back_the_very_bytes_even_undecodable_ones(tmp_path):
    raw = {"a.json": b'{"r\xe9sum\xe9": 1}', "b.json": '{"ok": "√"}'.encode()}
    path = tmp_path / "drafts.json"
    path.write_text(drafts_json("t", raw))
    assert read_drafts(path, "t") == raw
    assert read_drafts(None, "t") == {}
    path.write_text(json.dumps({"slug": "t", "failed": {"stage": "ingest", "reason": "x"}}))  # a placeholder
    assert read_drafts(path, "t") == {}


@pytest.mark.parametrize(
    "doc, problem",
    [
        ({"records": {"../up.json": "{}"}}, "not a record file name"),
        ({"records": {".hidden.json": "{}"}}, "not a record file name"),
        ({"records": {"a.txt": "{}"}}, "not a record file name"),
        ({"records": {"a.json": 3}}, "not an object of texts"),
        ([1], "not a JSON object"),
        ({"records": {"a.json": "\ud800"}}, "holds text that is not UTF-8"),
        ({"records": {"\udcff.json": "{}"}}, "holds text that is not UTF-8"),
        ({"slug": "other", "records": {}}, "is not a drafts file of trace t"),
        ({"format": 9, "records": {}}, "is not a drafts file of trace t"),
    ],
)
def test_a_damaged_drafts_file_is_one_line_naming_it(tmp_path, doc, problem):
    path = tmp_path / "drafts.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=problem) as err:
        read_drafts(path, "t")
    assert err.value.where == str(path)


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    return mined_example(tmp_path_factory.mktemp("mined"))


@pytest.fixture
def two_results(mined, tmp_path):
    """The example's drafted records in distilled/ (one machine), and the same trace with no area and
    the records only in the drafts file (a job that shares nothing)."""
    root, bench = mined
    beside, apart = tmp_path / "beside", tmp_path / "apart"
    for out in (beside, apart):
        copy_mined(root, out, SLUG)
    copies = {}
    for rel, record in bench.records:
        (beside / rel).parent.mkdir(parents=True, exist_ok=True)
        (beside / rel).write_text(json.dumps(record, indent=1))
        copies[(beside / rel).name] = (beside / rel).read_bytes()
    (apart / "work" / SLUG / "drafts.json").write_text(drafts_json(SLUG, copies))
    return beside, apart


def _validated_and_staged(results):
    report, _ = validate_trace(TracePaths.under(results, SLUG))
    summary = summarize([("r", report)])
    staged = staging.stage_results(results, [SLUG], summary)
    return report, staged, sorted(p.relative_to(results).as_posix() for p in (results / "staging").rglob("*.json"))


def test_validation_and_stage_of_the_copies_equal_those_of_the_area(two_results):
    beside, apart = two_results
    report, staged, files = _validated_and_staged(beside)
    report_apart, staged_apart, files_apart = _validated_and_staged(apart)
    assert report["counts"]["records"] > 5 and staged["staged"]
    assert report_apart == report and staged_apart == staged and files_apart == files
    assert not (apart / "distilled").exists()
    # a record in the area is judged over its copy
    shutil.copytree(beside / "distilled", apart / "distilled")
    victim = next((apart / "distilled" / SLUG).iterdir())
    victim.write_text("{broken")
    again, _ = validate_trace(TracePaths.under(apart, SLUG))
    assert next(r for r in again["records"] if r["path"].endswith(victim.name))["status"] == "FAIL"


def test_a_record_file_name_that_is_not_utf8_fails_that_record_alone(two_results):
    beside, _ = two_results
    area = beside / "distilled" / SLUG
    before = records_digest(area)
    with open(os.path.join(os.fsencode(area), b"\xff.json"), "wb") as f:
        f.write(b"{}")
    assert records_digest(area) != before  # the plan-time digest takes the name's bytes
    report, staged, _ = _validated_and_staged(beside)
    failed = [r for r in report["records"] if r["status"] == "FAIL"]
    assert [r["path"] for r in failed] == [f"distilled/{SLUG}/\\xff.json"]
    assert "file name is not UTF-8" in failed[0]["gates"]["schema"]["messages"][0]
    assert report["counts"]["passed"] == report["counts"]["records"] - 1 and staged["staged"]
    json.dumps(report, ensure_ascii=False).encode()  # the report is text
