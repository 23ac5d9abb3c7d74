"""The workflow on a real Slurm cluster through profiles/slurm and snakemake-executor-plugin-slurm.

CI starts a one-node cluster first (.ci/slurm/start, .ci/run); where no Slurm answers (`sinfo`
fails) the `slurm` tests skip. They share one local run and one Slurm run of a three-trace sheet
(~4-5 min on 2 loaded cores). The profile's rule names are checked everywhere, without a cluster.
"""

import json
import shutil
import subprocess
import sys
from functools import lru_cache

import pytest
import yaml

from optrace.example.repo_builder import make_bundle
from tests.support import tracekit
from tests.support.paths import ROOT
from tests.support.workflow import copy_workflow

GOOD = ("kernel_opt_011_iteration", "kernel_opt_012_horizon", "kernel_opt_013_skill")
BROKEN = "kernel_opt_014_broken"
SUBMITTED = "has been submitted with SLURM jobid"
# Run-specific: logs, timings, and validation caches (MAC'd under a key that differs between processes
# when two create ~/.cache/optrace/validation-cache.key at once).
NOT_COMPARED = ("logs", "benchmarks", "validation-cache.json")


@lru_cache(maxsize=1)
def default_partition() -> str | None:
    """The cluster's default partition, or None when no Slurm answers here."""
    if shutil.which("sinfo") is None:
        return None
    try:
        res = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    names = res.stdout.split()
    if res.returncode != 0 or not names:
        return None
    return next((n.rstrip("*") for n in names if n.endswith("*")), names[0])


def needs_slurm():
    if default_partition() is None:
        pytest.skip("no Slurm answers here (`sinfo` fails); CI starts one with .ci/slurm/start")
    pytest.importorskip(
        "snakemake_executor_plugin_slurm", reason="pip install -e '.[dev,slurm]' brings the slurm plugin (CI does)"
    )


def site_args(*extra) -> list[str]:
    """What a one-node site adds to the profile: its partition and any account (no accounting database,
    so any string is accepted), all resources repeated because a command-line map replaces the profile's,
    and a 2 s first status check instead of 10 s."""
    return [
        "--workflow-profile",
        "none",
        "--profile",
        "profiles/slurm",
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--default-resources",
        "slurm_account=ci",
        f"slurm_partition={default_partition()}",
        "mem_mb=1000",
        "runtime=10",
        *extra,
    ]


def snakemake(wd, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def tree(root, skip=()) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not set(p.relative_to(root).parts) & set(skip)
    }


def sheet(path, rows) -> str:
    path.write_text("label\tpath\n" + "".join(f"{label}\t{where}\n" for label, where in rows))
    return str(path)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    tracekit.iteration_era(d / GOOD[0])
    tracekit.long_horizon_era(d / "horizon")
    # one trace travels as a bundle, as it would to a node without a shared file system
    bundle = make_bundle(d / "horizon", d / f"{GOOD[1]}.bundle")
    tracekit.skill_era(d / GOOD[2])
    (d / BROKEN).mkdir()
    (d / BROKEN / "README.md").write_text("not a repository\n")
    return {GOOD[0]: d / GOOD[0], GOOD[1]: bundle, GOOD[2]: d / GOOD[2], BROKEN: d / BROKEN}


@pytest.fixture(scope="module")
def runs(traces, tmp_path_factory):
    """One local and one Slurm run of the same three-trace sheet, shared by the asserts below."""
    needs_slurm()
    d = tmp_path_factory.mktemp("runs")
    config = ["--config", f"traces={sheet(d / 'traces.tsv', [(t, traces[t]) for t in GOOD])}"]
    local, cluster = copy_workflow(d / "local"), copy_workflow(d / "cluster")
    res = snakemake(local, "-c2", *config)
    assert res.returncode == 0, res.stderr[-3000:]
    # packs of 2 (the profile's 5 would pack all three): two traces share a job, and two jobs run at once
    res = snakemake(cluster, *site_args(*config, "--group-components", "trace_chain=2"))
    return local, cluster, res


