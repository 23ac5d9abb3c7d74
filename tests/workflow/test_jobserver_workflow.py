"""A run whose per-trace jobs are forks of the warm job server (optrace.run.jobserver) produces exactly
what a run that starts every job the ordinary way does, failing traces included."""

import hashlib
import shutil

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from tests.support import tracekit
from tests.support.workflow import copy_workflow
from tests.support.workflow import run_snakemake as snakemake

pytestmark = pytest.mark.workflow


def produced(results):
    """Every file a run produced, by content (logs and benchmarks hold timings)."""
    return {
        str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(results.rglob("*"))
        if p.is_file() and p.relative_to(results).parts[0] not in ("logs", "benchmarks")
    }


def test_served_and_ordinary_runs_produce_the_same_files(tmp_path):
    tracekit.skill_era(tmp_path / "kernel_opt_010_skill")
    tracekit.iteration_era(tmp_path / "kernel_opt_011_iteration")
    build_trace(tmp_path / "kernel_opt_012_nogpu", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0)})])
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        "label\tpath\n"
        + "".join(
            f"{name}\t{tmp_path / name}\n"
            for name in ("kernel_opt_010_skill", "kernel_opt_011_iteration", "kernel_opt_012_nogpu")
        )
    )
    runs = {}
    for served in (True, False):
        wd = copy_workflow(tmp_path / f"wf-{served}")
        res = snakemake(wd, "--config", f"traces={sheet}", f"job_server={str(served).lower()}")
        server_log = wd / ".snakemake/optrace/jobserver.log"
        assert server_log.exists() == served, res.stderr[-2000:]
        if served:  # every per-trace job went through the server, and nothing went wrong there
            assert server_log.read_text() == "optrace job server: 18 jobs\n", res.stderr[-3000:]
        runs[served] = produced(wd / "results")
        ingest_log = (wd / "results/logs/ingest/012-nogpu.log").read_text()
        assert ingest_log.startswith("error: ") and "states no GPU" in ingest_log
        shutil.rmtree(wd / ".snakemake")
    assert len(runs[True]) > 30 and runs[True] == runs[False]
