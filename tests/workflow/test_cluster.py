"""The two-trace workflow through a real executor plugin (cluster-generic, profiles/fakecluster):
every job is submitted as a job script and runs in its own snakemake process, as on a site.
Results must equal a local run's. Slow (~1 min); deselect with `-m "not cluster"`."""

import subprocess
import sys

import pytest

from optrace.example.repo_builder import make_bundle
from tests.support import tracekit
from tests.support.workflow import copy_workflow

pytestmark = [pytest.mark.workflow, pytest.mark.cluster]
COMPARED = (
    "staging/records",
    "staging/staged.json",
    "staging/README.md",
    "packets",
    "distilled",
    "work/011-iteration/segments.jsonl",
    "work/012-horizon/segments.jsonl",
    "dataset/measurements.parquet",
    "dataset/runs.parquet",
)


def tree(root):
    return (
        {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        if root.is_dir()
        else {root.name: root.read_bytes()}
    )


def test_fake_cluster_gives_the_local_results(tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_011_iteration")
    tracekit.long_horizon_era(tmp_path / "horizon")
    # the second trace travels as a bundle, as it would to a node without a shared file system
    bundle = make_bundle(tmp_path / "horizon", tmp_path / "kernel_opt_012_horizon.bundle")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_011_iteration\t{tmp_path / 'kernel_opt_011_iteration'}\n"
        f"kernel_opt_012_horizon\t{bundle}\n"
    )
    local, cluster = copy_workflow(tmp_path / "local"), copy_workflow(tmp_path / "cluster")
    run = [sys.executable, "-m", "snakemake", "--config", f"traces={sheet}"]
    res = subprocess.run([*run, "-c2"], cwd=local, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run(
        [*run, "--workflow-profile", "none", "--profile", "profiles/fakecluster"],
        cwd=cluster,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "group job" in out.lower() or "trace_chain" in out  # the short per-trace stages ran as group jobs
    for part in COMPARED:
        assert tree(cluster / "results" / part) == tree(local / "results" / part), part
    # nothing was left in a temporary directory outside the results (bundles are cloned inside them)
    assert not list((cluster / "results").rglob(".optrace-bundle-*"))
