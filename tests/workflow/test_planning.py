"""Planning cost that grows with the sheet (#30 item 4): what keeps it linear, pinned without timing
(benchmarks/bench_plan.py measures it).

An aggregate rule names every trace's file through an input function (common.smk `per_trace`), never
as a list written into the rule: Snakemake looks each input file's rule-level item up among the rule's
dependencies, and a named list there is hashed whole once per file in it, so planning would grow with
the square of the traces. The aggregate jobs are still given every trace's file, in slug order.
"""

import subprocess
import sys

import pytest

from tests.support import tracekit

pytestmark = pytest.mark.workflow
LABELS = ("kernel_opt_021_c", "kernel_opt_022_a", "kernel_opt_023_b")
SLUGS = ["021-c", "022-a", "023-b"]

# Parsed with the workflow: every file of each named input that is a list written into a rule.
PROBE = """
include: "Snakefile"


import sys as _sys

for _rule in workflow.rules:
    for _name in _rule.input.keys():
        _item = getattr(_rule.input, _name)
        if isinstance(_item, list):
            for _file in _item:
                print(f"LISTED {_rule.name}.{_name} {_file}", file=_sys.stderr)
"""


@pytest.fixture
def three_traces(workdir, tmp_path):
    trace = tmp_path / "kernel_opt_021_iteration"
    tracekit.iteration_era(trace)
    sheet = tmp_path / "traces.tsv"
    sheet.write_text("label\tpath\n" + "".join(f"{label}\t{trace}\n" for label in LABELS))
    return workdir, ("--config", f"traces={sheet}")


def dry_run(wd, *args) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c1", "-n", *args], cwd=wd, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def test_no_rule_writes_a_per_trace_list_into_its_input(three_traces):
    wd, cfg = three_traces
    (wd / "probe.smk").write_text(PROBE)
    res = dry_run(wd, "-q", "-s", "probe.smk", *cfg)
    listed = [line for line in res.stderr.splitlines() if line.startswith("LISTED ")]
    assert listed, "the probe saw no listed input (a fixed list such as the dataset's files is one)"
    per_trace = [line for line in listed if any(f"/{slug}/" in line or line.endswith(f"/{slug}") for slug in SLUGS)]
    assert not per_trace, per_trace


def test_aggregate_jobs_are_given_every_traces_file_in_slug_order(three_traces):
    wd, cfg = three_traces
    out = dry_run(wd, *cfg).stdout
    stage = out.split("rule stage:", 1)[1].split("\n\n", 1)[0]
    inputs = next(line for line in stage.splitlines() if line.strip().startswith("input:"))
    packets = [f.strip().removeprefix("results/packets/") for f in inputs.split(":", 1)[1].split(",")]
    assert [p.removesuffix(".json") for p in packets if p.endswith(".json") and "/" not in p] == SLUGS, inputs
