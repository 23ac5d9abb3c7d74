"""#30 item 1: every file a job reads or writes is declared. After a normal local run, each job is run
again from its recorded shell command (`snakemake --detailed-summary`) in a fresh working copy that holds
ONLY its declared inputs, as a node that shares nothing would: it must succeed, write exactly its
declared outputs and log (nothing else), and write them as the real run did.

The one area no job declares is the agent's records (distilled/): never a Snakemake output, so never
deleted (#30 item 2 makes it a declared synced area). Its readers get it copied, and its writer's writes
there are allowed; what else is still undeclared is listed in UNDECLARED_WRITES, exactly.
"""

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workflow import copy_workflow, run_snakemake

pytestmark = pytest.mark.workflow

EXAMPLE = "007-fused-add-rmsnorm-h4096"
AGENT_AREA = "results/distilled"
READS_AGENT_AREA = {"validate_trace", "stage"}
# The one write no rule declares: distill's records, into the agent's area (never a declared output,
# so Snakemake never deletes what an agent wrote there).
UNDECLARED_WRITES = {
    "distill_trace": (f"{AGENT_AREA}/",),
}
SHELL_PREFIX = "set -euo pipefail; "  # Snakemake's own shell prefix (a `| tee` keeps the job's exit status)


def jobs(wd: Path) -> list[dict]:
    """One entry per job of the last run: its rule, declared inputs, outputs, log and shell command."""
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "--detailed-summary"], cwd=wd, capture_output=True, text=True, check=True
    )
    by_cmd: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(res.stdout), delimiter="\t"):
        job = by_cmd.setdefault(
            row["shellcmd"],
            {
                "rule": row["rule"],
                "inputs": [i for i in row["input-file(s)"].split(",") if i and i != "-"],
                "logs": [f for f in row["log-file(s)"].split(",") if f and f != "-"],
                "outputs": [],
                "cmd": row["shellcmd"],
            },
        )
        job["outputs"].append(row["output_file"])
    return list(by_cmd.values())


SNAKEMAKE_MARK = ".snakemake_timestamp"  # Snakemake's own file in a directory() output


def files_under(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.name != SNAKEMAKE_MARK
    }


def tree(root: Path) -> dict:
    """A folder's files and bytes; a git repository (the example) by its commit."""
    if (root / ".git").is_dir():
        git = ["git", "-C", str(root), "rev-parse", "HEAD"]
        return {"HEAD": subprocess.run(git, capture_output=True, text=True, check=True).stdout}
    return {p: (root / p).read_bytes() for p in files_under(root)}


def copy_in(src: Path, dest: Path, rel: str) -> None:
    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    if (src / rel).is_dir():
        shutil.copytree(src / rel, dest / rel, symlinks=True)
    else:
        shutil.copy2(src / rel, dest / rel)


def isolated(
    run_dir: Path, job: dict, dest: Path, leave_out: str | None = None
) -> tuple[set[str], subprocess.CompletedProcess]:
    """(the files given, the result) of running `job` in `dest` holding only its declared inputs (and the
    folders of its outputs and log)."""
    for rel in job["inputs"]:
        if rel != leave_out:
            copy_in(run_dir, dest, rel)
    if job["rule"] in READS_AGENT_AREA and (run_dir / AGENT_AREA).is_dir():
        copy_in(run_dir, dest, AGENT_AREA)
    for rel in job["outputs"] + job["logs"]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    given = files_under(dest)
    return given, subprocess.run(["bash", "-c", SHELL_PREFIX + job["cmd"]], cwd=dest, capture_output=True, text=True)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    wd = copy_workflow(tmp_path_factory.mktemp("declared") / "wf")
    run_snakemake(wd)
    return wd, jobs(wd)


def test_every_rule_of_the_run_is_replayed(ran):
    _, all_jobs = ran
    rules = {j["rule"] for j in all_jobs}
    assert {"ingest_trace", "packets_trace", "distill_trace", "validate_trace", "stage", "readme"} <= rules
    assert {"dataset_build", "validate_summary", "recon_trace", "partition_trace"} <= rules


def test_each_job_runs_from_its_declared_inputs_alone_and_writes_only_its_outputs(ran, tmp_path):
    run_dir, all_jobs = ran
    problems = []
    for n, job in enumerate(all_jobs):
        dest = tmp_path / f"{n}-{job['rule']}"
        dest.mkdir()
        before, res = isolated(run_dir, job, dest)
        if res.returncode != 0:
            problems.append(f"{job['rule']}: exit {res.returncode}: {(res.stdout + res.stderr)[-600:]}")
            continue
        declared = set(job["outputs"]) | set(job["logs"])
        allowed = UNDECLARED_WRITES.get(job["rule"], ())
        for rel in sorted(files_under(dest) - before):
            inside = any(rel == o or rel.startswith(o.rstrip("/") + "/") for o in declared)
            if not inside and not rel.startswith(allowed):
                problems.append(f"{job['rule']}: wrote undeclared {rel}")
        for out in job["outputs"]:
            mine, real = dest / out, run_dir / out
            if not mine.exists():
                problems.append(f"{job['rule']}: declared output {out} not written")
            elif mine.is_file() and mine.read_bytes() != real.read_bytes():
                problems.append(f"{job['rule']}: {out} differs from the real run's")
            elif mine.is_dir() and tree(mine) != tree(real):
                problems.append(f"{job['rule']}: folder {out} differs from the real run's")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    "rule, name",
    [
        ("validate_trace", "meta.json"),
        ("validate_trace", f"{EXAMPLE}.json"),  # the packets file
        ("distill_trace", f"{EXAMPLE}.json"),
        ("stage", "versions.jsonl"),
        ("readme", "validation.json"),
        ("readme", "recon.json"),
        ("dataset_split", "autotune.parquet"),
    ],
)
def test_a_declared_input_missing_in_the_job_fails_the_job_not_the_trace(ran, tmp_path, rule, name):
    run_dir, all_jobs = ran
    job = next(j for j in all_jobs if j["rule"] == rule)
    gone = next(i for i in job["inputs"] if Path(i).name == name)
    _, res = isolated(run_dir, job, tmp_path, leave_out=gone)
    assert res.returncode != 0
    for out in job["outputs"]:
        assert not (tmp_path / out).exists()  # no failure placeholder: the run's fault, not the trace's
