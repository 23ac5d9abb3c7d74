"""The ladder plot as a reviewer reads it: units, version labels, re-baselines and unit slips that do not
crush the scale, failed attempts apart from revert commits; checked on the realistic traces, and never
crashing on a number that is no latency (0, 1e308, NaN)."""

import copy
import json
import math
import re
import subprocess
import sys

import pytest

from optrace.jsonio import read_jsonl
from optrace.mine.ladder import Step, run_ladder
from optrace.report.ladderplot import REVERT_COMMIT, REVERTED, ladder_plot, render_svg
from optrace.report.recon import vs_floor_text
from tests.report.test_recon import svg_texts
from tests.support import realistic_traces as rt
from tests.support import tracekit

needs_data = pytest.mark.skipif(not rt.available(), reason="../shared/data is absent (a user's clone has none)")


@pytest.fixture(scope="module")
def realistic(tmp_path_factory):
    """name -> (rows, steps) of each realistic trace, ingested once."""
    if not rt.available():
        pytest.skip("../shared/data is absent")
    out = {}
    for name in rt.BUILDERS:
        tmp = tmp_path_factory.mktemp(name)
        trace = rt.build(name, tmp)
        subprocess.run(
            [sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", str(tmp / "w")],
            check=True,
            capture_output=True,
        )
        rows = read_jsonl(tmp / "w" / "versions.jsonl")
        out[name] = (rows, run_ladder(rows))
    return out


def points(plot):
    return [(x, y) for s in plot.series if not s.on_axis for x, y in s.points]


def band_share(plot, values) -> float:
    """The fraction of the plot's log height the values' own range takes."""
    from optrace.report.ladderplot import HEIGHT, MARGINS, _Axes

    ax = _Axes(plot)
    ys = [ax.y(v) for v in values]
    return (max(ys) - min(ys)) / (HEIGHT - MARGINS[1] - MARGINS[3])


@needs_data
@pytest.mark.parametrize(
    "name,unit", [("fib_rmsnorm", "µs"), ("aka_attention", "ms"), ("sgemm_ladder", "ms")], ids=lambda v: str(v)
)
def test_the_axis_speaks_the_unit_the_trace_reads_best_in(realistic, name, unit):
    rows, steps = realistic[name]
    plot = ladder_plot(rows, steps, name)
    svg = render_svg(plot)
    assert plot.unit[0] == unit and f"geomean latency ({unit}, log scale)" in svg_texts(svg)
    labels = [plot.tick_label(t) for t in plot.yticks]
    assert all(float(x) <= 1000 for x in labels), labels  # never 500000 ... 10000
    low, high = plot.ylim
    assert all(low <= y <= high for _, y in points(plot))
    assert min(plot.yticks) <= min(y for _, y in points(plot))  # the lowest value is not below the lowest tick


@needs_data
@pytest.mark.parametrize("name", list(rt.BUILDERS))
def test_every_version_is_labelled_with_v(realistic, name):
    rows, steps = realistic[name]
    plot = ladder_plot(rows, steps, name)
    texts = svg_texts(render_svg(plot))
    assert {t for t in texts if re.fullmatch(r"v\d+", t)} == {f"v{r['n']}" for r in rows}


@needs_data
@pytest.mark.parametrize("name", list(rt.BUILDERS))
def test_the_final_label_says_its_value_and_stands_clear_of_the_version_axis(realistic, name):
    from optrace.report.ladderplot import HEIGHT, MARGINS, _Axes, label_position

    rows, steps = realistic[name]
    plot = ladder_plot(rows, steps, name)
    (final,) = [lab for lab in plot.labels if lab.text.startswith("final: ")]
    assert final.text.endswith(plot.unit[0])
    _, y = label_position(final, _Axes(plot))
    assert MARGINS[1] + 10 < y < HEIGHT - MARGINS[3] - 2  # inside the axes, above the version labels


@needs_data
def test_revert_commits_are_marked_apart_from_failed_attempts(realistic):
    rows, steps = realistic["sgemm_ladder"]
    plot = ladder_plot(rows, steps, "sgemm")
    by_label = {s.label: s for s in plot.series}
    failed, reverts = by_label[REVERTED[2]], by_label[REVERT_COMMIT[2]]
    assert [x for x, _ in failed.points] == [3, 8] and [x for x, _ in reverts.points] == [4, 9]
    assert (failed.marker, failed.colour) != (reverts.marker, reverts.colour)
    assert REVERT_COMMIT[2] in svg_texts(render_svg(plot))


@needs_data
def test_a_unit_slip_gets_an_axis_of_its_own_and_the_story_keeps_its_height(realistic):
    """A version written in ns (x939) on the rmsnorm trace: one log axis would give the story a sliver."""
    rows, _ = realistic["fib_rmsnorm"]
    slipped = copy.deepcopy(rows)
    slip = next(r for r in slipped if r["version"] == "v7")
    slip["geomean_us"] *= 939
    steps = run_ladder(slipped)
    plot = ladder_plot(slipped, steps, "slip")
    assert len(plot.ybands) == 2 and "broken" in " ".join(svg_texts(render_svg(plot)))
    story = [s.geomean_us for s in steps if s.geomean_us and s.version != "v7"]
    assert band_share(plot, story) > 0.45  # on one axis: under 0.3
    single = ladder_plot(rows, run_ladder(rows), "plain")
    assert len(single.ybands) == 1  # a genuine re-baseline (x3, v11) stays on one axis


@needs_data
def test_recon_of_a_realistic_trace_prints_no_nonsense_percentage(realistic, tmp_path):
    rows, _ = realistic["fib_rmsnorm"]
    slipped = copy.deepcopy(rows)
    next(r for r in slipped if r["version"] == "v9")["geomean_us"] = 9000.0  # x939 of the floor, no evidence
    steps = run_ladder(slipped)
    text = " ".join(s.reason for s in steps) + " ".join(vs_floor_text(s.improve_pct) for s in steps)
    assert not re.search(r"-\d{3,}(\.\d+)?%", text), text
    assert "x slower" in text


def test_vs_floor_text():
    assert vs_floor_text(15.57) == "+15.57%" and vs_floor_text(-3.1) == "-3.10%"
    assert vs_floor_text(-93826.65) == "939.3x slower"
    assert vs_floor_text(None) == "" and vs_floor_text(float("nan")) == ""


# --- numbers that are no latency ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, -5.0, 1e308, float("inf"), float("nan"), 1e-320])
def test_a_number_that_is_no_latency_is_drawn_as_missing_never_a_crash(bad):
    rows = [{"version": f"v{n}", "n": n, "verdict": "kept" if n else "baseline", "reverts": None} for n in range(4)]
    steps = [
        Step(f"v{n}", n, o, "r", g, None, None, final=n == 2)
        for n, (o, g) in enumerate([("baseline", 40.0), ("milestone", 30.0), ("milestone", 20.0), ("flat", bad)])
    ]
    plot = ladder_plot(rows, steps, "t")
    svg = render_svg(plot)
    assert [x for s in plot.series if s.on_axis for x, _ in s.points] == [3]
    assert all(math.isfinite(y) and y > 0 for _, y in points(plot))
    assert "v3" in svg_texts(svg)


def test_recon_names_a_zero_latency_in_one_line(tmp_path):
    work = tracekit.ingested(tmp_path)
    rows = read_jsonl(work / "versions.jsonl")
    rows[-1]["geomean_us"] = 0.0  # what a killed run left behind
    (work / "versions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: {work / 'versions.jsonl'}: {rows[-1]['version']}: geomean_us 0.0 is not a positive latency; re-run ingest"
    ]


def test_recon_of_a_1e308_latency_writes_every_output(tmp_path):
    work = tracekit.ingested(tmp_path)
    rows = read_jsonl(work / "versions.jsonl")
    kept = [r for r in rows if r["verdict"] == "kept"][-1]
    kept["geomean_us"] = 1e308
    (work / "versions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    md = (tmp_path / "r" / "recon.md").read_text()
    (row,) = [line for line in md.splitlines() if "| 1e+308 |" in line]
    assert "%" not in row.split("|")[4] and "x slower" in row
    assert (tmp_path / "r" / "ladder.svg").read_text().startswith("<svg")
