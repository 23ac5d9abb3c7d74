"""Recon: the ladder preview, coverage, failures, profiler usability, live-store overlap, the plot."""

import json
import re
import subprocess
import sys

import tracekit
from optrace.ladder import Thresholds, run_ladder


def _row(n, geo, verdict="kept", **kw):
    row = {"version": f"v{n}", "n": n, "verdict": verdict, "verdict_basis": "test", "infrastructure": False,
           "no_change": False, "correctness": {"status": "PASS"}, "quality_gate": {"result": "PASS"},
           "geomean_us": geo, "number_note": None if geo else "no geomean recorded"}
    row.update(kw)
    return row


def outcomes(rows, **kw):
    return {s.version: (s.outcome, s.final) for s in run_ladder(rows, Thresholds(**kw))}


def test_ladder_preview_basics():
    rows = [_row(0, 100.0, "baseline"), _row(1, 97.0), _row(2, 70.0), _row(3, 69.5),
            _row(4, 60.0, "reverted"), _row(5, 69.0, no_change=True), _row(6, 80.0)]
    assert outcomes(rows) == {"v0": ("baseline", False), "v1": ("milestone", False), "v2": ("mega", False),
                              "v3": ("floor", False), "v4": ("rejected", False), "v5": ("floor", True),
                              "v6": ("flat", False)}


def test_rejected_versions_faster_than_the_floor_are_never_final():
    rows = [_row(0, 100.0, "baseline"), _row(1, 90.0), _row(2, 50.0, correctness={"status": "FAIL"}),
            _row(3, 40.0, quality_gate={"result": "FAIL"}), _row(4, 45.0, infrastructure=True)]
    out = outcomes(rows)
    assert out["v1"] == ("milestone", True)
    assert all(out[v] == ("rejected", False) for v in ("v2", "v3", "v4"))


def test_rebaseline_both_ways_and_threshold_from_config():
    rows = [_row(0, 100.0, "baseline"), _row(1, 600.0), _row(2, 15.0), _row(3, 14.7)]
    out = outcomes(rows)
    assert out["v1"][0] == "rebaseline" and out["v2"][0] == "rebaseline" and out["v3"] == ("milestone", True)
    assert outcomes(rows, milestone_pct=3.0)["v3"] == ("floor", True)


def test_recon_cli_on_a_trace(tmp_path):
    tracekit.iteration_era(tmp_path / "t", untracked={
        "profiles/v1/summary.txt": "Kernel: distribution_elementwise_grid_stride_kernel\n",
        "profiles/v1/REPORT.md": "**Root cause**: wrong kernel\n",
        "profiles/v5/summary.txt": "Kernel: _softmax_kernel\n"})
    work, out = tmp_path / "work", tmp_path / "reports"
    subprocess.run([sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(work)], check=True, capture_output=True)
    index = tmp_path / "store" / "records" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"schema": "clean-1.3", "records": [
        {"id": "nvidia.h100.triton.softmax-h4096.x-s01", "type": "strategy", "episode_key": "hopper|triton|softmax-h4096|x|operator",
         "retrieval": {"scope": {"operator_family": "softmax-h4096"}}},
        {"id": "other", "type": "doc", "retrieval": {"scope": {"operator_family": "gemm"}}}]}))
    subprocess.run([sys.executable, "-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(out),
                    "--live-store", str(index)], check=True, capture_output=True)
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
    for label in ("milestone (kept)", "reverted", "floor", "baseline"):
        assert label in svg
    assert re.search(r"10\^\{\d\}", svg)  # log-axis tick labels: the latency axis is logarithmic


def test_recon_outputs_are_byte_identical_on_rerun(tmp_path):
    tracekit.skill_era(tmp_path / "t")
    work = tmp_path / "work"
    subprocess.run([sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(work)], check=True, capture_output=True)
    outs = []
    for i in range(2):
        subprocess.run([sys.executable, "-m", "optrace", "recon", "--work-dir", str(work), "--out-dir", str(tmp_path / f"r{i}")],
                       check=True, capture_output=True)
        outs.append({p.name: p.read_bytes() for p in (tmp_path / f"r{i}").iterdir()})
    assert outs[0] == outs[1]
