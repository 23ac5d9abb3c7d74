"""The run summary every target prints (`optrace run-summary`, optrace.run.lifecycle -> optrace.run.summary),
and `snakemake --report`. Real snakemake runs (marked `workflow`), shared across asserts: each costs seconds.
"""

import json
import os
import subprocess
import sys

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.scrub.denylist_file import DENYLIST_ENV, STATED_NONE
from tests.support import tracekit
from tests.support.workflow import copy_workflow, rules_run, run_snakemake

EXAMPLE = "007-fused-add-rmsnorm-h4096"
BAD_ID = "nvidia.h100.triton.rmsnorm-and-fused-add-rmsnorm.invented-x1"


def summary_of(res) -> str:
    out = res.stdout
    assert "Run summary" in out, res.stderr[-3000:]
    return out[out.index("Run summary") :]


def trace_line(text: str, slug: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(slug))


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    """The example end to end, then an agent-style bad record: a plain run, `validate`, and strict."""
    wd = copy_workflow(tmp_path_factory.mktemp("summary") / "wf")
    runs = {"clean": run_snakemake(wd, check=False)}
    runs["clean"].staged = json.loads((wd / "results/staging/staged.json").read_text())["staged"]
    runs["clean"].report = json.loads((wd / f"results/staging/reports/{EXAMPLE}/validation.json").read_text())
    unset = {k: v for k, v in os.environ.items() if k != DENYLIST_ENV}
    runs["strict_no_denylist"] = run_snakemake(wd, "--config", "strict=true", check=False, env=unset)
    runs["strict_none_stated"] = run_snakemake(
        wd, "--config", "strict=true", check=False, env={**unset, DENYLIST_ENV: STATED_NONE}
    )
    bad = wd / "results/distilled" / EXAMPLE / f"{BAD_ID}.json"
    bad.write_text(json.dumps({"id": BAD_ID}))
    runs["plain"] = run_snakemake(wd, check=False)
    runs["validate"] = run_snakemake(wd, "validate", check=False)
    bad.write_text(json.dumps({"id": BAD_ID, "type": "strategy"}))  # a changed record: the run has work to do
    runs["strict"] = run_snakemake(wd, "--config", "strict=true", check=False)
    runs["strict_again"] = run_snakemake(wd, "--config", "strict=true", check=False)  # nothing is stale now
    return wd, runs


@pytest.mark.workflow
def test_a_clean_run_says_what_was_staged_and_where_the_results_are(example_runs):
    _wd, runs = example_runs
    res = runs["clean"]
    assert res.returncode == 0
    text = summary_of(res)
    staged, report = res.staged, res.report
    assert len(staged) > 0
    line = trace_line(text, EXAMPLE)
    assert f"{report['counts']['records']} records: {len(staged)} staged, 0 failed validation" in line
    assert f"{len(report['packets_without_record'])} packets without a record" in line
    assert f"total: 1 traces (0 failed), {report['counts']['records']} records validated, {len(staged)} staged" in text
    for label, path in (
        ("staging README", "results/staging/README.md"),
        ("validation summary", "results/staging/reports/validation-summary.json"),
        ("dataset", "results/dataset/README.md"),
    ):
        assert any(ln.split() == [*label.split(), path] for ln in text.splitlines()), (label, text)
    assert "FAIL" not in text and "strict" not in text


@pytest.mark.workflow
def test_a_failing_record_is_named_with_its_first_gate_message_and_does_not_fail_the_run(example_runs):
    _, runs = example_runs
    res = runs["plain"]
    assert res.returncode == 0  # default: agent batches iterate
    text = summary_of(res)
    assert "1 failed validation" in trace_line(text, EXAMPLE)
    fail = next(ln for ln in text.splitlines() if ln.strip().startswith("FAIL "))
    assert f"FAIL distilled/{EXAMPLE}/{BAD_ID}.json [schema" in fail
    message = text.splitlines()[text.splitlines().index(fail) + 1].strip()
    assert message == "$: 'schema' is a required property"
    assert "strict is off: failing records do not change the exit status" in text


