"""`optrace validate`: the per-trace report, the content-hash cache, the summary across traces, and the
Snakemake rules (one job per trace, a summary, and a `validate` target that fails without getting stuck).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from optrace.gates import tracerun, validate
from optrace.gates.trace.injection import SLUG
from optrace.gates.trace.runner import ALL_GATES
from optrace.gates.validate import CACHE_NAME, TracePaths, summarize, validate_trace
from optrace.mine.packetfile import write_packet_file
from optrace.secret import CACHE_KEY_ENV
from tests.support.mined import copy_mined, mined_example, packet_file, packets_path
from tests.support.schemas import assert_valid, load_schema
from tests.support.workflow import run_snakemake


def write_record(path: Path, record) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record if isinstance(record, str) else json.dumps(record, ensure_ascii=False, indent=1) + "\n")


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    return mined_example(tmp_path_factory.mktemp("mined"))


@pytest.fixture
def results(mined, tmp_path):
    """A results root with the example's packets, ingest facts and the drafter's records."""
    root, bench = mined
    out = tmp_path / "results"
    copy_mined(root, out, SLUG)
    for rel, record in bench.records:
        write_record(out / rel, record)
    return out


def run(results: Path, **kw):
    return validate_trace(TracePaths.under(results, SLUG), **{"cache": results / "work" / SLUG / CACHE_NAME, **kw})


def summary_schema() -> dict:
    schema = load_schema("validation.schema.json")
    return {"$defs": schema["$defs"], "$ref": "#/$defs/summary"}


def test_the_report_gives_every_record_all_19_verdicts(results, mined):
    report, checked = run(results)
    assert_valid(report, "validation.schema.json")
    assert checked == report["counts"]["records"] == len(mined[1].records)
    assert report["counts"]["failed"] == 0
    assert [g["name"] for g in report["gates"]] == list(ALL_GATES)
    assert all(list(r["gates"]) == list(ALL_GATES) for r in report["records"])
    assert report["packets_without_record"]  # the drafter refuses packets too thin for a record


def test_rerunning_judges_nothing_and_writes_the_same_report(results):
    cold, _ = run(results)
    warm, checked = run(results)
    assert checked == 0 and warm == cold


def test_new_records_cost_work_for_the_new_records_only(results):
    folder = results / "distilled" / SLUG
    held = sorted(folder.glob("*.json"))[:3]
    texts = [p.read_text() for p in held]
    for p in held:
        p.unlink()
    run(results)
    for p, text in zip(held, texts):
        p.write_text(text)
    report, checked = run(results)
    assert checked == 3 and report["counts"]["failed"] == 0


def test_a_changed_record_or_packet_is_judged_again(results, mined):
    run(results)
    rel, record = mined[1].records[0]
    write_record(results / rel, {**record, "status": "deprecated"})
    assert run(results)[1] == 1
    packets = packet_file(results, SLUG)
    seg_id = next(e["seg_id"] for e in packets.manifest["packets"] if e["id"] == record["id"])
    files = {**packets.files, f"{seg_id}.json": packets.files[f"{seg_id}.json"] + "\n"}
    write_packet_file(packets_path(results, SLUG), packets.manifest, files)
    assert run(results)[1] == 1


def test_a_change_to_the_gates_invalidates_every_entry(results, monkeypatch):
    report, _ = run(results)
    monkeypatch.setattr(tracerun, "package_digest", lambda pkg: "edited")
    assert run(results)[1] == report["counts"]["records"]


def test_a_damaged_cache_is_a_cold_cache(results):
    report, _ = run(results)
    for junk in ("{not json", '{"format": 1, "entries": {"k": 1}}', '{"format": 1, "entries": [], "facts": 3}'):
        (results / "work" / SLUG / CACHE_NAME).write_text(junk)
        again, checked = run(results)
        assert again == report and checked == report["counts"]["records"]


def test_cache_entries_that_are_not_verdicts_are_judged_again(results):
    report, _ = run(results)
    cache_file = results / "work" / SLUG / CACHE_NAME
    cache = json.loads(cache_file.read_text())
    for entry in cache["entries"].values():
        entry["verdict"]["verdicts"] = {"schema": "not a list"}
    cache["facts"] = {"commits": ["not", "a", "map"], "usable_captures": []}
    cache_file.write_text(json.dumps(cache))
    again, checked = run(results)
    assert again == report and checked == report["counts"]["records"]


def test_a_symbolic_link_is_not_followed(results, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (results / "distilled" / SLUG / "nvidia.h100.triton.linked.record-x1.json").symlink_to(outside)
    report, _ = run(results)
    bad = next(r for r in report["records"] if "linked" in r["path"])
    assert bad["failed"] == ["schema"] and "cannot be read" in bad["gates"]["schema"]["messages"][0]


def test_cross_record_gates_are_recomputed_from_the_cache(results, mined, tmp_path):
    run(results)
    rel, record = mined[1].records[0]
    index = tmp_path / "index.json"
    index.write_text(
        json.dumps(
            {
                "schema": "clean-1.3",
                "count": 1,
                "records": [{"id": record["id"], "episode_key": "hopper|triton|misc|another_lever|operator"}],
            }
        )
    )
    report, checked = run(results, live_index=index)
    assert checked == 0
    failing = [r for r in report["records"] if r["status"] == "FAIL"]
    assert [r["path"] for r in failing] == [rel] and failing[0]["failed"] == ["store-overlap"]


@pytest.mark.parametrize(
    "text",
    [
        '{"id": ',
        "[1, 2]",
        '"a string"',
        "{}",
        '{"schema": "clean-1.3", "payload": 5, "retrieval": [], "evidence": {}}',
        b"\xff\xfe not utf-8",
    ],
)
def test_a_malformed_file_is_a_fail_with_its_path_never_a_traceback(results, text):
    path = results / "distilled" / SLUG / "nvidia.h100.triton.broken.record-x1.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "validate", "trace", "--results", str(results), "--slug", SLUG],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    report = json.loads((results / "staging/reports" / SLUG / "validation.json").read_text())
    bad = next(r for r in report["records"] if r["path"].endswith("broken.record-x1.json"))
    assert bad["status"] == "FAIL" and "schema" in bad["failed"]
    assert bad["gates"]["schema"]["messages"][0].startswith(
        f"distilled/{SLUG}/nvidia.h100.triton.broken.record-x1.json: "
    )
    assert report["counts"]["failed"] == 1


def test_hidden_temp_files_are_not_records(results):
    (results / "distilled" / SLUG / ".x.json.123.draft").write_text("{")
    (results / "distilled" / SLUG / ".half-written.json").write_text("{")
    report, _ = run(results)
    assert report["counts"]["failed"] == 0


def test_a_trace_without_records_yields_an_empty_report(results):
    shutil.rmtree(results / "distilled")
    report, _ = run(results)
    assert report["counts"] == {"records": 0, "passed": 0, "failed": 0}


def test_missing_packets_are_one_clear_line(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "validate", "trace", "--results", str(tmp_path), "--slug", "x"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "packets/x.json: file not found" in res.stderr


# --- summary and check -----------------------------------------------------------------------------


def fake_report(slug: str, rows: list[tuple[str, str, str]]) -> dict:
    """A passing report with records (file name, id, episode_key)."""
    gates = {g: {"status": "PASS", "messages": []} for g in ALL_GATES}
    return {
        "schema": validate.REPORT_SCHEMA,
        "slug": slug,
        "gates": [],
        "counts": {},
        "packets_without_record": [],
        "records": [
            {
                "path": f"distilled/{slug}/{name}",
                "id": rid,
                "episode_key": key,
                "seg_id": "s",
                "status": "PASS",
                "failed": [],
                "gates": json.loads(json.dumps(gates)),
            }
            for name, rid, key in rows
        ],
    }


def test_an_episode_two_traces_share_passes_and_is_listed():
    """Two runs that found one lever on one operator: admission confirms or conflicts, nothing fails."""
    key = "hopper|triton|f|t|operator"
    a = fake_report("a", [("x.json", "x", key), ("y.json", "y", "k-y")])
    b = fake_report("b", [("z.json", "z", key)])
    summary = summarize([("a.json", a), ("b.json", b)])
    jsonschema.validate(summary, summary_schema())
    assert (summary["records"], summary["passed"], summary["failed"]) == (3, 3, 0)
    assert summary["cross_trace_duplicate_ids"] == []
    assert summary["shared_episodes"] == [
        {
            "episode_key": key,
            "records": [
                {"slug": "a", "path": "distilled/a/x.json", "id": "x"},
                {"slug": "b", "path": "distilled/b/z.json", "id": "z"},
            ],
        }
    ]
    assert "1 episodes are held by records of several traces" in validate.format_summary(summary)


def test_an_id_two_traces_claim_fails_both_records():
    """Two records of one id would be one file in the store: both fail, whatever their episodes."""
    a = fake_report("a", [("x.json", "x", "hopper|triton|f|t|operator"), ("y.json", "y", "k-y")])
    b = fake_report("b", [("x.json", "x", "hopper|triton|f|u|operator")])
    summary = summarize([("a.json", a), ("b.json", b)])
    jsonschema.validate(summary, summary_schema())
    assert (summary["records"], summary["passed"], summary["failed"]) == (3, 1, 2)
    failing = {r["path"]: r for r in summary["by_record"] if r["status"] == "FAIL"}
    assert set(failing) == {"distilled/a/x.json", "distilled/b/x.json"}
    assert failing["distilled/a/x.json"]["failed"] == ["store-overlap"]
    assert "id 'x' is also claimed by distilled/b/x.json" in failing["distilled/a/x.json"]["messages"][0]
    assert len(summary["cross_trace_duplicate_ids"]) == 2 and summary["shared_episodes"] == []


def test_a_duplicate_episode_within_one_trace_still_fails_in_the_summary():
    """The trace's report failed both holders (one run is no confirmation of itself); the summary keeps that
    and lists no cross-trace share for it."""
    key = "hopper|triton|f|t|operator"
    a = fake_report("a", [("x.json", "x", key), ("y.json", "y", key)])
    for rec in a["records"]:
        rec["status"], rec["failed"] = "FAIL", ["store-overlap"]
        rec["gates"]["store-overlap"] = {"status": "FAIL", "messages": [f"{rec['path']}: episode_key {key!r} ..."]}
    summary = summarize([("a.json", a)])
    assert summary["failed"] == 2 and summary["shared_episodes"] == []


def test_a_report_of_the_wrong_shape_is_one_clear_line(tmp_path):
    report = tmp_path / "validation.json"
    report.write_text(json.dumps({"schema": validate.REPORT_SCHEMA, "slug": "a", "records": [{"path": 1}]}))
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "validate", "summary", str(report), "--out", str(tmp_path / "summary.json")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1


def test_check_exits_1_on_a_failing_record_or_on_no_record(tmp_path, capsys):
    def check(reports):
        path = tmp_path / "summary.json"
        path.write_text(json.dumps(summarize(reports)))
        return validate.main(["check", str(path)])

    ok = fake_report("a", [("x.json", "x", "k")])
    assert check([("a.json", ok)]) == 0
    bad = fake_report("a", [("x.json", "x", "k")])
    bad["records"][0].update(status="FAIL", failed=["verbatim"])
    bad["records"][0]["gates"]["verbatim"] = {"status": "FAIL", "messages": ["distilled/a/x.json: line 1 ..."]}
    assert check([("a.json", bad)]) == 1
    assert "FAIL distilled/a/x.json  [verbatim]" in capsys.readouterr().out
    assert check([]) == 1 and "no records to validate" in capsys.readouterr().out


# --- the workflow ----------------------------------------------------------------------------------

EXAMPLE = "007-fused-add-rmsnorm-h4096"


def snakemake(wd, *args):
    return run_snakemake(wd, *args, check=False)


def planned(wd, *targets) -> list[str]:
    """Rules a dry run would execute, sorted (from its job table)."""
    res = snakemake(wd, *targets, "-n", "--quiet", "rules")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["job", "count"])
    rows = [line.split() for line in lines[start + 2 :]]
    return sorted(row[0] for row in rows[: next(i for i, row in enumerate(rows) if row[0] == "total")])


@pytest.mark.workflow
def test_the_validate_target_fails_after_writing_every_report_and_does_not_get_stuck(workdir):
    res = snakemake(workdir, "validate")
    assert res.returncode == 0, res.stderr[-3000:]
    report = workdir / "results/staging/reports" / EXAMPLE / "validation.json"
    assert_valid(json.loads(report.read_text()), "validation.schema.json")
    jsonschema.validate(
        json.loads((workdir / "results/staging/reports/validation-summary.json").read_text()), summary_schema()
    )
    assert planned(workdir, "validate") == ["validate"]  # nothing to redo; the check itself always runs

    bad = workdir / "results/distilled" / EXAMPLE / "nvidia.h100.triton.norm.invented-x1.json"
    write_record(bad, {"id": "nvidia.h100.triton.norm.invented-x1"})
    # a new record re-runs only this trace's validation, the summary, stage and README; never distill or before
    assert planned(workdir, "validate") == [
        "readme",
        "stage",
        "store_tree",
        "validate",
        "validate_summary",
        "validate_trace",
    ]
    res = snakemake(workdir, "validate")
    assert res.returncode == 1
    assert f"FAIL distilled/{EXAMPLE}/{bad.name}" in res.stdout
    # one summary (#27): Snakemake prints the failed target's log again, and the log holds only why it exits 1
    assert (res.stdout + res.stderr).count("Run summary") == 1
    assert "this run exits 1 because a record failed" in (workdir / "results/logs/summary/validate.log").read_text()
    assert bad.name in report.read_text()  # the report was written before the target failed
    assert planned(workdir, "validate") == ["validate"]  # failing did not leave a job to redo


# --- issue #10 class 8: the cache and the stage are bound to the bytes validated --------------------


def test_a_forged_pass_in_the_cache_is_not_believed(results):
    """Whoever writes work/ can compute every content hash, but not the HMAC under the key outside it."""
    rel = sorted((results / "distilled" / SLUG).glob("*.json"))[0]
    record = json.loads(rel.read_text())
    run(results)
    write_record(rel, {**record, "payload": {**record["payload"], "goal": record["payload"]["goal"] + " 87.6543%"}})
    report, _ = run(results)
    assert any(r["status"] == "FAIL" for r in report["records"])
    cache_file = results / "work" / SLUG / CACHE_NAME
    cache = json.loads(cache_file.read_text())
    for entry in cache["entries"].values():  # the forger says PASS everywhere, keeping the old MAC
        entry["verdict"]["verdicts"] = {g: [] for g in entry["verdict"]["verdicts"]}
    cache_file.write_text(json.dumps(cache))
    again, checked = run(results)
    assert checked == report["counts"]["failed"] == 1 and again == report  # the forged entry, judged again


def test_the_cache_key_lives_outside_the_results_tree(results, tmp_path, monkeypatch):
    key = tmp_path / "elsewhere" / "cache.key"
    monkeypatch.setenv(CACHE_KEY_ENV, str(key))
    run(results)
    assert key.is_file() and (key.stat().st_mode & 0o077) == 0 and results not in key.parents
    _, checked = run(results)
    assert checked == 0
    key.write_bytes(b"k" * 64)  # another key: no entry verifies, everything is judged again
    report, checked = run(results)
    assert checked == report["counts"]["records"]


def test_the_report_names_the_sha256_of_the_bytes_judged(results):
    import hashlib

    report, _ = run(results)
    for row in report["records"]:
        assert row["sha256"] == hashlib.sha256((results / row["path"]).read_bytes()).hexdigest()


def test_stage_refuses_bytes_edited_after_validation_even_with_mtime_restored(results):
    import os

    from optrace.publish.staging import CHANGED, stage_results

    report, _ = run(results)
    summary = summarize([("r", report)])
    victim = results / next(r["path"] for r in summary["by_record"] if r["status"] == "PASS")
    st = victim.stat()
    data = victim.read_bytes()
    forged = data.replace(b'"active"', b'"ACTIVE"', 1)  # same size
    assert len(forged) == len(data) and forged != data
    victim.write_bytes(forged)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    staged = stage_results(results, [SLUG], summary)
    assert any(f["path"].endswith(victim.name) and f["gates"] == [CHANGED] for f in staged["failed"])
    assert not any(s["id"] + ".json" == victim.name for s in staged["staged"])


@pytest.mark.parametrize("edited", ["a packet's measurement", "a version's latency", "no summary digest"])
def test_stage_refuses_packets_or_versions_edited_after_validation(results, edited):
    """Red-team F2: the worth score is computed from the packets and versions, so a geomean forged after
    validation made a reference kernel's prior 41 800x; stage stages a trace only under the inputs judged."""
    from optrace.publish.staging import CHANGED, stage_results

    summary = summarize([("r", run(results)[0])])
    honest = stage_results(results, [SLUG], summary)
    assert honest["staged"] and summary["traces"][0]["judged_inputs"]
    if edited == "a packet's measurement":
        packets = packet_file(results, SLUG)
        name = next(n for n in sorted(packets.files) if n.endswith(".json"))
        packet = json.loads(packets.files[name])
        packet["agent_facing"]["measurements"]["geomean_us"] = 0.001
        write_packet_file(packets_path(results, SLUG), packets.manifest, {**packets.files, name: json.dumps(packet)})
    elif edited == "a version's latency":
        versions = results / "work" / SLUG / "versions.jsonl"
        versions.write_bytes(versions.read_bytes().replace(b'"geomean_us":', b'"geomean_us": ', 1))
    else:
        summary["traces"][0]["judged_inputs"] = None  # a summary that names no judged inputs binds nothing
    staged = stage_results(results, [SLUG], summary)
    assert staged["staged"] == []
    passed = [r["id"] for r in summary["by_record"] if r["status"] == "PASS"]
    assert sorted(f["id"] for f in staged["failed"] if f["gates"] == [CHANGED]) == sorted(passed)
    assert not [p for p in (results / "staging" / "records").rglob("*.json") if p.name != "index.json"]


