"""#30 item 2, on one machine: traces and results in object storage. A local S3 endpoint (moto's server)
holds a good trace and a broken one as bundles; the workflow runs with `--default-storage-provider s3`
and a prefix, a sheet naming the traces by their `s3://` URLs, and its results must be those of a
local run of the same bundles, in the bucket, with the summary naming them (and the broken trace's
reason) by their URLs. Skips when moto or the S3 plugin is absent."""

import importlib.util
import io
import json
import os
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from optrace.example.repo_builder import make_bundle
from tests.support import tracekit
from tests.support.paths import ROOT
from tests.support.workflow import copy_workflow, only_the_target_ran, run_snakemake

pytestmark = pytest.mark.workflow
pytest.importorskip("moto.server")
pytest.importorskip("snakemake_storage_plugin_s3")
from tests.support.s3server import BUCKET, FAKE_AWS, client, keys, s3_endpoint  # noqa: E402

SLUG, BROKEN = "011-iteration", "014-broken"
PREFIX = "run1"
TRACES = ("kernel_opt_011_iteration.bundle", "kernel_opt_014_broken.bundle")


def sheet(path, folder):
    rows = "".join(f"{name.removesuffix('.bundle')}\t{folder}/{name}\n" for name in TRACES)
    path.write_text(f"label\tpath\n{rows}")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One local run and one run in storage of the same two bundles, and what the bucket holds after."""
    tmp = tmp_path_factory.mktemp("storage")
    tracekit.iteration_era(tmp / "kernel_opt_011_iteration")
    make_bundle(tmp / "kernel_opt_011_iteration", tmp / TRACES[0])
    (tmp / TRACES[1]).write_bytes(b"not a git bundle\n")  # fails at ingest, the other trace goes on
    local, stored = copy_workflow(tmp / "local"), copy_workflow(tmp / "stored")
    env = {**os.environ, **FAKE_AWS}
    run_snakemake(local, "--config", f"traces={sheet(tmp / 'local.tsv', tmp)}", env=env)
    urls = f"traces={sheet(tmp / 'urls.tsv', f's3://{BUCKET}/traces')}"
    with s3_endpoint(tmp / "moto.log") as url:
        for name in TRACES:
            client(url).upload_file(str(tmp / name), BUCKET, f"traces/{name}")
        storage = storage_args(url)
        res = run_snakemake(stored, *storage, "--config", urls, env=env)
        again = run_snakemake(stored, *storage, "--config", urls, env=env)
        absolute = run_snakemake(
            stored, *storage, "-n", "--config", urls, f"results={tmp / 'abs'}", env=env, check=False
        )
        # the Kubernetes profile, planned as its pods would run (the dryrun executor stands in for the
        # plugin, which is not installed here): every option it names is one snakemake accepts
        profile = run_snakemake(
            stored,
            "--workflow-profile",
            "none",
            "--profile",
            "profiles/kubernetes",
            "--executor",
            "dryrun",
            "--default-storage-prefix",
            f"s3://{BUCKET}/k8s",
            "--storage-s3-endpoint-url",
            url,
            "--config",
            urls,
            env=env,
            check=False,
        )
        isolated = isolated_run(tmp, url, env)
        yield SimpleNamespace(
            local=local,
            stored=stored,
            bucket=keys(url, PREFIX),
            res=res,
            again=again,
            absolute=absolute,
            profile=profile,
            isolated=isolated,
            isolated_bucket=keys(url, ISOLATED_PREFIX),
            everything={o["Key"] for o in client(url).list_objects_v2(Bucket=BUCKET).get("Contents", [])},
        )


ISOLATED_PREFIX = "iso1"
ISOLATED = ROOT / "tests" / "fixtures" / "isolated"


def isolated_run(tmp, url, env):
    """The same sheet through jobs that share nothing but the bucket: the Kubernetes profile (object
    storage, shared-fs-usage none, its groups), with cluster-generic standing in for the plugin and
    each job run in a fresh copy of the workflow source (tests/fixtures/isolated), as a pod starts
    from its image. The sheet is part of that source."""
    source = copy_workflow(tmp / "iso-source")
    sheet(source / "config" / "urls.tsv", f"s3://{BUCKET}/traces")
    controller = copy_workflow(tmp / "iso-controller")
    shutil.copy(source / "config" / "urls.tsv", controller / "config" / "urls.tsv")
    jobs = tmp / "iso-jobs"
    jobs.mkdir()
    res = run_snakemake(
        controller,
        "--workflow-profile",
        "none",
        "--profile",
        "profiles/kubernetes",
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        ISOLATED / "submit.sh",
        "--cluster-generic-status-cmd",
        ISOLATED / "status.sh",
        "--jobs",
        "4",
        "--latency-wait",
        "5",
        "--default-storage-prefix",
        f"s3://{BUCKET}/{ISOLATED_PREFIX}",
        "--storage-s3-endpoint-url",
        url,
        "--config",
        "traces=config/urls.tsv",
        # a job's `python` is this interpreter, as a pod's is its image's
        env={
            **env,
            "ISOLATED_JOBS": str(jobs),
            "ISOLATED_SOURCE": str(source),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        },
    )
    return SimpleNamespace(res=res, controller=controller, jobs=sorted(p for p in jobs.iterdir() if not p.is_symlink()))


def storage_args(url):
    return [
        "--default-storage-provider",
        "s3",
        "--default-storage-prefix",
        f"s3://{BUCKET}/{PREFIX}",
        "--storage-s3-endpoint-url",
        url,
    ]


def without_folders(staged):
    """staged.json with each failed trace's reason naming its bundle by file name alone."""
    for failed in staged["failed_traces"]:
        failed["reason"] = re.sub(r"\S*/(kernel_opt_\w+\.bundle)", r"\1", failed["reason"])
    return staged


