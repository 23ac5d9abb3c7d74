"""Hostile traces at the DAG level (#13 classes 4, 6, 7): real snakemake, one shared run per scenario.

- a sheet mixing good and hostile traces (not a repository, shallow, FIFO as .git/HEAD, no GPU, a
  garbage bundle, a denylisted directory name) plans without blocking, stages every good trace, names
  every bad one with its one-line reason, and when one is fixed only its chain and the aggregates run;
- a record left half-written by an agent fails validation and is never deleted;
- a distill job killed with SIGKILL resumes without `--unlock`, leaves no temp file, and its report
  equals a clean run's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import tracekit
from tests.support.workflow import copy_workflow
from tests.support.workflow import run_snakemake as snakemake
from tests.workflow.test_staleness import AGGREGATES, chain, planned

pytestmark = pytest.mark.workflow
GOOD = {"031-ok-a", "032-ok-b", "037-x"}
BAD = {  # slug -> what its one-line reason says
    "033-plain": "not a git work tree (no .git)",
    "034-shallow": "is a shallow clone",
    "035-fifo": "HEAD in the git directory is a FIFO",
    "036-nogpu": "states no GPU",
    "038-junk": "is a truncated git bundle",
    "039-outside": "`.git` (a `gitdir:` file) points outside the trace",
    "040-common": "`commondir` of its git directory points outside the trace",
}
CANARY = "OUTSIDE-CANARY-9e1d"  # in the history of a repository outside every trace
TERM = "acmecorp"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mixed")
    wd = copy_workflow(tmp / "wf")
    t = tmp / "traces"
    t.mkdir()
    tracekit.iteration_era(t / "kernel_opt_031_ok_a")
    tracekit.skill_era(t / "kernel_opt_032_ok_b")
    (t / "kernel_opt_033_plain").mkdir()
    tracekit.iteration_era(t / "full")
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{t / 'full'}", str(t / "kernel_opt_034_shallow")], check=True
    )
    tracekit.skill_era(t / "kernel_opt_035_fifo")
    (t / "kernel_opt_035_fifo" / ".git" / "HEAD").unlink()
    os.mkfifo(t / "kernel_opt_035_fifo" / ".git" / "HEAD")
    from optrace.example.repo_builder import CommitSpec, build_trace

    build_trace(t / "kernel_opt_036_nogpu", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0)})])
    tracekit.long_horizon_era(t / f"kernel_opt_037_{TERM}_x")
    (t / "kernel_opt_038_junk.bundle").write_bytes(b"# v2 git bundle\n\x00\xff junk")
    private = tmp / "elsewhere" / "private"  # what a hostile row must not get published
    build_trace(
        private, [CommitSpec(f"V0: baseline {CANARY}", {"kernel.py": f"# {CANARY}\n", **tracekit.meta_files()})]
    )
    (t / "kernel_opt_039_outside").mkdir()
    (t / "kernel_opt_039_outside" / ".git").write_text(f"gitdir: {private / '.git'}\n")
    tracekit.iteration_era(t / "kernel_opt_040_common")
    (t / "kernel_opt_040_common" / ".git" / "commondir").write_text("../../../elsewhere/private/.git\n")
    rows = [
        ("kernel_opt_031_ok_a", "kernel_opt_031_ok_a"),
        ("kernel_opt_032_ok_b", "kernel_opt_032_ok_b"),
        ("kernel_opt_033_plain", "kernel_opt_033_plain"),
        ("kernel_opt_034_shallow", "kernel_opt_034_shallow"),
        ("kernel_opt_035_fifo", "kernel_opt_035_fifo"),
        ("kernel_opt_036_nogpu", "kernel_opt_036_nogpu"),
        ("kernel_opt_037_x", f"kernel_opt_037_{TERM}_x"),
        ("kernel_opt_038_junk", "kernel_opt_038_junk.bundle"),
        ("kernel_opt_039_outside", "kernel_opt_039_outside"),
        ("kernel_opt_040_common", "kernel_opt_040_common"),
    ]
    sheet = tmp / "traces.tsv"
    sheet.write_text("label\tpath\n" + "".join(f"{label}\t{t / path}\n" for label, path in rows))
    denylist = tmp / "denylist.txt"
    denylist.write_text(TERM + "\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(denylist)}
    start = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", "--keep-going", "--config", f"traces={sheet}"],
        cwd=wd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return {"wd": wd, "res": res, "traces": t, "sheet": sheet, "env": env, "seconds": time.monotonic() - start}


def test_keep_going_stages_every_good_trace_and_names_every_bad_one(mixed):
    res, results = mixed["res"], mixed["wd"] / "results"
    assert res.returncode == 0, res.stderr[-3000:]
    staged = json.loads((results / "staging" / "staged.json").read_text())
    failed = {f["trace"]: f for f in staged["failed_traces"]}
    assert set(failed) == set(BAD)
    for slug, phrase in BAD.items():
        assert phrase in failed[slug]["reason"] and failed[slug]["stage"] == "ingest"
        assert "\n" not in failed[slug]["reason"]
    summary = json.loads((results / "staging" / "reports" / "validation-summary.json").read_text())
    passed = {tr["slug"]: tr["passed"] for tr in summary["traces"]}
    assert all(passed[slug] == sum(s["trace"] == slug for s in staged["staged"]) for slug in GOOD)
    assert {s["trace"] for s in staged["staged"]} <= GOOD and staged["staged"]
    readme = (results / "staging" / "README.md").read_text()
    for label in ("kernel_opt_031_ok_a", "kernel_opt_032_ok_b", "kernel_opt_037_x"):
        assert f"| {label} |" in readme
    for slug in BAD:
        assert f"| {slug} | ingest |" in readme
    assert "dataset: 3 trace(s)" in (results / "logs" / "dataset" / "build.log").read_text()  # the good ones
    for log in (results / "logs").rglob("*.log"):
        assert "Traceback" not in log.read_text(errors="replace"), log


def test_nothing_from_a_repository_outside_the_traces_is_mined_or_published(mixed):
    results = mixed["wd"] / "results"
    assert CANARY not in mixed["res"].stdout + mixed["res"].stderr
    for path in results.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".diff", ".py", ".svg", ".parquet", ".log"):
            assert CANARY.encode() not in path.read_bytes(), path


def test_strict_exits_1_when_a_trace_failed_and_says_why(mixed):
    """A CI job gating on a sheet run must not pass while traces failed (#28); without strict the same
    run exits 0 and its summary says strict would change that."""
    assert "strict is off: failed traces do not change the exit status" in mixed["res"].stdout
    memory = mixed["traces"] / "kernel_opt_036_nogpu" / "memory"
    memory.mkdir(exist_ok=True)
    (memory / "v0.json").write_text("{}")  # work for this run: that trace is ingested again (and fails again)
    cfg = ("--config", f"traces={mixed['sheet']}")
    for args, because in (
        (("--keep-going", *cfg, "strict=true"), "strict: true"),
        (("validate", *cfg), "`snakemake validate`"),
    ):
        res = subprocess.run(
            [sys.executable, "-m", "snakemake", "-c2", *args],
            cwd=mixed["wd"],
            capture_output=True,
            text=True,
            env=mixed["env"],
            timeout=600,
        )
        assert res.returncode == 1, res.stdout[-3000:]
        assert f"this run exits 1 because {len(BAD)} trace(s) failed ({because})" in res.stdout
        assert "because a record failed" not in res.stdout  # the traces alone do it


def test_denylisted_directory_name_reaches_no_output(mixed):
    assert "note: " in mixed["res"].stderr and "named by its sheet label" in mixed["res"].stderr
    results = mixed["wd"] / "results"
    for top in ("staging", "packets", "distilled", "dataset", "work"):
        for path in (results / top).rglob("*"):
            assert TERM not in path.name.lower()
            if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".diff", ".py", ".svg"):
                assert TERM not in path.read_text(errors="replace").lower(), path


def test_fixing_one_trace_reruns_only_its_chain_and_a_half_written_record_is_judged_not_deleted(mixed, monkeypatch):
    wd, env, t = mixed["wd"], mixed["env"], mixed["traces"]
    monkeypatch.setenv("ATREX_WIKI_DENYLIST", env["ATREX_WIKI_DENYLIST"])  # `planned` runs with os.environ
    cfg = ("--config", f"traces={mixed['sheet']}")
    shutil.rmtree(t / "kernel_opt_033_plain")
    tracekit.long_horizon_era(t / "kernel_opt_033_plain")
    half = wd / "results" / "distilled" / "031-ok-a" / "nvidia.h100.triton.x.half-written-a1b2c3.json"
    half.write_text('{"schema": "clean-1.3", "id": "nvidia.h100.triton.x.ha')
    assert planned(wd, *cfg) == chain("033-plain") | {("validate_trace", "031-ok-a")} | AGGREGATES
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", "--keep-going", *cfg],
        cwd=wd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    staged = json.loads((wd / "results" / "staging" / "staged.json").read_text())
    assert "033-plain" not in {f["trace"] for f in staged["failed_traces"]}
    meta = json.loads((wd / "results" / "work" / "033-plain" / "meta.json").read_text())
    assert "failed" not in meta and meta["target"]["product"] == "b200"
    assert "| kernel_opt_033_plain |" in (wd / "results" / "staging" / "README.md").read_text()
    report = json.loads((wd / "results" / "staging" / "reports" / "031-ok-a" / "validation.json").read_text())
    judged = {Path(r["path"]).name: r for r in report["records"]}
    assert judged[half.name]["status"] == "FAIL" and half.exists()


# ---- a distill job killed with SIGKILL -------------------------------------------------------------

FAKE_AGENT = """
import json, os, sys, time
from pathlib import Path
from optrace.distill.distill import dumps_record
from optrace.distill.drafter import draft_record, read_code
packet_path, out = Path(sys.argv[1]), Path(sys.argv[2])
hang, reached = Path(sys.argv[3]), Path(sys.argv[4])
if hang.exists() and len(list(out.parent.glob("*.json"))) >= 2:
    reached.write_text(str(os.getpid()))
    time.sleep(300)
packet = json.loads(packet_path.read_text())
record, reason = draft_record(packet, read_code(packet_path, packet))
if record:
    out.write_text(dumps_record(record))
print("agent: done" if record else "agent: too thin")
"""


def _ancestor_running(pid: int, needle: str) -> int:
    """The nearest ancestor of `pid` (itself included) whose command line holds `needle`."""
    while pid > 1:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        if needle in cmd:
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError(f"no ancestor runs {needle}")


@pytest.mark.parametrize("killed", ["job", "controller"])
def test_killed_distill_resumes_without_unlock_and_equals_a_clean_run(tmp_path, killed):
    """SIGKILL of the distill job (OOM, scancel), or of the whole run, Snakemake's controller included
    (its locks stay on disk): the next plain run resumes, with the same report as a clean run."""
    wd = copy_workflow(tmp_path / "wf")
    tracekit.iteration_era(tmp_path / "kernel_opt_041_kill")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(f"label\tpath\nkernel_opt_041_kill\t{tmp_path / 'kernel_opt_041_kill'}\n")
    (tmp_path / "agent.py").write_text(FAKE_AGENT)
    hang, reached = tmp_path / "HANG", tmp_path / "REACHED"
    command = f"{sys.executable} {tmp_path / 'agent.py'} {{packet}} {{out}} {hang} {reached}"
    (wd / "agent.yaml").write_text(json.dumps({"traces": str(sheet), "distill": {"mode": "agent", "command": command}}))
    target = ("distill", "--configfile", "agent.yaml")
    snakemake(wd, *target, "--config", "results=clean")
    clean = json.loads((wd / "clean/staging/reports/041-kill/distill.json").read_text())
    assert clean["counts"].get("agent-wrote", 0) >= 3

    hang.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "-c2", *target],
        cwd=wd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not reached.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert reached.exists(), proc.communicate()[0][-2000:]
    agent = int(reached.read_text())
    if killed == "job":
        job = _ancestor_running(agent, "optrace.run.pertrace")
        os.kill(job, signal.SIGKILL)
        os.kill(agent, signal.SIGKILL)
    else:
        os.killpg(proc.pid, signal.SIGKILL)  # the controller, the job and the agent at once
    _out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0 and not (wd / "results/staging/reports/041-kill/distill.json").exists()
    if killed == "controller":
        assert list((wd / ".snakemake" / "locks").glob("*.lock"))  # what used to need --unlock

    hang.unlink()
    res = snakemake(wd, *target)  # no --unlock, no --rerun-incomplete
    assert "cannot be locked" not in res.stdout + res.stderr
    assert ("removed the lock left by a killed run" in res.stderr) == (killed == "controller")
    resumed = json.loads((wd / "results/staging/reports/041-kill/distill.json").read_text())
    assert resumed == clean
    leftovers = [
        p
        for p in (wd / "results").rglob("*")
        if p.name.endswith(".draft") or ".draft." in p.name or p.name == "journal.jsonl"
    ]
    assert leftovers == []
    assert sorted(p.name for p in (wd / "results/distilled/041-kill").iterdir()) == sorted(
        p.name for p in (wd / "clean/distilled/041-kill").iterdir()
    )
