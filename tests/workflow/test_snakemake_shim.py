"""What optrace.run.snakemake_shim relies on, against the installed Snakemake: when a release changes
either, these fail (the workflow would otherwise run the wrong interpreter, or wait at every exit)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.workflow

PROBE = """
from optrace.run.snakemake_shim import cancel_rescheduling_timers, uses_conda

print("USES_CONDA", uses_conda(workflow), flush=True)

rule all:
    input: "a.txt", "b.txt"

rule one:
    output: "{name}.txt"
    shell: "sleep 0.5; touch {output}"

onsuccess:
    print("CANCELLED", cancel_rescheduling_timers(), flush=True)
"""


def snakemake(wd, *args):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--workflow-profile", "none", *args],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "Snakefile").write_text(PROBE)
    return tmp_path


def test_the_deployment_method_is_read_from_the_run(probe):
    assert "USES_CONDA False" in snakemake(probe, "-n", "-c1").stdout
    # parsing happens before Snakemake looks for conda, so this holds on a machine without it too
    assert "USES_CONDA True" in snakemake(probe, "-n", "-c1", "--sdm", "conda").stdout


def test_a_run_that_waited_for_cores_leaves_scheduler_timers_to_cancel(probe):
    """One core, two jobs: the second waits, and the scheduler arms a re-evaluation timer of the
    rate limiter's timespan that Python would wait for at exit."""
    res = snakemake(probe, "-c1", "--max-jobs-per-timespan", "10000/10s")
    assert res.returncode == 0, res.stderr[-2000:]
    cancelled = [int(line.split()[1]) for line in res.stdout.splitlines() if line.startswith("CANCELLED")]
    assert cancelled and cancelled[0] >= 1, res.stdout
