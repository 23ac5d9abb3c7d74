"""Only stale stages re-run: exact `snakemake -n` job lists on a two-trace sheet."""

import json
import os
import subprocess

import pytest

from tests.support import tracekit
from tests.support.workflow import run_snakemake as snakemake

pytestmark = pytest.mark.workflow
A, B = "011-iteration", "012-horizon"
PER_TRACE = (
    "ingest_trace",
    "recon_trace",
    "partition_trace",
    "packets_trace",
    "distill_trace",
    "validate_trace",
)
AGGREGATES = {
    ("validate_summary", None),
    ("stage", None),
    ("store_tree", None),
    ("readme", None),
    ("dataset_build", None),
    ("dataset_split", None),
}
TARGETS = {"all", "validate", "ingest", "recon", "partition", "packets", "distill", "staging", "dataset"}


def planned(wd, *args, env=None) -> set[tuple[str, str | None]]:
    """(rule, slug) of every job a dry run would execute."""
    res = snakemake(wd, "-n", *args, env=env)
    jobs, current = set(), None
    for line in (res.stdout + res.stderr).splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in ("rule", "localrule") and words[1].endswith(":"):
            current = words[1][:-1]
            if current not in TARGETS:
                jobs.add((current, None))
        elif current and line.strip().startswith("wildcards: slug=") and current not in TARGETS:
            jobs.discard((current, None))
            jobs.add((current, line.strip().split("slug=")[1]))
    return jobs


def chain(slug, first="ingest_trace"):
    return {(r, slug) for r in PER_TRACE[PER_TRACE.index(first) :]}


@pytest.fixture
def two_traces(workdir, tmp_path):
    tracekit.iteration_era(tmp_path / "kernel_opt_011_iteration")
    tracekit.long_horizon_era(tmp_path / "kernel_opt_012_horizon")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_011_iteration\t{tmp_path / 'kernel_opt_011_iteration'}\n"
        f"kernel_opt_012_horizon\t{tmp_path / 'kernel_opt_012_horizon'}\n"
    )
    cfg = ("--config", f"traces={sheet}")
    snakemake(workdir, *cfg)
    return workdir, cfg, tmp_path


def test_e_nothing_changed_nothing_runs(two_traces):
    wd, cfg, _ = two_traces
    assert planned(wd, *cfg) == set()


def test_a_new_or_changed_records_rerun_only_that_traces_validation(two_traces):
    wd, cfg, _ = two_traces
    folder = wd / "results" / "distilled" / A
    record = sorted(folder.glob("*.json"))[0]
    rec = json.loads(record.read_text())
    rec["id"] += "-agent2"
    (folder / f"{rec['id']}.json").write_text(json.dumps(rec, indent=1) + "\n")
    expected = {
        ("validate_trace", A),
        ("validate_summary", None),
        ("stage", None),
        ("store_tree", None),
        ("readme", None),
    }
    assert planned(wd, *cfg) == expected
    snakemake(wd, *cfg)
    record.write_text(record.read_text().replace('"active"', '"active" '))  # an agent edits a record
    assert planned(wd, *cfg) == expected


def test_b_a_new_commit_reruns_that_traces_chain_only(two_traces):
    wd, cfg, tmp = two_traces
    repo = tmp / "kernel_opt_012_horizon"
    (repo / "memory" / "v6.json").write_text(tracekit.memory(6, 200.0))
    (repo / "kernel.py").write_text(tracekit.kernel(6))
    subprocess.run(
        "git add -A && git -c user.name=a -c user.email=a@b commit -qm 'episode 5: promote verified long-horizon candidate'",
        shell=True,
        cwd=repo,
        check=True,
    )
    assert planned(wd, *cfg) == chain(B) | AGGREGATES


def test_b_untracked_profiles_count_as_a_change(two_traces):
    wd, cfg, tmp = two_traces
    capture = tmp / "kernel_opt_011_iteration" / "profiles" / "v1"
    capture.mkdir(parents=True)
    (capture / "summary.txt").write_text("Kernel: _softmax_kernel\n")
    assert planned(wd, *cfg) == chain(A) | AGGREGATES


def test_c_a_ladder_threshold_reruns_partition_and_what_follows_not_ingest(two_traces):
    wd, cfg, _ = two_traces
    jobs = planned(wd, *cfg, "ladder={milestone_pct: 2.5}")
    expected = chain(A, "recon_trace") | chain(B, "recon_trace") | AGGREGATES
    assert jobs == expected
    assert not {j for j in jobs if j[0] == "ingest_trace"}


@pytest.mark.parametrize(
    "module,expected",
    [
        ("report/recon.py", {("recon_trace", A), ("recon_trace", B), ("readme", None)}),
        (
            "mine/partition.py",
            chain(A, "partition_trace")
            | chain(B, "partition_trace")
            | {("validate_summary", None), ("stage", None), ("store_tree", None), ("readme", None)},
        ),
        ("publish/worth.py", {("stage", None), ("store_tree", None), ("readme", None)}),
        (
            "dataset/build.py",
            {("dataset_build", None), ("dataset_split", None)},
        ),
    ],
)
def test_d_a_stage_code_change_reruns_that_stage_and_its_dependants(two_traces, module, expected):
    wd, cfg, _ = two_traces
    path = wd / "workflow" / "scripts" / "optrace" / module
    original = path.read_text()
    path.write_text(original + "\n# a comment changes the digest\n")
    assert planned(wd, *cfg) == expected
    path.write_text(original)
    assert planned(wd, *cfg) == set()


def test_f_editing_the_denylist_rescrubs_and_touching_it_does_not(two_traces):
    wd, cfg, tmp = two_traces
    denylist = tmp / "denylist.txt"
    denylist.write_text("zz-first-term\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(denylist)}
    # ingest scrubs, so a new denylist re-runs every trace's chain; its digest is the stamp job's alone
    rescrub = {("denylist_stamp", None)} | chain(A) | chain(B) | AGGREGATES
    assert planned(wd, *cfg, env=env) == rescrub
    snakemake(wd, *cfg, env=env)
    assert planned(wd, *cfg, env=env) == set()
    os.utime(denylist)  # the same terms: its digest, not its mtime, decides
    assert planned(wd, *cfg, env=env) == set()
    denylist.write_text("zz-first-term\nzz-second-term\n")
    assert planned(wd, *cfg, env=env) == rescrub
