"""The agent loop: the self-check an agent runs on its one record while the workflow runs, batches by record
type, the structured per-record report merged into distill.json, progress lines, and the staging README's
list of packets that produced no record."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from optrace.distill.distill import batches, distill, structured_report
from tests.support.mined import packet_file
from tests.support.paths import FIXTURES, PACKAGE_DIR
from tests.support.schemas import assert_valid
from tests.support.workflow import run_snakemake

FAKE_AGENT = FIXTURES / "fake_agent.py"
EXAMPLE = "007-fused-add-rmsnorm-h4096"


def optrace(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optrace", *map(str, args)], capture_output=True, text=True)


# ---- optrace validate record ---------------------------------------------------------------------


def a_record(m, rtype="strategy"):
    packet, record = next((p, r) for p, r in m.of_type(rtype))
    return m.results / packet["target"]["output"], record


def test_the_self_check_passes_a_good_record_and_names_the_gate_that_blocks_a_bad_one(mined, tmp_path):
    m = mined["sgemm_ladder"]
    path, _record = a_record(m)
    res = optrace("validate", "record", path)
    assert res.returncode == 0 and "PASS (all gates)" in res.stdout
    explicit = optrace("validate", "record", path, "--results", m.results, "--slug", m.slug)
    assert explicit.returncode == 0
    # an agent's draft elsewhere, checked against the same packet
    draft = tmp_path / path.name
    bad = json.loads(path.read_text())
    bad["payload"]["goal"] += " It is 87.6543% faster."
    draft.write_text(json.dumps(bad))
    res = optrace("validate", "record", draft, "--results", m.results, "--slug", m.slug)
    # the number is the packet's nowhere, and the sentence is no claim the record's citations back
    assert res.returncode == 1 and "FAIL (no-fabrication, claims)" in res.stdout and "87.6543" in res.stdout


def test_the_self_check_refuses_unusable_input_in_one_line(mined, tmp_path):
    m = mined["sgemm_ladder"]
    path, _ = a_record(m)
    stray = tmp_path / path.name
    stray.write_text(path.read_text())
    res = optrace("validate", "record", stray)  # not under <results>/distilled/<slug>/ and no --results
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "--results" in res.stderr
    orphan = path.with_name("nvidia.a6000.cuda.gemm.invented-s000000.json")
    orphan.write_text(path.read_text())
    try:
        res = optrace("validate", "record", orphan)
        assert res.returncode == 2 and "no packet" in res.stderr and "Traceback" not in res.stderr
    finally:
        orphan.unlink()


def test_the_worked_example_of_the_brief_is_a_passing_drafted_record(tmp_path):
    from optrace.gates.trace.injection import mine_example, validate_records, workbench
    from optrace.gates.trace.store_overlap import LiveStore

    example = PACKAGE_DIR / "distill" / "brief_example.json"
    brief = example.with_name("brief.md").read_text()
    assert "brief_example.json" in brief and "optrace validate record {out}" in brief and "AGENT_REPORT" in brief
    bench = workbench(mine_example(tmp_path))
    rel = f"distilled/{bench.slug}/{json.loads(example.read_text())['id']}.json"
    drafted = dict(bench.records)[rel]  # what the drafter writes today for that packet
    assert json.loads(example.read_text()) == drafted
    assert validate_records(bench, [(rel, drafted)], LiveStore())[0].failed == []


# ---- batches, structured reports, progress --------------------------------------------------------


def test_batches_never_mix_record_types():
    items = [
        (Path(f"{i}.json"), {"record_type": t})
        for i, t in enumerate(
            ["reference-kernel", "strategy", "anti-strategy", "strategy", "anti-strategy", "strategy"]
        )
    ]
    got = [[p["record_type"] for _, p in b] for b in batches(items, 2)]
    assert got == [["strategy", "strategy"], ["strategy"], ["anti-strategy", "anti-strategy"], ["reference-kernel"]]


@pytest.mark.parametrize(
    "stdout,expected",
    [
        (
            'thinking...\nAGENT_REPORT {"too_thin": ["mechanism"], "blocked_by": [], "notes": "wrote it"}\n',
            {"too_thin": ["mechanism"], "blocked_by": [], "notes": "wrote it"},
        ),
        (
            'AGENT_REPORT {"too_thin": [], "blocked_by": ["verbatim"]}',
            {"too_thin": [], "blocked_by": ["verbatim"], "notes": ""},
        ),
        ("no report at all", None),
        ("AGENT_REPORT {not json", None),
        ('AGENT_REPORT {"too_thin": "mechanism"}', None),
    ],
)
def test_the_structured_report_is_read_from_the_agents_last_report_line(stdout, expected):
    assert structured_report(stdout) == expected


def test_draft_mode_prints_one_flushed_progress_line_per_packet(mined, tmp_path):
    m = mined["fib_rmsnorm"]
    stream = io.StringIO()
    folder = packet_file(m.results, m.slug).unpack(tmp_path / "packets")
    report = distill(folder, tmp_path, "draft", stream=stream)
    lines = stream.getvalue().splitlines()
    n = len(report["packets"])
    assert len(lines) == n and [line.split()[0] for line in lines] == [f"{i}/{n}" for i in range(1, n + 1)]
    assert re.fullmatch(
        r"\d+/\d+ anti-[0-9a-f]{6}: skipped-thin: no causal sentence.*",
        next(line for line in lines if "skipped-thin" in line),
    )


@pytest.mark.workflow
def test_agent_mode_a_fake_agent_self_checks_mid_run_and_reports(workdir, tmp_path):
    """The whole loop under real snakemake (which holds its lock while the agents run): each agent writes its
    record, runs `optrace validate record` on it, and ends with an AGENT_REPORT line."""
    run_snakemake(workdir, "packets")
    manifest = packet_file(workdir / "results", EXAMPLE).manifest["packets"]
    fabricated = next(e["seg_id"] for e in manifest if e["record_type"] == "strategy")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({fabricated: "fabricate"}))
    command = f"FAKE_AGENT_PLAN=$(cat {plan}) {sys.executable} {FAKE_AGENT} {{brief}} {{packet}} {{out}}"
    config = tmp_path / "agent.yaml"
    config.write_text(json.dumps({"distill": {"mode": "agent", "command": command, "batch_size": 3}}))
    run_snakemake(workdir, "results/staging/README.md", "--configfile", config)
    report = json.loads((workdir / f"results/staging/reports/{EXAMPLE}/distill.json").read_text())
    assert_valid(report, "distill-report.schema.json")
    outcomes = {o["seg_id"]: o for o in report["packets"]}
    wrote = [o for o in outcomes.values() if o["outcome"] == "agent-wrote"]
    assert len(wrote) >= 10
    for o in wrote:  # every agent ran the self-check while snakemake was running, and it worked
        rep = o["agent_structured"]
        if o["seg_id"] == fabricated:
            assert rep["blocked_by"] == ["no-fabrication"] and rep["notes"].startswith("self-check (exit 1)")
        else:
            assert rep["blocked_by"] == [] and "PASS (all gates)" in rep["notes"], rep
    # batches of one record type each, in type order, marked when nothing at all was reported difficult
    order = ["strategy", "anti-strategy", "reference-kernel"]
    assert [order.index(b["record_type"]) for b in report["batches"]] == sorted(
        order.index(b["record_type"]) for b in report["batches"]
    )
    assert all(
        len(b["packets"]) <= 3 and {outcomes[s]["record_type"] for s in b["packets"]} == {b["record_type"]}
        for b in report["batches"]
    )
    for b in report["batches"]:
        difficult = any(
            o["outcome"] in ("skipped-thin", "agent-failed")
            or o["agent_structured"]["too_thin"]
            or o["agent_structured"]["blocked_by"]
            for o in (outcomes[s] for s in b["packets"])
        )
        assert b["no_difficulty_reported"] is (not difficult)
    assert any(b["no_difficulty_reported"] for b in report["batches"])
    assert not next(b for b in report["batches"] if fabricated in b["packets"])["no_difficulty_reported"]
    # the job's log shows progress, one line per packet, counted
    log = (workdir / f"results/logs/distill/{EXAMPLE}.log").read_text().splitlines()
    progress = [line for line in log if re.match(r"\d+/\d+ ", line)]
    assert len(progress) == len(manifest) and progress[-1].startswith(f"{len(manifest)}/{len(manifest)} ")
    # the staging README lists every packet that produced no record, with its reason
    readme = (workdir / "results/staging/README.md").read_text()
    section = readme.split("## Packets that produced no record", 1)[1].split("\n## ", 1)[0]
    for o in outcomes.values():
        if o["outcome"] == "skipped-thin":
            assert f"`{o['seg_id']}`" in section and "the agent wrote no record" in section
