"""Real `snakemake` runs: the example trace, each grammar, a bundle, a sheet, a failing trace."""

import json

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace, make_bundle
from tests.support import tracekit
from tests.support.schemas import assert_valid
from tests.support.workflow import rules_run
from tests.support.workflow import run_snakemake as snakemake

pytestmark = pytest.mark.workflow


def outputs(wd, slug):
    work = wd / "results" / "work" / slug
    versions = [json.loads(ln) for ln in (work / "versions.jsonl").read_text().splitlines()]
    profiles = [json.loads(ln) for ln in (work / "profiles.jsonl").read_text().splitlines()]
    meta = json.loads((work / "meta.json").read_text())
    assert_valid(versions, "versions.schema.json")
    assert_valid(profiles, "profiles.schema.json")
    assert_valid(meta, "meta.schema.json")
    reports = wd / "results" / "staging" / "reports" / slug
    for name in ("recon.md", "recon.json", "ladder.svg"):
        assert (reports / name).stat().st_size > 0
    return versions, profiles, meta


def test_example_trace_end_to_end_and_noop_rerun(workdir):
    snakemake(workdir)
    versions, profiles, meta = outputs(workdir, "007-fused-add-rmsnorm-h4096")
    assert len(versions) >= 12 and meta["target"]["product"] == "h100"
    assert {p["usable"] for p in profiles} == {True, False}
    recon = json.loads((workdir / "results/staging/reports/007-fused-add-rmsnorm-h4096/recon.json").read_text())
    assert recon["ladder"]["final"] is not None
    again = snakemake(workdir)
    assert rules_run(again) == ["all"]  # nothing but the target, which prints the summary
    assert "Run summary" in again.stdout


def test_three_grammars_two_dialects_and_a_bundle_through_a_sheet(workdir, tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_010_skill")
    tracekit.iteration_era(tmp_path / "kernel_opt_011_iteration")
    tracekit.long_horizon_era(tmp_path / "kernel_opt_012_horizon")
    bundle = make_bundle(tmp_path / "kernel_opt_012_horizon", tmp_path / "kernel_opt_013_horizon.bundle")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        "label\tpath\tproduct\n"
        "kernel_opt_010_skill\tkernel_opt_010_skill\tA100\n"
        "kernel_opt_011_iteration\tkernel_opt_011_iteration\t\n"
        "kernel_opt_012_horizon\tkernel_opt_012_horizon\t\n"
        f"kernel_opt_013_horizon\t{bundle}\t\n"
    )
    snakemake(workdir, "--config", f"traces={sheet}")
    v_skill, _, m_skill = outputs(workdir, "010-skill")
    _v_iter, _, m_iter = outputs(workdir, "011-iteration")
    v_lh, _, m_lh = outputs(workdir, "012-horizon")
    v_bundle, _, m_bundle = outputs(workdir, "013-horizon")
    assert m_skill["target"]["product"] == "a100"  # the sheet's override beats the trace's H100
    assert m_iter["target"]["product"] == "h100" and m_iter["languages"] == ["triton"]
    assert m_lh["target"]["product"] == "b200" and m_lh["languages"] == ["pytorch"]
    assert [v["verdict"] for v in v_skill] == ["baseline", "kept", "reverted", "reverted"]
    assert [v["verdict"] for v in v_lh] == [v["verdict"] for v in v_bundle]
    assert m_bundle["head_sha"] == m_lh["head_sha"]


def test_single_trace_config_and_a_failing_trace_does_not_stop_others(workdir, tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_020_ok")
    build_trace(tmp_path / "kernel_opt_021_nogpu", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0)})])
    snakemake(workdir, "--config", f"trace={tmp_path / 'kernel_opt_020_ok'}")
    outputs(workdir, "020-ok")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_020_ok\t{tmp_path / 'kernel_opt_020_ok'}\n"
        f"kernel_opt_021_nogpu\t{tmp_path / 'kernel_opt_021_nogpu'}\n"
    )
    # a failing trace is data (#13 class 7): its one-line reason is recorded, the others are staged
    res = snakemake(workdir, "--keep-going", "--config", f"traces={sheet}", check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    log = (workdir / "results/logs/ingest/021-nogpu.log").read_text()
    assert log.startswith("error: ") and "states no GPU" in log and "Traceback" not in log
    assert (workdir / "results/staging/reports/020-ok/recon.md").exists()
    staged = json.loads((workdir / "results/staging/staged.json").read_text())
    assert [f["trace"] for f in staged["failed_traces"]] == ["021-nogpu"] and "states no GPU" in staged[
        "failed_traces"
    ][0]["reason"]
    assert "| 021-nogpu | ingest |" in (workdir / "results/staging/README.md").read_text()


def test_bad_config_names_the_key(workdir):
    (workdir / "bad.yaml").write_text("ladder:\n  milestone_pct: -1\n")
    res = snakemake(workdir, "-n", "--configfile", "bad.yaml", check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "milestone_pct" in out and "-1" in out


def test_bad_sheet_is_one_clear_line(workdir, tmp_path):
    sheet = tmp_path / "traces.tsv"
    sheet.write_text("name\twhere\nx\ty\n")
    res = snakemake(workdir, "-n", "--config", f"traces={sheet}", check=False)
    assert res.returncode != 0 and f"{sheet}: columns must be label, path" in res.stdout + res.stderr
