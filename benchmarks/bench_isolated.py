"""A run whose jobs share nothing but object storage (#30): N synthetic traces as bundles in a local S3
endpoint (moto's server), run with profiles/kubernetes, cluster-generic standing in for its executor and
each job in a fresh copy of the workflow source (tests/fixtures/isolated, as a pod starts from its
image). Reports wall seconds, the submissions, the controller's CPU seconds (user+sys, from wait4) and
its peak memory (its CPU includes the submit and status scripts and the local rules it waited for; the
jobs are detached and not in it), the jobs' summed wall, and the load average before and after (the machine may be
shared: the jobs run on the same cores as the controller here, unlike a cluster).

    python benchmarks/bench_isolated.py [--traces 300] [--versions 5] [--distinct 50]

Needs moto[server] and snakemake-storage-plugin-s3 (both in `.[dev]`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bench_plan import ROOT, fresh_copy, measured
from synthetic import synthetic_trace

sys.path.insert(0, str(ROOT))
from optrace.example.repo_builder import make_bundle
from tests.support.s3server import BUCKET, FAKE_AWS, client, s3_endpoint

ISOLATED = ROOT / "tests" / "fixtures" / "isolated"


def upload_sheet(tmp: Path, url: str, n_traces: int, distinct: int, n_versions: int) -> str:
    """N sheet rows over `distinct` bundles (each row its own trace to Snakemake), uploaded; the sheet text."""
    s3 = client(url)
    rows = ["label\tpath"]
    for i in range(distinct):
        trace = tmp / "traces" / f"kernel_opt_{i:04d}_gemm_n4096_k4096"
        synthetic_trace(trace, n_versions, seed=i)
        make_bundle(trace, trace.with_suffix(".bundle"))
        s3.upload_file(str(trace.with_suffix(".bundle")), BUCKET, f"traces/{i:04d}.bundle")
    rows += [f"kernel_opt_{i:05d}_gemm\ts3://{BUCKET}/traces/{i % distinct:04d}.bundle" for i in range(n_traces)]
    return "\n".join(rows) + "\n"


def run(tmp: Path, url: str, sheet: str) -> dict:
    source, controller, jobs = tmp / "source", tmp / "controller", tmp / "jobs"
    for wd in (fresh_copy(ROOT, source), fresh_copy(ROOT, controller)):
        (wd / "config" / "bench.tsv").write_text(sheet)
    jobs.mkdir()
    env = {**os.environ, **FAKE_AWS, "ISOLATED_JOBS": str(jobs), "ISOLATED_SOURCE": str(source)}
    cmd = [sys.executable, "-m", "snakemake", "--workflow-profile", "none", "--profile", "profiles/kubernetes"]
    cmd += ["--executor", "cluster-generic", "--cluster-generic-submit-cmd", str(ISOLATED / "submit.sh")]
    cmd += ["--cluster-generic-status-cmd", str(ISOLATED / "status.sh"), "--jobs", "4", "--latency-wait", "5"]
    cmd += ["--default-storage-prefix", f"s3://{BUCKET}/bench", "--storage-s3-endpoint-url", url]
    cmd += ["--config", "traces=config/bench.tsv"]
    log, rc, figures = measured(cmd, controller, env)
    if rc != 0:
        raise SystemExit(f"the isolated run failed:\n{log[-3000:]}")
    folders = [p for p in jobs.iterdir() if not p.is_symlink()]
    job_wall = sum((p / "rc").stat().st_mtime - (p / "job.sh").stat().st_mtime for p in folders)
    return dict(
        figures,
        submissions=log.count("Submitted group job") + log.count("Submitted job"),
        jobs=len(folders),
        job_wall=job_wall,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=300)
    ap.add_argument("--versions", type=int, default=5)
    ap.add_argument("--distinct", type=int, default=50, help="distinct bundles the sheet's rows cycle through")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-isolated-") as tmp_name:
        tmp = Path(tmp_name)
        with s3_endpoint(tmp / "moto.log") as url:
            sheet = upload_sheet(tmp, url, args.traces, min(args.distinct, args.traces), args.versions)
            r = run(tmp, url, sheet)
    print(
        f"isolated jobs, {args.traces} traces: wall {r['wall']:.1f} s, {r['submissions']} submissions "
        f"({r['jobs']} job folders, {r['job_wall']:.1f} s of job wall summed), controller CPU {r['cpu']:.1f} s, "
        f"peak {r['peak']:.0f} MB, load {r['load'][0]:.1f} -> {r['load'][1]:.1f}"
    )


if __name__ == "__main__":
    main()
