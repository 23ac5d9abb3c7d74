"""The distill stage: draft, agent and none modes, records never rewritten, and the workflow rule."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from optrace.distill.distill import record_path, render_command
from optrace.errors import InputError
from optrace.example.embedded import build_example, example_name
from optrace.gates.store.model import GateContext
from optrace.gates.store.runner import check_record
from tests.distill.test_drafter import STORE_KEYS, mine, store_relpath, unexplained_numbers
from tests.support.mined import packet_file
from tests.support.paths import FIXTURES
from tests.support.schemas import assert_valid, load_schema
from tests.support.workflow import only_the_target_ran, run_snakemake

FAKE_AGENT = FIXTURES / "fake_agent.py"
SLUG = "007-example"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


@pytest.fixture(scope="module")
def packets_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("distill")
    trace = root / example_name()
    build_example(trace)
    return mine(trace, root, SLUG)


def distill(packets_dir, out, *args, env=None):
    report = out / "report.json"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "optrace",
            "distill",
            "--packets",
            str(packets_dir.parent / "packets.json"),  # the file packets_dir was unpacked from (mine)
            "--out",
            str(out),
            "--report",
            str(report),
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    return res, (json.loads(report.read_text()) if report.exists() else None)


def by_seg(report):
    return {o["seg_id"]: o for o in report["packets"]}


def records_dir(out):
    return out / "distilled" / SLUG


def snapshot(directory):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in sorted(directory.iterdir())}


def assert_good_record(path):
    record = json.loads(path.read_text())
    assert path.read_text() == json.dumps(record, ensure_ascii=False, indent=1) + "\n"  # the store's format
    assert list(record) == STORE_KEYS
    failed = {g: m for g, m in check_record(record, store_relpath(record), GateContext()).items() if m}
    assert not failed, failed
    errors = list(jsonschema.Draft202012Validator(load_schema("opt-trace-1.0.schema.json")).iter_errors(record))
    assert not errors, errors[0].message


def test_draft_mode_writes_one_record_per_drafted_packet_and_a_valid_report(packets_dir, tmp_path):
    res, report = distill(packets_dir, tmp_path, "--mode", "draft")
    assert res.returncode == 0, res.stderr
    assert_valid(report, "distill-report.schema.json")
    manifest = json.loads((packets_dir / "manifest.json").read_text())
    assert [o["seg_id"] for o in report["packets"]] == [p["seg_id"] for p in manifest["packets"]]
    drafted = [o for o in report["packets"] if o["outcome"] == "drafted"]
    assert report["counts"] == {"drafted": len(drafted), "skipped-thin": len(report["packets"]) - len(drafted)}
    assert sorted(p.name for p in records_dir(tmp_path).iterdir()) == sorted(Path(o["output"]).name for o in drafted)
    for o in drafted:
        assert_good_record(tmp_path / o["output"])
    assert all(o["reason"] for o in report["packets"] if o["outcome"] == "skipped-thin")
    assert f"distill: {SLUG}: mode draft: drafted {len(drafted)}" in res.stdout


def test_rerun_skips_existing_records_and_never_rewrites_them(packets_dir, tmp_path):
    _, first = distill(packets_dir, tmp_path, "--mode", "draft")
    drafted = [o for o in first["packets"] if o["outcome"] == "drafted"]
    agents_own = tmp_path / drafted[0]["output"]
    agents_own.write_text('{"an agent": "improved this record"}\n')  # an agent's edit must survive
    before = snapshot(records_dir(tmp_path))
    res, again = distill(packets_dir, tmp_path, "--mode", "draft")
    assert res.returncode == 0, res.stderr
    assert snapshot(records_dir(tmp_path)) == before  # same bytes, same mtimes, same inodes, no temp files
    outcomes = by_seg(again)
    assert all(outcomes[o["seg_id"]]["outcome"] == "skipped-exists" for o in drafted)
    assert again["counts"] == {"skipped-exists": len(drafted), "skipped-thin": len(again["packets"]) - len(drafted)}


def test_mode_none_drafts_nothing_and_touches_nothing(packets_dir, tmp_path):
    distill(packets_dir, tmp_path, "--mode", "draft")
    before = snapshot(records_dir(tmp_path))
    res, report = distill(packets_dir, tmp_path, "--mode", "none")
    assert res.returncode == 0 and report == {"slug": SLUG, "mode": "none", "counts": {}, "packets": []}
    assert_valid(report, "distill-report.schema.json")
    assert snapshot(records_dir(tmp_path)) == before
    _, fresh = distill(packets_dir, tmp_path / "fresh", "--mode", "none")
    assert fresh["packets"] == [] and not (tmp_path / "fresh" / "distilled").exists()


def seg_ids(packets_dir, record_type, n):
    manifest = json.loads((packets_dir / "manifest.json").read_text())
    return [p["seg_id"] for p in manifest["packets"] if p["record_type"] == record_type][:n]


def test_agent_mode_reports_each_outcome_and_keeps_what_was_written(packets_dir, tmp_path):
    valid, fabricated, failing = seg_ids(packets_dir, "strategy", 3)
    malformed, kept = seg_ids(packets_dir, "reference-kernel", 2)
    thin = next(
        s
        for s in seg_ids(packets_dir, "anti-strategy", 99)
        if json.loads((packets_dir / f"{s}.json").read_text())["agent_facing"]["established_fact_required"]["precheck"]
        == "flag"
    )
    plan = {fabricated: "fabricate", malformed: "malformed", failing: "fail"}
    env = {**os.environ, "FAKE_AGENT_PLAN": json.dumps(plan)}
    kept_path = tmp_path / json.loads((packets_dir / f"{kept}.json").read_text())["target"]["output"]
    kept_path.parent.mkdir(parents=True)
    kept_path.write_text("an earlier agent's record\n")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGENT))} {{brief}} {{packet}} {{out}}"
    res, report = distill(
        packets_dir, tmp_path, "--mode", "agent", "--command", command, "--batch-size", 3, "--jobs", 2, env=env
    )
    assert res.returncode == 0, res.stderr
    assert_valid(report, "distill-report.schema.json")
    outcomes = by_seg(report)
    assert {s: outcomes[s]["outcome"] for s in (valid, fabricated, malformed, failing, kept, thin)} == {
        valid: "agent-wrote",
        fabricated: "agent-wrote",
        malformed: "agent-wrote",
        failing: "agent-failed",
        kept: "skipped-exists",
        thin: "skipped-thin",
    }
    assert outcomes[failing]["exit_code"] == 3 and "out of tokens" in outcomes[failing]["stderr_tail"]
    assert outcomes[thin]["agent_report"].startswith("no record: no causal sentence")
    assert outcomes[valid]["agent_report"].startswith("wrote ")
    assert kept_path.read_text() == "an earlier agent's record\n"  # no agent was started for it
    assert not (tmp_path / outcomes[failing]["output"]).exists()
    # the good records are there and pass the gates; the bad ones are left for validation to name
    for o in report["packets"]:
        if o["outcome"] == "agent-wrote" and o["seg_id"] not in (fabricated, malformed):
            assert_good_record(tmp_path / o["output"])
    with pytest.raises(json.JSONDecodeError):
        json.loads((tmp_path / outcomes[malformed]["output"]).read_text())
    bad = json.loads((tmp_path / outcomes[fabricated]["output"]).read_text())
    packet = json.loads((packets_dir / f"{fabricated}.json").read_text())
    assert unexplained_numbers(bad, packet, (packets_dir / packet["agent_facing"]["code_file"]).read_text()) == {
        87.6543
    }
    # a re-run starts agents only for packets without a record: the failed and the thin one
    before = snapshot(records_dir(tmp_path))
    _, again = distill(packets_dir, tmp_path, "--mode", "agent", "--command", command, env=env)
    retried = {o["seg_id"] for o in again["packets"] if o["outcome"] != "skipped-exists"}
    assert {failing, thin} <= retried and not retried & {valid, fabricated, malformed, kept}
    assert snapshot(records_dir(tmp_path)) == before


@pytest.mark.parametrize(
    "command,missing",
    [("", "needs a command"), ("agent --in {packet}", "{out}"), ("agent {brief} > {out}", "{packet}")],
)
def test_agent_mode_needs_a_template_naming_the_packet_and_the_record(packets_dir, tmp_path, command, missing):
    res, report = distill(packets_dir, tmp_path, "--mode", "agent", "--command", command)
    assert res.returncode == 2 and report is None
    assert res.stderr.startswith("error: distill.command: ") and missing in res.stderr and "Traceback" not in res.stderr


def test_only_the_three_placeholders_are_filled_and_paths_are_quoted(tmp_path):
    odd = tmp_path / "a dir; rm -rf x" / "it's.json"
    rendered = render_command(
        "agent -b {brief} -p {packet} -o {out} | awk '{print $1}' {other}", Path("brief.md"), odd, odd
    )
    words = shlex.split(rendered)
    assert words[words.index("-p") + 1] == str(odd.resolve()) == words[words.index("-o") + 1]
    assert words[words.index("-b") + 1] == str(Path("brief.md").resolve())
    assert "'{print $1}'" in rendered and rendered.endswith(" {other}")


@pytest.mark.parametrize(
    "output", ["distilled/../../escape.json", "/tmp/x.json", "records/x/y.json", "distilled/other/slug/x.json", None]
)
def test_a_record_path_outside_distilled_is_refused(tmp_path, output):
    with pytest.raises(InputError):
        record_path(tmp_path, {"target": {"output": output}}, "packet.json")


# ---- the workflow ----------------------------------------------------------------------------------


def snakemake(wd, *args):
    res = run_snakemake(wd, *args)
    return res.stdout + res.stderr


@pytest.mark.workflow
def test_snakemake_distill_drafts_the_example_and_never_reruns_for_records(workdir):
    snakemake(workdir, "distill")
    slug = "007-fused-add-rmsnorm-h4096"
    report = json.loads((workdir / f"results/staging/reports/{slug}/distill.json").read_text())
    assert_valid(report, "distill-report.schema.json")
    records = sorted((workdir / "results/distilled" / slug).iterdir())
    assert report["mode"] == "draft" and len(records) == report["counts"]["drafted"] > 0
    for path in records:
        assert_good_record(path)
    # an agent adding or editing records never makes distill (or anything upstream) stale
    (workdir / "results/distilled" / slug / "nvidia.h100.triton.x.y.z-s000000.json").write_text("{}\n")
    records[0].write_text(records[0].read_text())
    assert only_the_target_ran(snakemake(workdir, "distill"))
    # a config change re-runs distill alone; mode none drafts nothing and deletes nothing
    before = snapshot(workdir / "results/distilled" / slug)
    out = snakemake(workdir, "distill", "--config", "distill={mode: none}")
    assert "distill_trace" in out and "packets_trace" not in out
    report = json.loads((workdir / f"results/staging/reports/{slug}/distill.json").read_text())
    assert report["mode"] == "none" and report["packets"] == []
    assert snapshot(workdir / "results/distilled" / slug) == before


@pytest.mark.workflow
def test_snakemake_agent_mode_passes_the_command_template_through(workdir, tmp_path):
    plan = tmp_path / "plan.json"
    command = f"FAKE_AGENT_PLAN=$(cat {plan}) {sys.executable} {FAKE_AGENT} {{brief}} {{packet}} {{out}}"
    snakemake(workdir, "packets")
    packets = packet_file(workdir / "results", "007-fused-add-rmsnorm-h4096").unpack(tmp_path / "packets")
    failing = seg_ids(packets, "strategy", 1)[0]
    plan.write_text(json.dumps({failing: "fail"}))
    config = tmp_path / "agent.yaml"
    config.write_text(json.dumps({"distill": {"mode": "agent", "command": command, "batch_size": 2}}))  # JSON is YAML
    snakemake(workdir, "distill", "--configfile", config)
    report = json.loads((workdir / "results/staging/reports/007-fused-add-rmsnorm-h4096/distill.json").read_text())
    outcomes = by_seg(report)
    assert report["mode"] == "agent" and outcomes[failing]["outcome"] == "agent-failed"
    assert report["counts"]["agent-wrote"] >= 10


def test_a_record_written_by_a_killed_run_before_its_outcome_was_journaled_is_set_aside_and_redone(tmp_path):
    """The kill can fall between the agent writing its record and the job journaling the outcome: the
    resumed job keeps that file aside and works the packet again, so its outcome is a clean run's."""
    import json as _json

    from optrace.distill.distill import Journal

    packet = {"seg_id": "anti-abc123", "target": {"output": "distilled/t/x.json"}}
    out = tmp_path / "distilled" / "t" / "x.json"
    first = Journal(tmp_path, "t")
    # as the killed job left it: started with no record there, the record written, no outcome
    first._append({"seg_id": "anti-abc123", "started": True, "existed": False})
    out.parent.mkdir(parents=True)
    out.write_text('{"written": "by the killed run"}')
    calls = []

    def work(p, k):
        calls.append(k["seg_id"])
        out.write_text('{"written": "again"}')
        return {"seg_id": k["seg_id"], "outcome": "agent-wrote", "output": "distilled/t/x.json"}

    resumed = Journal(tmp_path, "t").run(tmp_path / "p.json", packet, work)
    assert calls == ["anti-abc123"] and resumed["outcome"] == "agent-wrote"
    assert _json.loads((tmp_path / "work/t/distill-tmp/interrupted/x.json").read_text()) == {
        "written": "by the killed run"
    }
    # a record that was there before the run started is never set aside
    again = Journal(tmp_path, "t")
    again._append({"seg_id": "other", "started": True, "existed": True})
    assert "other" not in Journal(tmp_path, "t").started