@pytest.mark.workflow
def test_the_validate_target_restages_rewrites_the_readme_and_exits_1(example_runs):
    wd, runs = example_runs
    res = runs["validate"]
    assert res.returncode == 1
    text = summary_of(res)
    assert f"FAIL distilled/{EXAMPLE}/{BAD_ID}.json" in text
    assert "this run exits 1 because a record failed (`snakemake validate`)" in text
    staged = json.loads((wd / "results/staging/staged.json").read_text())
    assert BAD_ID in {f["id"] for f in staged["failed"]}
    assert "1 failed validation" in (wd / "results/staging/README.md").read_text()


@pytest.mark.workflow
def test_strict_makes_a_failing_record_exit_1(example_runs):
    _, runs = example_runs
    res = runs["strict"]
    assert res.returncode == 1
    text = summary_of(res)
    assert "1 failed validation" in trace_line(text, EXAMPLE)
    assert "this run exits 1 because a record failed (strict: true)" in text


@pytest.mark.workflow
def test_a_run_without_a_denylist_says_so_and_fails_only_under_strict(example_runs):
    """#29: the summary names a missing denylist; strict fails on it unless the user stated there is none."""
    _, runs = example_runs
    plain = summary_of(runs["clean"])
    if not os.environ.get(DENYLIST_ENV):  # the suite's own environment names none
        assert runs["clean"].returncode == 0
        assert f"no denylist: ${DENYLIST_ENV} is unset" in plain
        assert "without a denylist" not in plain  # a plain run says so and goes on
    res = runs["strict_no_denylist"]
    assert res.returncode == 1
    assert "this run exits 1 because it ran without a denylist (strict: true)" in summary_of(res)
    stated = runs["strict_none_stated"]
    assert stated.returncode == 0, summary_of(stated)
    assert "no denylist" not in summary_of(stated) and "no denylist" not in stated.stderr


@pytest.mark.workflow
def test_strict_checks_even_when_nothing_is_stale(example_runs):
    """#29: a CI job re-running a strict sheet with nothing to do must not pass over a failing record."""
    _, runs = example_runs
    res = runs["strict_again"]
    assert rules_run(res) == ["all"]  # no stage ran: only the target that judges the run
    assert res.returncode == 1
    assert "this run exits 1 because a record failed (strict: true)" in summary_of(res)


@pytest.mark.workflow
def test_a_failed_trace_and_a_partial_target(tmp_path):
    """`snakemake recon` over a sheet with a trace that states no GPU: the failed trace with its one
    line, the good one not validated yet, and aggregates not written."""
    wd = copy_workflow(tmp_path / "wf")
    tracekit.iteration_era(tmp_path / "kernel_opt_020_ok")
    build_trace(tmp_path / "kernel_opt_021_nogpu", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0)})])
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_020_ok\t{tmp_path / 'kernel_opt_020_ok'}\n"
        f"kernel_opt_021_nogpu\t{tmp_path / 'kernel_opt_021_nogpu'}\n"
    )
    res = run_snakemake(wd, "recon", "--keep-going", "--config", f"traces={sheet}", check=False)
    assert res.returncode == 0  # a failed trace is data (#13): its placeholders let the other traces go on
    text = summary_of(res)
    failed = trace_line(text, "021-nogpu")
    assert failed.split("FAILED at ")[1].startswith("ingest: error: ") and "states no GPU" in failed
    assert "log: results/logs/ingest/021-nogpu.log" in text
    assert "not validated" in trace_line(text, "020-ok")
    assert "total: 2 traces (1 failed), 0 records validated" in text
    assert "staging README" not in text  # the target reaches no aggregate: the summary points to none


# --- snakemake --report ---------------------------------------------------------------------------


def report_items(html: str) -> dict:
    start = html.index('<script id="results">')
    body = html[start : html.index("</script>", start)]
    return json.loads(body[body.index("{") : body.rindex("}") + 1])


