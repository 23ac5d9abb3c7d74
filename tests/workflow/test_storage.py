"""#30 item 2, on one machine: traces and results in object storage. A local S3 endpoint (moto's server)
holds one good trace as a bundle; the workflow runs with `--default-storage-provider s3` and a prefix,
the trace given as its `s3://` URL, and its results must be those of a local run of the same bundle, in
the bucket, with the summary naming them by their URLs. Skips when moto or the S3 plugin is absent."""

import importlib.util
import io
import json
import os

import pytest

from optrace.example.repo_builder import make_bundle
from tests.support import tracekit
from tests.support.workflow import copy_workflow, only_the_target_ran, run_snakemake

pytestmark = pytest.mark.workflow
pytest.importorskip("moto.server")
pytest.importorskip("snakemake_storage_plugin_s3")
from tests.support.s3server import BUCKET, FAKE_AWS, client, keys, s3_endpoint  # noqa: E402

SLUG = "011-iteration"
PREFIX = "run1"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(local working copy, storage working copy, endpoint, the storage run) after one run of each."""
    tmp = tmp_path_factory.mktemp("storage")
    tracekit.iteration_era(tmp / "kernel_opt_011_iteration")
    bundle = make_bundle(tmp / "kernel_opt_011_iteration", tmp / "kernel_opt_011_iteration.bundle")
    local, stored = copy_workflow(tmp / "local"), copy_workflow(tmp / "stored")
    env = {**os.environ, **FAKE_AWS}
    run_snakemake(local, "--config", f"trace={bundle}", env=env)
    with s3_endpoint(tmp / "moto.log") as url:
        client(url).upload_file(str(bundle), BUCKET, "traces/kernel_opt_011_iteration.bundle")
        storage = storage_args(url)
        res = run_snakemake(
            stored, *storage, "--config", f"trace=s3://{BUCKET}/traces/kernel_opt_011_iteration.bundle", env=env
        )
        again = run_snakemake(
            stored, *storage, "--config", f"trace=s3://{BUCKET}/traces/kernel_opt_011_iteration.bundle", env=env
        )
        absolute = run_snakemake(
            stored,
            *storage,
            "-n",
            "--config",
            f"trace=s3://{BUCKET}/traces/kernel_opt_011_iteration.bundle",
            f"results={tmp / 'abs'}",
            env=env,
            check=False,
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
            f"trace=s3://{BUCKET}/traces/kernel_opt_011_iteration.bundle",
            env=env,
            check=False,
        )
        yield local, stored, keys(url, PREFIX), res, again, absolute, profile


def storage_args(url):
    return [
        "--default-storage-provider",
        "s3",
        "--default-storage-prefix",
        f"s3://{BUCKET}/{PREFIX}",
        "--storage-s3-endpoint-url",
        url,
    ]


def test_results_land_in_the_bucket_as_a_local_run_writes_them(runs):
    local, _, bucket, *_ = runs
    for part in ("staging/records/index.json", "staging/staged.json", f"work/{SLUG}/segments.jsonl"):
        assert bucket[f"results/{part}"] == (local / "results" / part).read_bytes(), part
    index = json.loads(bucket["results/staging/records/index.json"])
    assert index and json.loads(bucket["results/staging/staged.json"])  # records were mined and staged
    packets = {k for k in bucket if k.startswith(f"results/packets/{SLUG}/")} - {
        f"results/packets/{SLUG}/.snakemake_timestamp"
    }
    local_packets = {p.relative_to(local).as_posix() for p in (local / "results/packets" / SLUG).iterdir()}
    assert packets == local_packets - {f"results/packets/{SLUG}/.snakemake_timestamp"}


def test_dataset_tables_have_the_local_row_counts(runs):
    import pandas as pd

    local, _, bucket, *_ = runs
    for table in ("measurements", "runs", "kernels", "autotune", "split"):
        stored = pd.read_parquet(io.BytesIO(bucket[f"results/dataset/{table}.parquet"]))
        assert len(stored) == len(pd.read_parquet(local / f"results/dataset/{table}.parquet")), table
    assert len(pd.read_parquet(io.BytesIO(bucket["results/dataset/measurements.parquet"]))) > 0


def test_the_summary_names_results_by_their_urls(runs):
    _, _, _, res, *_ = runs
    summary = res.stdout[res.stdout.rindex("Run summary") :]
    assert f"{SLUG}  " in summary and "(0 failed)" in summary
    assert f"staging README     s3://{BUCKET}/{PREFIX}/results/staging/README.md" in summary
    assert f"dataset            s3://{BUCKET}/{PREFIX}/results/dataset/README.md" in summary
    assert ".snakemake/storage" not in summary


def test_only_the_agent_area_and_its_marker_stay_on_the_controller(runs):
    """Everything else is in the bucket: the local results tree holds the agent's records area and the
    deleted-records marker the controller writes at planning time, nothing more."""
    _, stored, bucket, *_ = runs
    local_files = {p.relative_to(stored / "results").as_posix() for p in (stored / "results").rglob("*") if p.is_file()}
    assert local_files == {f"work/{SLUG}/deleted-records.txt"} | {
        f for f in local_files if f.startswith(f"distilled/{SLUG}/")
    }
    assert any(f.startswith("distilled/") for f in local_files)  # draft mode wrote its records there
    assert f"results/logs/ingest/{SLUG}.log" in bucket


def test_a_second_run_only_prints_the_summary(runs):
    *_, again, _, _ = runs
    assert only_the_target_ran(again), again.stdout[-2000:]


def test_an_absolute_results_folder_with_storage_is_one_line_before_any_job(runs):
    *_, absolute, _ = runs
    assert absolute.returncode == 1
    errors = [line for line in absolute.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "give a relative `results`" in errors[0], absolute.stderr[-2000:]
    assert "Traceback" not in absolute.stderr


def test_the_kubernetes_profile_plans_the_run_in_storage_with_packed_traces(runs):
    *_, profile = runs
    assert profile.returncode == 0, profile.stderr[-3000:]
    out = profile.stdout + profile.stderr
    assert "Group job trace_chain" in out  # the per-trace stages travel as one pod
    assert f"s3://{BUCKET}/k8s/results/staging/records/index.json" in out


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
