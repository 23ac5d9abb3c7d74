"""Recon: the ladder preview, coverage, failures, profiler usability, live-store overlap, the plot."""

import json
import re
import subprocess
import sys

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.jsonio import read_jsonl
from optrace.mine.ladder import run_ladder
from optrace.report.recon import NO_NUMBER_Y, draw_ladder, floor_at, log_ticks, render_svg
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
    for label in ("milestone (kept", "reverted", "floor", "baseline"):
        assert label in svg
    texts = svg_texts(svg)
    assert "geomean latency (µs, log scale)" in texts
    assert not re.search(r"10\^|\\times|×", svg)  # plain tick labels on the log axis, never 4×10¹


def test_recon_outputs_are_byte_identical_on_rerun(tmp_path):
    tracekit.skill_era(tmp_path / "t")
    work = tmp_path / "work"
    subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(work)],
        check=True,
        capture_output=True,
    )
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
    fig = Figure()
    FigureCanvasAgg(fig)
    draw_ladder(fig, rows, steps, "t")
    fig.canvas.draw()
    return rows, steps, fig.axes[0], render_svg(rows, steps, "t")


def series(ax, label_start: str) -> list[tuple[float, float]]:
    found = [c for c in ax.collections if c.get_label().startswith(label_start)]
    assert len(found) == 1, [c.get_label() for c in ax.collections]
    return [tuple(xy) for xy in found[0].get_offsets().tolist()]


def test_log_ticks_are_round_latencies():
    assert log_ticks(15, 45) == [15, 20, 30, 40]
    assert log_ticks(1.2, 900) == [2, 5, 10, 20, 50, 100, 200, 500]
    assert all(len(log_ticks(lo, lo * 1.32)) >= 2 for lo in (0.7, 3.3, 17.0, 88.0))  # one version: ±15 %


def test_tick_labels_are_plain_numbers(plotted):
    _, _, ax, svg = plotted
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(re.fullmatch(r"\d+(\.\d+)?", ln) for ln in labels), labels
    assert set(labels) <= set(svg_texts(svg))


def test_a_revert_is_drawn_at_the_floor_it_went_back_to_not_as_a_faster_version(plotted):
    rows, steps, ax, _ = plotted
    assert {r["version"]: r["verdict"] for r in rows}["v2"] == "reverted"
    assert series(ax, "reverted") == [(2.0, floor_at(steps)[2])] == [(2.0, 30.0)]
    # its own (faster) number stays visible only as a dotted stem from the floor
    from matplotlib.collections import LineCollection

    stems = [
        seg
        for c in ax.collections
        if isinstance(c, LineCollection) and c.get_linestyle()[0][1] is not None
        for seg in c.get_segments()
    ]
    assert [tuple(map(tuple, seg)) for seg in stems] == [((2.0, 30.0), (2.0, 25.0))]


def test_a_version_without_a_number_is_marked_on_the_axis(plotted):
    _, steps, ax, svg = plotted
    assert [s.version for s in steps if s.geomean_us is None] == ["v3"]
    assert series(ax, "no number") == [(3.0, NO_NUMBER_Y)]  # x = version, y on the axis (axes coordinates)
    assert "no number (marked on the axis)" in svg_texts(svg)


def test_claimed_milestones_are_labelled_with_their_gain(plotted):
    _, steps, _, svg = plotted
    claims = {s.version: s.improve_pct for s in steps if s.outcome in ("milestone", "mega")}
    assert set(claims) == {"v1", "v4"}
    texts = svg_texts(svg)
    for version, pct in claims.items():
        assert f"{version} +{pct:.1f}%" in texts