@pytest.mark.workflow
def test_the_report_holds_each_traces_plots_and_reports_and_both_readmes(example_runs):
    import base64

    wd, _ = example_runs
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "--report", "report.html"], cwd=wd, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]
    items = report_items((wd / "report.html").read_text())
    reports = f"results/staging/reports/{EXAMPLE}"
    expected = {
        f"{reports}/ladder.svg",
        f"{reports}/recon.html",  # each Markdown report is an HTML page of its own (optrace report-page)
        f"{reports}/partition.html",
        "results/staging/README.html",
        "results/dataset/README.html",
    }
    assert set(items) == expected
    for path, item in items.items():
        assert len(item["caption"]) > 100, path  # the caption from workflow/report/*.rst
        data = item["data_uri"].split("base64,", 1)[1]
        assert base64.b64decode(data) == (wd / path).read_bytes(), path  # the file itself, embedded
    for name in ("ladder.svg", "recon.html", "partition.html"):
        assert EXAMPLE in items[f"{reports}/{name}"]["caption"]  # the caption names its trace
    assert items[f"{reports}/ladder.svg"]["mime_type"] == "image/svg+xml"


# --- the module on its own: whatever exists is read, nothing else is assumed -------------------------


def places(root):
    from optrace.run.summary import Places

    return Places(
        validation_summary=root / "v.json",
        staged=root / "staged.json",
        staging_readme=root / "README.md",
        dataset=root / "dataset/README.md",
        trace_report=str(root / "reports/{slug}/validation.json"),
    )


def test_an_empty_results_tree_and_a_crashed_job(tmp_path):
    from optrace.run.summary import StageFiles, collect, exit_status, render

    stages = [
        StageFiles("ingest", str(tmp_path / "logs/ingest/{slug}.log"), (str(tmp_path / "work/{slug}/meta.json"),))
    ]
    log = tmp_path / "logs/ingest/b.log"
    log.parent.mkdir(parents=True)
    log.write_text("Traceback (most recent call last):\n  File x\nMemoryError: out of memory\n")
    result = collect(["a", "b"], stages, places(tmp_path))
    text = render(result, "`snakemake validate`", need_records=True)
    assert trace_line(text, "a").split() == [
        "a",
        "not",
        "validated",
        "(the",
        "target",
        "stopped",
        "before",
        "validation)",
    ]
    assert trace_line(text, "b").split(None, 1)[1] == "FAILED at ingest: MemoryError: out of memory"
    assert f"{tmp_path / 'README.md'}  (not written)" in text and "no records to validate" in text
    assert exit_status(result, "`snakemake validate`", need_records=True) == 1
    assert exit_status(result, "", need_records=False) == 0
    (tmp_path / "work/b").mkdir(parents=True)
    (tmp_path / "work/b/meta.json").write_text("{}")  # re-run succeeded: the old log no longer counts
    assert collect(["b"], stages, places(tmp_path)).failed_traces == []


def test_the_summary_reads_the_validation_summary_while_it_is_current(tmp_path):
    # one file instead of every trace's report, and no gate code in the Snakemake controller; a report
    # newer than the summary (the summary job did not run after it) sends it back to the reports
    import os

    from optrace.gates.validate import summarize, trace_report
    from optrace.run.summary import collect

    where = places(tmp_path)
    reports = {}
    for slug in ("a", "b"):
        path = tmp_path / f"reports/{slug}/validation.json"
        path.parent.mkdir(parents=True)
        reports[slug] = trace_report(slug, [], [f"seg-{slug}"])
        path.write_text(json.dumps(reports[slug]))
        os.utime(path, (1000, 1000))
    merged = summarize([(f"reports/{s}/validation.json", r) for s, r in reports.items()])
    merged["traces"][0]["packets_without_record"] = 7  # what only the summary says
    where.validation_summary.write_text(json.dumps(merged))
    os.utime(where.validation_summary, (2000, 2000))
    got = {t.slug: t.without_record for t in collect(["a", "b"], [], where).traces}
    assert got == {"a": 7, "b": 1}
    os.utime(tmp_path / "reports/b/validation.json", (3000, 3000))  # validated again since
    got = {t.slug: t.without_record for t in collect(["a", "b"], [], where).traces}
    assert got == {"a": 1, "b": 1}
    where.validation_summary.write_text('{"schema": "something else", "traces": [], "by_record": []}')
    os.utime(where.validation_summary, (4000, 4000))
    assert {t.slug: t.without_record for t in collect(["a", "b"], [], where).traces} == {"a": 1, "b": 1}


