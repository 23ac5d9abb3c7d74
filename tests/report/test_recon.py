"""Recon: the ladder preview, coverage, failures, profiler usability, live-store overlap, the plot."""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.jsonio import read_jsonl
from optrace.mine.ladder import run_ladder
from optrace.report.ladderplot import NO_NUMBER_Y, floor_at, ladder_plot, log_ticks, render_svg, version_ticks
from tests.support import tracekit


def svg_texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_recon_cli_on_a_trace(tmp_path):
    tracekit.iteration_era(
        tmp_path / "t",
        untracked={
            "profiles/v1/summary.txt": "Kernel: distribution_elementwise_grid_stride_kernel\n",
            "profiles/v1/REPORT.md": "**Root cause**: wrong kernel\n",
            "profiles/v5/summary.txt": "Kernel: _softmax_kernel\n",
        },
    )
    work, out = tmp_path / "work", tmp_path / "reports"
    subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(work)],
        check=True,
        capture_output=True,
    )
    index = tmp_path / "store" / "records" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text(
        json.dumps(
            {
                "schema": "clean-1.3",
                "records": [
                    {
                        "id": "nvidia.h100.triton.softmax.x-s01",
                        "type": "strategy",
                        "episode_key": "hopper|triton|softmax|x|operator",
                        "retrieval": {"scope": {"operator_family": "softmax"}},
                    },
                    {"id": "other", "type": "doc", "retrieval": {"scope": {"operator_family": "gemm"}}},
                ],
            }
        )
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "optrace",
            "recon",
            "--work-dir",
            str(work),
            "--out-dir",
            str(out),
            "--live-store",
            str(index),
        ],
        check=True,
        capture_output=True,
    )
    recon = json.loads((out / "recon.json").read_text())
    assert recon["coverage"]["verdicts"] == {"baseline": 1, "kept": 3, "reverted": 3, "none": 0}
    assert recon["identity"]["dsl_changes"] == [{"version": "v0", "dsl": "triton"}, {"version": "v5", "dsl": "gluon"}]
    assert recon["ladder"]["final"] == "v5"
    assert recon["failures"]["reverted_list_form"] == 1 and recon["failures"]["reverted_prose_form"] == 2
    assert recon["profiler"]["usable"] == 1 and recon["profiler"]["reports_ignored"] == ["profiles/v1/REPORT.md"]
    assert recon["overlap"]["same_operator_family"] == 1 and recon["overlap"]["by_type"] == {"strategy": 1}
    md = (out / "recon.md").read_text()
    assert "| v5 | milestone (final) |" in md and "never used: profiles/v1/REPORT.md" in md
    svg = (out / "ladder.svg").read_text()
    # kept, reverted and the floor are drawn as different series with a legend entry each
    for label in ("milestone (kept", "failed attempt, undone", "floor", "baseline"):
        assert label in svg
    texts = svg_texts(svg)
    assert "geomean latency (µs, log scale)" in texts
    assert not re.search(r"10\^|\\times|×", svg)  # plain tick labels on the log axis, never 4×10¹


def test_recon_outputs_are_byte_identical_on_rerun(tmp_path):
    work = tracekit.ingested(tmp_path)
    outs = []
    for i in range(2):
        subprocess.run(
            [sys.executable, "-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(tmp_path / f"r{i}")],
            check=True,
            capture_output=True,
        )
        outs.append({p.name: p.read_bytes() for p in (tmp_path / f"r{i}").iterdir()})
    assert outs[0] == outs[1]


# --- the ladder plot reads at a glance -----------------------------------------------------------


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    """A trace with a revert that measured faster than the floor and a kept version with no number."""
    tmp = tmp_path_factory.mktemp("plot")
    m = tracekit.memory
    build_trace(
        tmp / "t",
        [
            CommitSpec(
                "V0: baseline", {"kernel.py": tracekit.kernel(0), "memory/v0.json": m(0, 40.0), **tracekit.meta_files()}
            ),
            CommitSpec("v1: committed (+25.0%)", {"kernel.py": tracekit.kernel(1), "memory/v1.json": m(1, 30.0)}),
            CommitSpec("v2: reverted (wrong results at batch 7) — dead-end recorded", {"memory/v2.json": m(2, 25.0)}),
            CommitSpec("v3: committed (+2.0%)", {"kernel.py": tracekit.kernel(3), "memory/v3.json": m(3, None)}),
            CommitSpec("v4: committed (+33.0%)", {"kernel.py": tracekit.kernel(4), "memory/v4.json": m(4, 20.0)}),
        ],
    )
    subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp / "t"), "--out-dir", str(tmp / "w")],
        check=True,
        capture_output=True,
    )
    rows = read_jsonl(tmp / "w" / "versions.jsonl")
    steps = run_ladder(rows)
    plot = ladder_plot(rows, steps, "t")
    return rows, steps, plot, render_svg(plot)


