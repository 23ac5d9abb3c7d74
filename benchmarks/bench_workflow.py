"""Workflow-level benchmark: a 100-trace sheet through real Snakemake.

Prints the first full run, a no-op re-run (target <= 10 s, DESIGN §9), and the re-run after a
10-record agent batch lands in one trace's distilled/ directory (only that trace's validate, then
stage and readme, may run). `--dataset-only` instead runs the `dataset` target alone (ingest, the
per-trace sources, the build, the split) and prints each dataset job's time and peak memory (from
the rules' `benchmark:` files), then `optrace.dataset.load` over the result.

    python benchmarks/bench_workflow.py [--traces 100] [--versions 30] [--dataset-only]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import synthetic_trace

ROOT = Path(__file__).resolve().parents[1]


def snakemake(wd: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "snakemake", "-c2", *args], cwd=wd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{res.stderr[-3000:]}")
    return time.perf_counter() - t0, res.stdout + res.stderr


def jobs_run(log: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in log.splitlines():
        line = line.strip()
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            name = line.split()[1].rstrip(":")
            counts[name] = counts.get(name, 0) + 1
    return counts


def ten_new_records(results: Path, slug: str) -> int:
    """Copy 10 existing drafted records of one trace under new ids (an agent batch)."""
    src = sorted((results / "distilled" / slug).glob("*.json"))[:10]
    for i, path in enumerate(src):
        rec = json.loads(path.read_text())
        rec["id"] = rec["id"] + f"-batch{i}"
        (path.parent / f"{rec['id']}.json").write_text(json.dumps(rec, indent=1) + "\n")
    return len(src)


def benchmark_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for p in paths:
        header, values = p.read_text().splitlines()[:2]
        rows.append(dict(zip(header.split("\t"), values.split("\t"))))
    return rows


def dataset_only(wd: Path, cfg: str) -> None:
    total, log = snakemake(wd, "dataset", "--config", cfg)
    print(f"dataset target:        {total:7.1f} s  jobs {jobs_run(log)}")
    bench = wd / "results" / "benchmarks" / "dataset"
    sources = benchmark_rows(sorted((bench / "sources").glob("*.tsv")))
    print(f"  sources (per trace): {sum(float(r['s']) for r in sources):7.1f} s summed over {len(sources)} jobs, "
          f"max {max(float(r['s']) for r in sources):.2f} s, peak RSS max {max(float(r['max_rss']) for r in sources):.0f} MB")
    for name in ("build", "split"):
        (row,) = benchmark_rows([bench / f"{name}.tsv"])
        print(f"  {name:18s}: {float(row['s']):7.2f} s  peak RSS {float(row['max_rss']):.0f} MB")
    code = ("import resource, time, sys; t=time.perf_counter(); from optrace.dataset import load; "
            f"f=load({str(wd / 'results' / 'dataset')!r}); "
            "print(f'{time.perf_counter()-t:.2f} {len(f)} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f}')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(wd / "workflow" / "scripts"), "PATH": ""})
    if res.returncode != 0:
        raise SystemExit(f"load() failed:\n{res.stderr[-3000:]}")
    secs, rows, rss = res.stdout.split()
    print(f"  load():              {float(secs):7.2f} s  {rows} samples, peak RSS {rss} MB")
    sizes = {p.name: p.stat().st_size for p in sorted((wd / "results" / "dataset").glob("*.parquet"))}
    print("  files: " + ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--versions", type=int, default=30)
    ap.add_argument("--dataset-only", action="store_true", help="only the dataset target, with per-job time and memory")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="optrace-wf-bench-") as tmp:
        tmp = Path(tmp)
        wd = tmp / "wf"
        shutil.copytree(ROOT, wd, ignore=shutil.ignore_patterns(".git", ".snakemake", "results", ".venv", "__pycache__", "tests", "benchmarks"))
        rows = ["label\tpath"]
        t0 = time.perf_counter()
        for i in range(args.traces):
            name = f"kernel_opt_{i:03d}_gemm_n4096_k4096"
            synthetic_trace(tmp / "traces" / name, args.versions, seed=i)
            rows.append(f"{name}\t{tmp / 'traces' / name}")
        (tmp / "traces.tsv").write_text("\n".join(rows) + "\n")
        print(f"built {args.traces} traces of {args.versions} versions in {time.perf_counter() - t0:.1f} s")
        cfg = f"traces={tmp / 'traces.tsv'}"
        if args.dataset_only:
            dataset_only(wd, cfg)
            return 0
        full, log = snakemake(wd, "--config", cfg)
        print(f"full run:              {full:7.1f} s  jobs {sum(jobs_run(log).values())}")
        noop, log = snakemake(wd, "--config", cfg)
        print(f"no-op re-run:          {noop:7.1f} s  jobs {sum(jobs_run(log).values())}  (target <= 10 s)")
        n = ten_new_records(wd / "results", "000-gemm-n4096-k4096")
        batch, log = snakemake(wd, "--config", cfg)
        print(f"after a {n}-record batch: {batch:7.1f} s  jobs {jobs_run(log)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