def test_a_summary_that_does_not_cover_a_validated_trace_is_not_current(tmp_path):
    """A validation summary newer than every report but written from other reports (a sheet without trace
    b, b's report from an earlier run) hid b: 'not validated' instead of its counts."""
    import os

    from optrace.gates.validate import summarize, trace_report
    from optrace.run.summary import collect

    where = places(tmp_path)
    for slug in ("a", "b"):
        path = tmp_path / f"reports/{slug}/validation.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(trace_report(slug, [], [f"seg-{slug}"])))
        os.utime(path, (1000, 1000))
    only_a = summarize([("reports/a/validation.json", trace_report("a", [], ["seg-a"]))])
    where.validation_summary.write_text(json.dumps(only_a))
    os.utime(where.validation_summary, (2000, 2000))
    got = {t.slug: t.validated for t in collect(["a", "b"], [], where).traces}
    assert got == {"a": True, "b": True}


def test_a_summary_dated_in_the_future_is_not_current(tmp_path):
    """A summary whose mtime is ahead of the clock (a touched file, a skewed share) stayed 'newer' than
    every report validated after it, so a stale success would be reported."""
    import os
    import time

    from optrace.gates.validate import summarize, trace_report
    from optrace.run.summary import collect

    where = places(tmp_path)
    path = tmp_path / "reports/a/validation.json"
    path.parent.mkdir(parents=True)
    report = trace_report("a", [], ["seg-a"])
    path.write_text(json.dumps(report))
    merged = summarize([("reports/a/validation.json", report)])
    merged["traces"][0]["packets_without_record"] = 7  # what the stale summary says
    where.validation_summary.write_text(json.dumps(merged))
    future = time.time() + 86400
    os.utime(where.validation_summary, (future, future))
    assert [t.without_record for t in collect(["a"], [], where).traces] == [1]
    where.staged.write_text(json.dumps({"staged": [{"trace": "a"}] * 3}))  # a staging older than it claims
    os.utime(where.staged, (future, future))
    assert [t.staged for t in collect(["a"], [], where).traces] == [None]


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: {**s, "traces": [{"slug": "a"}]},
        lambda s: {**s, "by_record": [{"slug": "a"}]},
        lambda s: {**s, "traces": [{**s["traces"][0], "records": "many"}]},
    ],
    ids=["trace-without-counts", "record-without-status", "count-not-a-number"],
)
def test_a_hand_edited_summary_or_staged_list_is_never_a_traceback(tmp_path, edit):
    import os

    from optrace.gates.validate import summarize, trace_report
    from optrace.run.summary import collect, render

    where = places(tmp_path)
    path = tmp_path / "reports/a/validation.json"
    path.parent.mkdir(parents=True)
    report = trace_report("a", [], ["seg-a"])
    path.write_text(json.dumps(report))
    os.utime(path, (1000, 1000))
    where.validation_summary.write_text(json.dumps(edit(summarize([("reports/a/validation.json", report)]))))
    os.utime(where.validation_summary, (2000, 2000))
    where.staged.write_text(json.dumps({"staged": [3, None, "x"]}))
    lines = collect(["a"], [], where).traces
    assert [(t.validated, t.without_record) for t in lines] == [(True, 1)]
    assert "a" in render(collect(["a"], [], where))


def test_a_fifo_where_an_output_goes_is_never_read(tmp_path):
    """The summary looks into each stage output for pertrace's placeholder: a FIFO there blocked the
    Snakemake handler that prints the summary, forever."""
    import os
    import signal

    from optrace.run.summary import StageFiles, collect

    out = tmp_path / "work/a/meta.json"
    out.parent.mkdir(parents=True)
    os.mkfifo(out)
    stages = [
        StageFiles("ingest", str(tmp_path / "logs/ingest/{slug}.log"), (str(tmp_path / "work/{slug}/meta.json"),))
    ]
    signal.signal(signal.SIGALRM, lambda *a: pytest.fail("the summary blocked on a FIFO"))
    signal.alarm(10)
    try:
        assert collect(["a"], stages, places(tmp_path)).failed_traces == []
    finally:
        signal.alarm(0)


