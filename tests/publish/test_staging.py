"""Stage, index and README on real snakemake runs: scored copies, the store's index format,
failing records listed not staged, the agent path with a fake agent, the reviewer's README."""

import json
import os
import subprocess
import sys

import pytest

from optrace.publish.worth import rank
from tests.support.mined import packet_file
from tests.support.paths import FIXTURES
from tests.support.workflow import run_snakemake as snakemake

pytestmark = pytest.mark.workflow
SLUG = "007-fused-add-rmsnorm-h4096"
FAKE_AGENT = FIXTURES / "fake_agent.py"


def check_store(path):
    return subprocess.run([sys.executable, "-m", "optrace", "check-store", str(path)], capture_output=True, text=True)


def staged_records(wd):
    return {
        p.stem: json.loads(p.read_text())
        for p in (wd / "results/staging/records").rglob("*.json")
        if p.name != "index.json"
    }


def test_example_chain_stages_scored_copies_that_pass_the_store_gates(workdir):
    snakemake(workdir)
    staging = workdir / "results/staging"
    res = check_store(staging)
    assert res.returncode == 0, res.stdout
    staged = staged_records(workdir)
    distilled = {p.stem: json.loads(p.read_text()) for p in (workdir / "results/distilled" / SLUG).glob("*.json")}
    assert set(staged) == set(distilled) and len(staged) >= 10
    for rid, rec in staged.items():
        scope = rec["retrieval"]["scope"]
        path = (
            staging
            / "records"
            / rec["type"]
            / scope["vendor"]
            / scope["arch"]
            / scope["dsl"]
            / scope["operator_family"]
            / f"{rid}.json"
        )
        assert path.is_file()
        track = rec["worth"]["track"]
        assert set(track["counters"].values()) == {0} and track["prior"]
        again = rank(rec["type"], rec["worth"]["gain"]["basis"], track)
        assert rec["worth"]["rank"]["score"] == again.score and rec["worth"]["rank"]["tier"] == again.tier
        assert distilled[rid]["worth"]["rank"] == {"score": 0.0, "tier": "provisional"}  # the agent's file untouched
    index = json.loads((staging / "records/index.json").read_text())
    assert index["count"] == len(staged) and [e["id"] for e in index["records"]] == sorted(staged)
    readme = (staging / "README.md").read_text()
    for part in (
        "# Staging store (not the live store)",
        "## Traces",
        "kernel_opt_007_fused_add_rmsnorm_h4096",
        f"reports/{SLUG}/ladder.svg",
        "## Records",
        "## Histograms",
        "## Trust boundaries",
    ):
        assert part in readme
    assert sum(
        1 for line in readme.splitlines() if line.startswith("| kernel_opt_007_fused_add_rmsnorm_h4096 | v")
    ) == len(staged)


def test_a_failing_record_is_listed_not_staged_and_stale_copies_go(workdir):
    snakemake(workdir)
    folder = workdir / "results/distilled" / SLUG
    victim = next(p for p in sorted(folder.glob("*.json")) if json.loads(p.read_text())["type"] == "strategy")
    rec = json.loads(victim.read_text())
    rec["worth"]["gain"]["pct"] = rec["worth"]["gain"]["metrics"][0]["delta_pct"] = 42.4242
    victim.write_text(json.dumps(rec, indent=1) + "\n")
    res = snakemake(workdir)
    out = res.stdout + res.stderr
    # only this trace's validation, then stage and readme, ran
    assert "validate_trace" in out and "ingest_trace" not in out and "packets_trace" not in out
    summary = json.loads((workdir / "results/staging/staged.json").read_text())
    failed = {f["id"]: f["gates"] for f in summary["failed"]}
    assert failed == {rec["id"]: ["no-fabrication"]}
    assert rec["id"] not in staged_records(workdir)
    assert check_store(workdir / "results/staging").returncode == 0
    res = snakemake(workdir, "validate", check=False)
    assert res.returncode != 0 and rec["id"] in res.stdout + res.stderr


def test_agent_mode_bad_records_are_named_good_ones_staged(workdir, tmp_path):
    snakemake(workdir, "packets")
    files = packet_file(workdir / "results", SLUG).files
    packets = [json.loads(text) for name, text in files.items() if name.endswith(".json")]
    strategies = sorted(p["seg_id"] for p in packets if p["record_type"] == "strategy")
    plan = {strategies[0]: "fabricate", strategies[1]: "malformed", strategies[2]: "fail"}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    command = (
        f"FAKE_AGENT_PLAN=$(cat {tmp_path / 'plan.json'}) {sys.executable} {FAKE_AGENT} {{brief}} {{packet}} {{out}}"
    )
    config = tmp_path / "agent.yaml"
    config.write_text(json.dumps({"distill": {"mode": "agent", "command": command, "batch_size": 4}}))
    snakemake(workdir, "--configfile", config)
    summary = json.loads((workdir / "results/staging/reports/validation-summary.json").read_text())
    failing = {r["path"].rsplit("/", 1)[1]: r["failed"] for r in summary["by_record"] if r["status"] == "FAIL"}
    by_seg = {p["seg_id"]: p["target"]["id"] for p in packets}
    assert failing[f"{by_seg[strategies[0]]}.json"] == ["no-fabrication"]
    assert "schema" in failing[f"{by_seg[strategies[1]]}.json"]
    assert len(failing) == 2
    distill = json.loads((workdir / f"results/staging/reports/{SLUG}/distill.json").read_text())
    assert {p["seg_id"]: p["outcome"] for p in distill["packets"]}[strategies[2]] == "agent-failed"
    staged = staged_records(workdir)
    assert by_seg[strategies[0]] not in staged and by_seg[strategies[1]] not in staged
    assert by_seg[strategies[3]] in staged and check_store(workdir / "results/staging").returncode == 0


def test_denylisted_trace_label_never_reaches_the_readme(workdir, tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("fused_add_rmsnorm_h4096\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(deny)}
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2"], cwd=workdir, capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    readme = (workdir / "results/staging/README.md").read_text()
    assert "fused_add_rmsnorm_h4096" not in readme and "a private identifier" in readme


def test_the_readme_lists_episodes_several_traces_found():
    from optrace.publish.readme import shared_episode_section

    key = "hopper|triton|norm|split_k|operator"
    index = [
        {"id": "nvidia.h100.triton.norm.split-k-s111111", "type": "strategy", "episode_key": key},
        {"id": "nvidia.h100.triton.norm.other-s222222", "type": "strategy", "episode_key": key.replace("split_k", "x")},
        {"id": "nvidia.h100.triton.norm.split-k-a333333", "type": "anti-strategy", "episode_key": key},
    ]
    lines = shared_episode_section(index)
    assert "## Episodes several traces found" in lines
    rows = [line for line in lines if line.startswith("| `hopper")]
    assert rows == [f"| `{key}` | `{index[0]['id']}` (strategy), `{index[2]['id']}` (anti-strategy) |"]
    assert shared_episode_section(index[:2]) == []