STORED_PARTS = ("staging/index.json", "staging/store.json", f"work/{SLUG}/segments.jsonl", f"packets/{SLUG}.json")


def tree(folder):
    """{path: bytes} of every file under `folder`."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_results_land_in_the_bucket_as_a_local_run_writes_them(runs):
    local, bucket = runs.local, runs.bucket
    for part in STORED_PARTS:
        assert bucket[f"results/{part}"] == (local / "results" / part).read_bytes(), part
    index = json.loads(bucket["results/staging/index.json"])
    staged = json.loads(bucket["results/staging/staged.json"])
    assert index and staged["staged"]  # records were mined and staged
    # the broken trace's reason names the bundle where its job read it: a storage copy, or the local file
    expected = json.loads((local / "results/staging/staged.json").read_text())
    assert [t["trace"] for t in staged["failed_traces"]] == [BROKEN]
    assert without_folders(staged) == without_folders(expected)


def test_dataset_tables_have_the_local_row_counts(runs):
    import pandas as pd

    local, bucket = runs.local, runs.bucket
    for table in ("measurements", "runs", "kernels", "autotune", "split"):
        stored = pd.read_parquet(io.BytesIO(bucket[f"results/dataset/{table}.parquet"]))
        assert len(stored) == len(pd.read_parquet(local / f"results/dataset/{table}.parquet")), table
    assert len(pd.read_parquet(io.BytesIO(bucket["results/dataset/measurements.parquet"]))) > 0


def test_the_summary_names_results_by_their_urls(runs):
    res = runs.res
    summary = res.stdout[res.stdout.rindex("Run summary") :]
    assert f"{SLUG}  " in summary and "(1 failed)" in summary
    broken = next(line for line in summary.splitlines() if line.strip().startswith(BROKEN))
    assert "FAILED at ingest" in broken and "bundle" in broken, broken
    assert f"log: s3://{BUCKET}/{PREFIX}/results/logs/ingest/{BROKEN}.log" in summary
    assert "strict is off: failed traces do not change the exit status" in summary  # so it exits 0
    assert f"staging README     s3://{BUCKET}/{PREFIX}/results/staging/README.md" in summary
    assert f"dataset            s3://{BUCKET}/{PREFIX}/results/dataset/README.md" in summary
    assert ".snakemake/storage" not in summary


def test_only_the_agent_area_and_the_store_tree_stay_on_the_controller(runs):
    """Everything else is in the bucket: the local results tree holds the agent's records area (jobs
    beside it write their drafts there too) and the store's tree, the local run's byte for byte."""
    stored, bucket = runs.stored, runs.bucket
    local_files = {p.relative_to(stored / "results").as_posix() for p in (stored / "results").rglob("*") if p.is_file()}
    kept = (f"distilled/{SLUG}/", "staging/records/")
    assert local_files == {f for f in local_files if f.startswith(kept)}
    assert any(f.startswith("distilled/") for f in local_files)  # draft mode wrote its records there
    store_tree = tree(stored / "results/staging/records")
    assert len(store_tree) > 5 and store_tree == tree(runs.local / "results/staging/records")
    assert f"results/logs/ingest/{SLUG}.log" in bucket and f"results/logs/ingest/{BROKEN}.log" in bucket


def test_a_second_run_only_prints_the_summary(runs):
    again = runs.again
    assert only_the_target_ran(again), again.stdout[-2000:]


def test_an_absolute_results_folder_with_storage_is_one_line_before_any_job(runs):
    absolute = runs.absolute
    assert absolute.returncode == 1
    errors = [line for line in absolute.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "give a relative `results`" in errors[0], absolute.stderr[-2000:]
    assert "Traceback" not in absolute.stderr


def test_the_kubernetes_profile_plans_the_run_in_storage_with_packed_traces(runs):
    profile = runs.profile
    assert profile.returncode == 0, profile.stderr[-3000:]
    out = profile.stdout + profile.stderr
    assert "Group job trace_chain" in out  # the per-trace stages travel as one pod
    assert f"s3://{BUCKET}/k8s/results/staging/store.json" in out


def test_without_its_plugin_the_kubernetes_profile_fails_only_on_the_executor(tmp_path):
    """What a user without the plugin sees: one line naming the executor (the README says to install
    it). The profile's other options are proved by the planned run above: with the dryrun executor a
    misspelled option is `unrecognized arguments`."""
    if importlib.util.find_spec("snakemake_executor_plugin_kubernetes"):
        pytest.skip("the kubernetes executor plugin is installed here")
    wd = copy_workflow(tmp_path / "wf")
    res = run_snakemake(wd, "--workflow-profile", "none", "--profile", "profiles/kubernetes", "-n", check=False)
    assert res.returncode != 0
    errors = [line for line in res.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--executor" in errors[0] and "'kubernetes'" in errors[0], res.stderr[-2000:]


# ---- jobs that share nothing (#30) -----------------------------------------------------------------


def test_isolated_jobs_stage_and_tabulate_what_a_local_run_does(runs):
    local, bucket = runs.local, runs.isolated_bucket
    assert runs.isolated.jobs  # the stages ran as submitted jobs, each in its own copy
    for part in STORED_PARTS:
        assert bucket[f"results/{part}"] == (local / "results" / part).read_bytes(), part
    staged = json.loads(bucket["results/staging/staged.json"])
    expected = json.loads((local / "results/staging/staged.json").read_text())
    assert staged["staged"] and without_folders(staged) == without_folders(expected)
    assert [t["trace"] for t in staged["failed_traces"]] == [BROKEN]
    assert (
        staged["failed_traces"][0]["stage"] == "ingest"
        and "kernel_opt_014_broken.bundle" in staged["failed_traces"][0]["reason"]
    )
    import pandas as pd

    for table in ("measurements", "runs", "kernels", "autotune", "split"):
        stored = pd.read_parquet(io.BytesIO(bucket[f"results/dataset/{table}.parquet"]))
        assert len(stored) == len(pd.read_parquet(local / f"results/dataset/{table}.parquet")), table


def test_isolated_jobs_the_summary_names_the_failed_trace_and_the_urls(runs):
    res = runs.isolated.res
    summary = res.stdout[res.stdout.rindex("Run summary") :]
    broken = next(line for line in summary.splitlines() if line.strip().startswith(BROKEN))
    assert "FAILED at ingest" in broken, broken
    assert f"log: s3://{BUCKET}/{ISOLATED_PREFIX}/results/logs/ingest/{BROKEN}.log" in summary
    assert f"staging README     s3://{BUCKET}/{ISOLATED_PREFIX}/results/staging/README.md" in summary
    assert ".snakemake/storage" not in summary


def test_isolated_jobs_write_nothing_but_storage_and_their_own_folder(runs):
    """The controller's working copy holds no result but the store's tree: every result is a key below
    the run's prefix, and each job ran in its own folder: the profile's three groups (both traces'
    chains in one pod, the store, the tables), only the summaries, the store's tree and the denylist
    stamp on the controller."""
    controller, res = runs.isolated.controller, runs.isolated.res
    # but the store's tree, written from the bucket's store file where the store is read
    assert {p.name for p in (controller / "results").iterdir()} == {"staging"}
    assert {p.name for p in (controller / "results/staging").iterdir()} == {"records"}
    assert tree(controller / "results/staging/records") == tree(runs.local / "results/staging/records")
    assert res.stderr.count("Submitted group job") == len(runs.isolated.jobs) == 3, res.stderr[-3000:]
    grouped = {line.split()[1].rstrip(":") for line in res.stderr.splitlines() if line.startswith("    rule ")}
    assert {"ingest_trace", "distill_trace", "validate_trace", "stage", "dataset_build"} <= grouped
    local = {line.split()[1].rstrip(":") for line in res.stderr.splitlines() if line.startswith("localrule ")}
    assert local == {"denylist_stamp", "validate_summary", "store_tree", "all"}
    assert {k.split("/")[0] for k in runs.everything} == {"traces", PREFIX, ISOLATED_PREFIX}
    for job in runs.isolated.jobs:
        assert (job / "rc").read_text().strip() == "0", (job / "job.log").read_text()[-2000:]