def _one_failed_trace(tmp_path):
    from optrace.run.summary import StageFiles

    stages = [StageFiles("ingest", str(tmp_path / "logs/{slug}.log"), (str(tmp_path / "work/{slug}/meta.json"),))]
    meta = tmp_path / "work/bad/meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text('{"failed":{"stage":"ingest","reason":"t: states no GPU"},"slug":"bad"}')
    return stages


def test_strict_exit_status_counts_failed_traces(tmp_path):
    """The strict exit status (a surviving mutant of #27, and #28's CI case): a failed trace fails a
    strict run and the `validate` target, never a plain one, and the summary says which applies."""
    from optrace.run.summary import collect, exit_status, render

    result = collect(["bad"], _one_failed_trace(tmp_path), places(tmp_path))
    assert len(result.failed_traces) == 1 and result.failed_records == 0
    assert exit_status(result, "strict: true", need_records=False) == 1
    assert exit_status(result, "`snakemake validate`", need_records=False) == 1
    assert exit_status(result, "", need_records=False) == 0
    assert "this run exits 1 because 1 trace(s) failed (strict: true)" in render(result, "strict: true")
    assert "strict is off: failed traces do not change the exit status" in render(result, "")


def test_the_failed_record_count_is_the_sum_over_traces(tmp_path):
    from optrace.run.summary import Places, RunSummary, TraceLine, exit_status

    summary = RunSummary(Places(tmp_path / "v", tmp_path / "s", tmp_path / "r", tmp_path / "d", "x"))
    summary.traces = [
        TraceLine("a", validated=True, records=3, failed=2),
        TraceLine("b", validated=True, records=4, failed=1),
    ]
    assert summary.failed_records == 3 and summary.records == 7
    assert exit_status(summary, "strict: true", need_records=False) == 1
    summary.traces = [TraceLine("a", validated=True, records=3, failed=0)]
    assert exit_status(summary, "strict: true", need_records=False) == 0


def test_ingest_warnings_reach_the_summary(tmp_path):
    from optrace.run.summary import StageFiles, collect, render

    stages = [StageFiles("ingest", str(tmp_path / "logs/{slug}.log"), (str(tmp_path / "work/{slug}/meta.json"),))]
    meta = tmp_path / "work/a/meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"warnings": ["kernel.py of v0, v1 is a Git LFS pointer, not the kernel", "other"]}))
    text = render(collect(["a"], stages, places(tmp_path)))
    assert (
        f"ingest warned: kernel.py of v0, v1 is a Git LFS pointer, not the kernel (and 1 more); all in {meta}" in text
    )


def test_a_full_results_disk_is_said_and_explains_an_empty_log(tmp_path, monkeypatch):
    from optrace.run import summary as mod

    stages = [mod.StageFiles("packets", str(tmp_path / "logs/{slug}.log"), (str(tmp_path / "work/{slug}/p.json"),))]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/a.log").write_text("")
    monkeypatch.setattr(mod, "free_space", lambda path: 4096)
    result = mod.collect(["a"], stages, places(tmp_path))
    text = mod.render(result)
    assert "no space left on the device holding" in text and "(4096 bytes free)" in text
    assert "is empty: no space left on the device (the job could not even write why)" in trace_line(text, "a")
    monkeypatch.setattr(mod, "free_space", lambda path: 10 * mod.MIN_FREE_BYTES)
    assert "no space" not in mod.render(mod.collect(["a"], stages, places(tmp_path)))


def test_the_summary_escapes_what_it_prints(tmp_path):
    from optrace.run.summary import StageFiles, collect, render

    stages = [StageFiles("ingest", str(tmp_path / "logs/{slug}.log"), (str(tmp_path / "work/{slug}/meta.json"),))]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/a.log").write_text("error: /t/kernel_\x1b]0;owned\x07: not a git work tree\n")
    text = render(collect(["a"], stages, places(tmp_path)))
    assert "\x1b" not in text and "\x07" not in text and "kernel_\\x1b]0;owned\\x07" in text