# --- a long synthetic run repeats levers: each repeat is its own episode -------------------------------


def _synthetic_trace():
    """benchmarks/synthetic.py's trace builder (the benchmark's traces), loaded by path."""
    import importlib.util

    from tests.support.paths import ROOT

    spec = importlib.util.spec_from_file_location("synthetic", ROOT / "benchmarks" / "synthetic.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_trace


def test_drafts_of_a_run_that_repeats_levers_pass_store_overlap(tmp_path):
    """300 versions of the benchmark's synthetic run keep and fail the same levers again (kept at one
    version, failed at a later one; kept twice): before episode keys were unique within a trace, 20 of
    its 135 drafted records failed store-overlap on a duplicate episode."""
    from optrace.cli import main as optrace

    trace, results, slug = tmp_path / "trace", tmp_path / "results", "syn"
    _synthetic_trace()(trace, 300)
    work, packets, reports = results / "work" / slug, packets_path(results, slug), results / "staging/reports" / slug
    for argv in (
        ["ingest", trace, "--out-dir", work],
        ["partition", "--work-dir", work, "--report", reports / "partition.md"],
        ["packets", trace, "--work-dir", work, "--out", packets, "--slug", slug],
        ["distill", "--packets", packets, "--out", results, "--report", reports / "distill.json", "--mode", "draft"],
        ["validate", "trace", "--results", results, "--slug", slug],
    ):
        assert optrace([str(a) for a in argv]) == 0, argv[0]
    report = json.loads((reports / "validation.json").read_text())
    records = report["records"]
    assert not [r["path"] for r in records if "store-overlap" in r["failed"]]
    repeats = [r for r in records if "#" in r["episode_key"]]
    assert len(repeats) >= 10 and all(r["status"] == "PASS" for r in repeats)
    assert len({r["episode_key"] for r in records}) == len(records)


def _first_copy(results: Path, staged: dict) -> Path:
    return results / "staging" / staged["staged"][0]["path"]


def _staged(results: Path) -> tuple[dict, dict[str, bytes]]:
    """(staged.json's content, every file of the store's tree) of one stage by hand."""
    from optrace.publish.staging import stage_results

    summary = stage_results(results, [SLUG], summarize([("r", run(results)[0])]))
    root = results / "staging" / "records"
    return summary, {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def test_a_restage_writes_the_same_tree_and_nothing_planted_survives(results):
    """The tree is written whole from the store file: a copy edited by hand, a planted copy and a stray
    file are gone after the next stage, and the same inputs give the same bytes."""
    first, files = _staged(results)
    assert len(files) > 5 and first["staged"] and "index.json" in files
    copy = _first_copy(results, first)
    copy.write_bytes(copy.read_bytes().replace(b'"score": ', b'"score": 1', 1))  # a rank the formula never gave
    planted = copy.with_name("nvidia.h100.triton.norm.planted-bbbbbb.json")
    planted.write_text('{"id": "planted"}\n')
    (copy.parent / "stray.txt").write_text("x")
    again, files_again = _staged(results)
    assert again == first and files_again == files
    assert not planted.exists() and not (copy.parent / "stray.txt").exists()
    assert (results / "staging" / "records" / "index.json").read_bytes() == (
        results / "staging" / "index.json"
    ).read_bytes()


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_fifo_or_link_at_a_copys_place_is_replaced_never_read(results, tmp_path, plant):
    """Staging is a tree anyone with the results can edit: a FIFO where a copy goes once blocked the
    stage's compare-before-write forever; a link to a file outside holding the copy's bytes stayed a link."""
    import os
    import signal

    first, files = _staged(results)
    copy = _first_copy(results, first)
    outside = tmp_path / "outside.json"
    outside.write_bytes(copy.read_bytes())
    copy.unlink()
    os.mkfifo(copy) if plant == "fifo" else copy.symlink_to(outside)
    signal.signal(signal.SIGALRM, lambda *a: pytest.fail("the stage blocked on a FIFO in staging/"))
    signal.alarm(20)
    try:
        again, files_again = _staged(results)
    finally:
        signal.alarm(0)
    assert again == first and files_again == files
    assert (
        copy.is_file()
        and not copy.is_symlink()
        and outside.read_bytes() == files[copy.relative_to(results / "staging" / "records").as_posix()]
    )


@pytest.mark.parametrize("where", ["copy", "stale", "records"])
def test_a_directory_or_file_where_the_tree_goes_is_replaced(results, where):
    first, files = _staged(results)
    copy = _first_copy(results, first)
    if where == "copy":
        copy.unlink()
        copy.mkdir()
        (copy / "keep.txt").write_text("x")
    elif where == "stale":
        (copy.parent / "stray.json").mkdir()
    else:
        shutil.rmtree(results / "staging" / "records")
        (results / "staging" / "records").write_text("not a folder")
    assert _staged(results) == (first, files)


def test_a_file_that_is_no_record_fails_without_an_id_and_the_rest_is_staged(results):
    # validate reports a file it cannot parse with id null: a verdict, not a malformed summary
    (results / "distilled" / SLUG / "broken.json").write_text("{not json")
    summary, _ = _staged(results)
    assert [f["id"] for f in summary["failed"] if f["path"].endswith("broken.json")] == [None]
    assert summary["staged"]


@pytest.mark.parametrize(
    "summary",
    [
        [],
        {"by_record": 5},
        {"by_record": [1]},
        {"by_record": [{"status": "PASS", "slug": SLUG, "path": 3, "id": "x", "sha256": "y"}]},
        {"by_record": [{"status": "PASS", "slug": SLUG, "path": "p", "id": None, "sha256": "y", "failed": []}]},
    ],
    ids=["a-list", "records-not-a-list", "record-not-an-object", "path-not-text", "passed-without-an-id"],
)
def test_stage_on_a_validation_summary_of_another_shape_is_one_line(results, tmp_path, capsys, summary):
    from optrace.cli import main as optrace

    validation = tmp_path / "v.json"
    validation.write_text(json.dumps(summary))
    argv = ["stage", "--results", results, "--validation", validation, "--summary", tmp_path / "s.json", SLUG]
    assert optrace([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {validation}: ")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(
    "manifest", [[], {"packets": [3]}, {"packets": 3}], ids=["a-list", "packet-not-an-object", "packets-not-a-list"]
)
def test_stage_on_a_manifest_of_another_shape_is_one_line(results, tmp_path, capsys, manifest):
    from optrace.cli import main as optrace
    from optrace.mine.packetfile import judged_inputs, read_packet_file

    summary = summarize([("r", run(results)[0])])
    packets_path(results, SLUG).write_text(
        json.dumps(manifest if not isinstance(manifest, dict) else {**manifest, "files": {}})
    )
    if isinstance(manifest, dict):  # as if validation had judged this file: stage's own reading is tested
        versions = (results / "work" / SLUG / "versions.jsonl").read_bytes()
        summary["traces"][0]["judged_inputs"] = judged_inputs(read_packet_file(packets_path(results, SLUG)), versions)
    validation = tmp_path / "v.json"
    validation.write_text(json.dumps(summary))
    argv = ["stage", "--results", results, "--validation", validation, "--summary", tmp_path / "s.json", SLUG]
    assert optrace([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_two_passed_records_swapped_after_validation_are_both_changed_never_staged(results):
    # the memo's key hashes each record's bytes now beside the verdict's hash: a swap is two edits
    from optrace.publish.staging import CHANGED, stage_results

    summary = summarize([("r", run(results)[0])])
    first = stage_results(results, [SLUG], summary)
    a, b = (results / "distilled" / SLUG / f"{s['id']}.json" for s in first["staged"][:2])
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    again = stage_results(results, [SLUG], summary)
    swapped = {first["staged"][0]["id"], first["staged"][1]["id"]}
    assert {f["id"]: f["gates"] for f in again["failed"] if f["id"] in swapped} == {i: [CHANGED] for i in swapped}
    assert not swapped & {s["id"] for s in again["staged"]}
    assert not [p for p in (results / "staging" / "records").rglob("*.json") if p.stem in swapped]


def test_validate_trace_without_a_results_root_is_named_every_file_it_reads(results, tmp_path):
    """The workflow's job is named each file (no results root); a file neither named nor under --results is
    refused with the flags that are missing, and named files give the report --results gives."""
    from optrace.errors import InputError
    from optrace.gates.validate import main

    with pytest.raises(InputError, match="--versions, --profiles, --meta, --out"):
        main(["trace", "--slug", SLUG, "--distilled", str(results / "distilled" / SLUG), "--packets", "p"])
    work = results / "work" / SLUG
    out = tmp_path / "named.json"
    named = ["--distilled", results / "distilled" / SLUG, "--packets", packets_path(results, SLUG)]
    named += [
        "--versions",
        work / "versions.jsonl",
        "--profiles",
        work / "profiles.jsonl",
        "--meta",
        work / "meta.json",
    ]
    assert main(["trace", "--slug", SLUG, *map(str, named), "--out", str(out)]) == 0
    assert not (work / CACHE_NAME).exists()  # the job keeps no cache
    assert main(["trace", "--slug", SLUG, "--results", str(results)]) == 0
    by_results = results / "staging" / "reports" / SLUG / "validation.json"
    assert json.loads(out.read_text()) == json.loads(by_results.read_text())
    assert (work / CACHE_NAME).is_file()  # a run by hand under --results does
