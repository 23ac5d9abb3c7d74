"""Recon: the ladder preview, coverage, failures, profiler usability, live-store overlap, the plot."""

import json
import re
import subprocess
import sys

import tracekit


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
        {"id": "nvidia.h100.triton.softmax.x-s01", "type": "strategy", "episode_key": "hopper|triton|softmax|x|operator",
         "retrieval": {"scope": {"operator_family": "softmax"}}},
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