def series(plot, label_start: str) -> list[tuple[float, float]]:
    found = [s for s in plot.series if s.label.startswith(label_start)]
    assert len(found) == 1, [s.label for s in plot.series]
    return found[0].points


def drawn(svg: str, label: str) -> list[tuple[float, float]]:
    """The px positions of the markers of the series titled `label` in the SVG."""
    ns = {"s": "http://www.w3.org/2000/svg"}
    groups = [g for g in ET.fromstring(svg).iterfind("s:g", ns) if g.findtext("s:title", None, ns) == label]
    assert len(groups) == 1
    return [(float(u.get("x")), float(u.get("y"))) for u in groups[0].iterfind("s:use", ns)]


def test_log_ticks_are_round_latencies():
    assert log_ticks(15, 45) == [15, 20, 30, 40]
    assert log_ticks(1.2, 900) == [2, 5, 10, 20, 50, 100, 200, 500]
    assert all(len(log_ticks(lo, lo * 1.32)) >= 2 for lo in (0.7, 3.3, 17.0, 88.0))  # one version: ±15 %


def test_version_ticks_are_whole_round_numbers():
    assert version_ticks(-0.5, 5.2) == [0, 1, 2, 3, 4, 5]
    assert version_ticks(-0.5, 14.0) == [0, 2, 4, 6, 8, 10, 12, 14]
    assert version_ticks(-0.5, 3239.5) == [0, 500, 1000, 1500, 2000, 2500, 3000]


def test_the_svg_is_well_formed_and_draws_every_point_where_it_belongs(plotted):
    _, _, plot, svg = plotted
    ET.fromstring(svg)  # parses
    assert svg == render_svg(plot)  # the same text for the same plot
    pairs = []
    for s in plot.series:
        px = drawn(svg, s.label)
        assert len(px) == len(s.points)
        pairs += [(p, q) for p, q in zip(s.points, px) if not s.on_axis]
    # a later version is further right; a slower one (higher latency) higher up, i.e. a smaller y
    by_version, by_latency = sorted(pairs), sorted(pairs, key=lambda pq: pq[0][1])
    assert [q[0] for _, q in by_version] == sorted(q[0] for _, q in pairs)
    assert [q[1] for _, q in by_latency] == sorted((q[1] for _, q in pairs), reverse=True)
    assert len({p[1] for p, _ in pairs}) >= 4  # the order says something


def test_tick_labels_are_plain_numbers(plotted):
    _, _, plot, svg = plotted
    labels = [plot.tick_label(v) for v in plot.yticks]
    assert labels and all(re.fullmatch(r"\d+(\.\d+)?", ln) for ln in labels), labels
    assert set(labels) <= set(svg_texts(svg))


def test_a_revert_is_drawn_at_the_floor_it_went_back_to_not_as_a_faster_version(plotted):
    rows, steps, plot, svg = plotted
    assert {r["version"]: r["verdict"] for r in rows}["v2"] == "reverted"
    assert series(plot, "failed attempt") == [(2.0, floor_at(steps)[2])] == [(2.0, 30.0)]
    # its own (faster) number stays visible only as a dotted stem from the floor
    assert plot.stems == [(2, 30.0, 25.0)]
    assert "stroke-dasharray" in svg


def test_a_version_without_a_number_is_marked_on_the_axis(plotted):
    _, steps, plot, svg = plotted
    assert [s.version for s in steps if s.geomean_us is None] == ["v3"]
    assert series(plot, "no number") == [(3.0, NO_NUMBER_Y)]  # x = version, y on the axis (axes coordinates)
    assert [s.on_axis for s in plot.series if s.label.startswith("no number")] == [True]
    assert "no number (marked on the axis)" in svg_texts(svg)


def test_claimed_milestones_are_labelled_with_their_gain(plotted):
    _, steps, _, svg = plotted
    claims = {s.version: s.improve_pct for s in steps if s.outcome in ("milestone", "mega")}
    assert set(claims) == {"v1", "v4"}
    texts = svg_texts(svg)
    for version, pct in claims.items():
        assert f"{version} +{pct:.1f}%" in texts