@pytest.mark.workflow
@pytest.mark.slurm
def test_slurm_run_stages_exactly_what_a_local_run_stages(runs):
    local, cluster, res = runs
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    results = tree(cluster / "results", NOT_COMPARED)
    assert "staging/records/index.json" in results and "dataset/measurements.parquet" in results
    assert results == tree(local / "results", NOT_COMPARED)
    # three traces, two submissions for their chains, one for the dataset tables, one for stage + readme
    submitted = [line for line in out.splitlines() if SUBMITTED in line]
    assert len(submitted) == 4, out[-4000:]
    for group, jobs in (("trace_chain", 2), ("tables", 1), ("store", 1)):
        assert sum(f"slurm_logs/group_{group}_" in line for line in submitted) == jobs, (group, submitted)
    assert not list((cluster / "results").rglob(".optrace-bundle-*"))


@pytest.mark.workflow
@pytest.mark.slurm
def test_failing_trace_fails_alone_and_is_named(runs, traces, tmp_path):
    """A trace that cannot be read is data, not a failed job: packed with a good trace in one
    submission, it is named with its one-line reason and the good trace is staged as in a local run."""
    local, _, _ = runs
    wd = copy_workflow(tmp_path / "wf")
    rows = [(GOOD[0], traces[GOOD[0]]), (BROKEN, traces[BROKEN])]
    res = snakemake(wd, *site_args("--config", f"traces={sheet(tmp_path / 'traces.tsv', rows)}", "--keep-going"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert out.count(SUBMITTED) == 3, out[-4000:]  # one pack of both chains, the dataset job, the store job
    staged = json.loads((wd / "results/staging/staged.json").read_text())
    failed = {f["trace"]: f for f in staged["failed_traces"]}
    assert set(failed) == {"014-broken"} and "not a git work tree" in failed["014-broken"]["reason"]
    assert "014-broken" in out and "FAILED at ingest" in out  # the run summary names it
    assert {s["trace"] for s in staged["staged"]} == {"011-iteration"}
    packets = "packets/011-iteration.json"
    assert (wd / "results" / packets).read_bytes() == (local / "results" / packets).read_bytes()
    for part in ("work/011-iteration", "distilled/011-iteration"):
        assert tree(wd / "results" / part), part
        assert tree(wd / "results" / part, NOT_COMPARED) == tree(local / "results" / part, NOT_COMPARED), part


def profile(name) -> dict:
    return yaml.safe_load((ROOT / "profiles" / name / "config.yaml").read_text())


def job_counts(wd, config) -> dict[str, int]:
    """Jobs per rule for every target (a dry run's job stats): a target rule such as `dataset` is no job
    and never gets a resource."""
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "all", "dataset_csv", *config], cwd=wd, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]
    table = res.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    return {line.split()[0]: int(line.split()[1]) for line in table if line.strip()}


@pytest.mark.workflow
def test_cluster_profiles_name_only_rules_that_run_as_jobs(tmp_path):
    """Snakemake silently ignores a set-resources or groups entry naming no job (the slurm profile once
    gave its memory to the target `dataset` instead of the job `dataset_build`), and a per-trace rule
    left out of the trace chain costs one more submission per trace."""
    tracekit.iteration_era(tmp_path / GOOD[0])
    tracekit.skill_era(tmp_path / GOOD[2])
    config = ["--config", f"traces={sheet(tmp_path / 'traces.tsv', [(t, tmp_path / t) for t in (GOOD[0], GOOD[2])])}"]
    counts = job_counts(copy_workflow(tmp_path / "wf"), config)
    jobs = set(counts) - {"all"}
    per_trace = {r for r, n in counts.items() if n == 2}
    assert {"dataset_build", "stage", "ingest_trace"} <= jobs and "dataset" not in jobs
    assert {"ingest_trace", "validate_trace"} <= per_trace and "stage" not in per_trace
    for name in ("slurm", "fakecluster", "kubernetes"):
        p = profile(name)
        named = {*p.get("set-resources", {}), *p.get("set-threads", {}), *p.get("groups", {})}
        assert named <= jobs, (name, sorted(named - jobs))
        assert {r for r, g in p["groups"].items() if g == "trace_chain"} == per_trace, name
        assert set(p.get("group-components", {})) <= set(p["groups"].values()), name
