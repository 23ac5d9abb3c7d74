"""Workflow-level benchmark: sheets of many traces through real Snakemake.

For each sheet size: planning (`snakemake -n`), and, up to `--full-max` traces, the first full run,
the no-op re-run and the re-run after a 10-record agent batch lands in one trace's distilled/ directory
(only that trace's validate, then stage and readme, may run). The controller's peak memory is its own
high-water mark (VmHWM, read from /proc while it runs), not that of the jobs it starts.

`--compare CHECKOUT` runs every measurement on a copy of another checkout too (e.g. a `git worktree`
of an older main), alternating the two on the same sheet, each with its own package on PYTHONPATH.
Each `--compare-config` is one variant of the other checkout's runs with that config added (repeat it:
`--compare-config --compare-config job_server=false` measures the old main with and without its job
server).

`--dataset-only` instead runs the `dataset` target alone on each sheet (ingest, the build, which reads
every trace's kernel sources, the split) and prints each dataset job's time and peak memory (from the
rules' `benchmark:` files), then `optrace.dataset.load` over the result.

    python benchmarks/bench_workflow.py [--traces 100 400 1000] [--versions 30] [--full-max 400] [--dataset-only]
    python benchmarks/bench_workflow.py --traces 100 --compare /tmp/old-main --repeat 2 \
        --compare-config --compare-config job_server=false

Targets (2 cores): full run of 100 traces <= 40 s, no-op <= 2 s, 10-record batch <= 3 s,
`snakemake -n` on 1000 traces <= 15 s with the controller <= 500 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from synthetic import synthetic_trace

ROOT = Path(__file__).resolve().parents[1]
# Jobs may write bytecode caches, as an installed copy does (this sandbox sets PYTHONDONTWRITEBYTECODE,
# which would make every job recompile the package).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> float | None:
    """The process's own user+sys CPU seconds so far (/proc/<pid>/stat utime, stime), not its children's."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CPU: dict[str, float] = {}  # of the last snakemake run: controller (its own) and jobs (all its children)


def package_path(wd: Path) -> Path:
    """Where a copy of a checkout keeps the package (workflow/scripts since the layout of #27, src before)."""
    return next(p for p in (wd / "workflow" / "scripts", wd / "src") if (p / "optrace").is_dir())


def snakemake(wd: Path, *args: str) -> tuple[float, float, str]:
    """Wall seconds, controller peak MB and the log of one snakemake run; its CPU seconds go to CPU."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "-c2", *args],
        cwd=wd,
        env={**ENV, "PYTHONPATH": str(package_path(wd))},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    peak, own = [0.0], [0.0]

    def watch() -> None:  # until the controller is reaped: /proc/<pid> of a zombie still answers
        while proc.returncode is None:
            peak[0] = max(peak[0], _vm_hwm_mb(proc.pid) or 0.0)
            own[0] = max(own[0], _cpu_s(proc.pid) or 0.0)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    log = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{log[-3000:]}")
    total = usage.ru_utime + usage.ru_stime  # the controller and every job it waited for
    CPU.update(controller=own[0], jobs=max(total - own[0], 0.0))
    return time.perf_counter() - t0, peak[0], log


def cpu_note() -> str:
    return f"  CPU: controller {CPU['controller']:6.1f} s, jobs {CPU['jobs']:6.1f} s"


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


def build_sheet(tmp: Path, n_traces: int, n_versions: int) -> Path:
    rows = ["label\tpath"]
    for i in range(n_traces):
        name = f"kernel_opt_{i:04d}_gemm_n4096_k4096"
        path = tmp / "traces" / name
        if not path.exists():
            synthetic_trace(path, n_versions, seed=i)
        rows.append(f"{name}\t{path}")
    sheet = tmp / f"traces-{n_traces}.tsv"
    sheet.write_text("\n".join(rows) + "\n")
    return sheet


def fresh_workflow(dest: Path, source: Path = ROOT) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        source,
        dest,
        ignore=shutil.ignore_patterns(".git", ".snakemake", "results", ".venv", "__pycache__", "tests", "benchmarks"),
    )
    return dest


def benchmark_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for p in paths:
        header, values = p.read_text().splitlines()[:2]
        rows.append(dict(zip(header.split("\t"), values.split("\t"))))
    return rows


def dataset_only(wd: Path, cfg: str) -> None:
    total, peak, log = snakemake(wd, "dataset", "--config", cfg)
    print(f"  dataset target:         {total:7.1f} s  controller peak {peak:6.0f} MB  jobs {jobs_run(log)}")
    bench = wd / "results" / "benchmarks" / "dataset"
    for name in ("build", "split"):
        (row,) = benchmark_rows([bench / f"{name}.tsv"])
        print(f"    {name:19s}: {float(row['s']):7.2f} s  peak RSS {float(row['max_rss']):.0f} MB")
    code = (
        "import resource, time, sys; t=time.perf_counter(); from optrace.dataset import load; "
        f"f=load({str(wd / 'results' / 'dataset')!r}); "
        "print(f'{time.perf_counter()-t:.2f} {len(f)} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f}')"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(wd / "workflow" / "scripts")},
    )
    if res.returncode != 0:
        raise SystemExit(f"load() failed:\n{res.stderr[-3000:]}")
    secs, rows, rss = res.stdout.split()
    print(f"    load():               {float(secs):7.2f} s  {rows} samples, peak RSS {rss} MB")
    sizes = {p.name: p.stat().st_size for p in sorted((wd / "results" / "dataset").glob("*.parquet"))}
    print("    files: " + ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items()))


def measure(wd: Path, cfg: list[str], n: int, full_max: int, label: str) -> None:
    """Plan, first full run, no-op and a 10-record batch on a fresh copy `wd`, one line each."""
    plan, peak, _ = snakemake(wd, "-n", "--config", *cfg)
    print(f"  {label:21s} plan (-n):              {plan:7.1f} s  controller peak {peak:6.0f} MB{cpu_note()}")
    if n > full_max:
        return
    full, peak, log = snakemake(wd, "--config", *cfg)
    print(
        f"  {label:21s} full run:               {full:7.1f} s  controller peak {peak:6.0f} MB  jobs {sum(jobs_run(log).values())}"
        f"{cpu_note()}"
    )
    noop, peak, log = snakemake(wd, "--config", *cfg)
    print(
        f"  {label:21s} no-op re-run:           {noop:7.1f} s  controller peak {peak:6.0f} MB  jobs {jobs_run(log)}"
        f"{cpu_note()}"
    )
    k = ten_new_records(wd / "results", "0000-gemm-n4096-k4096")
    batch, peak, log = snakemake(wd, "--config", *cfg)
    print(
        f"  {label:21s} after a {k}-record batch: {batch:7.1f} s  controller peak {peak:6.0f} MB  jobs {jobs_run(log)}"
        f"{cpu_note()}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, nargs="+", default=[100, 400, 1000])
    ap.add_argument("--versions", type=int, default=30)
    ap.add_argument("--full-max", type=int, default=400, help="run the full workflow only on sheets up to this size")
    ap.add_argument("--dataset-only", action="store_true", help="only the dataset target, with per-job time and memory")
    ap.add_argument("--compare", type=Path, help="another checkout, measured alternately on the same sheets")
    ap.add_argument(
        "--compare-config",
        nargs="*",
        action="append",
        help="a variant of the other checkout's runs: extra --config values (repeat for several variants)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="measure each checkout this many times, alternating")
    args = ap.parse_args()
    print(
        f"{platform.node()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="optrace-wf-bench-") as tmp:
        tmp = Path(tmp)
        for n in args.traces:
            t0 = time.perf_counter()
            sheet = build_sheet(tmp, n, args.versions)
            print(f"\n{n} traces of {args.versions} versions built in {time.perf_counter() - t0:.1f} s")
            cfg = [f"traces={sheet}"]
            if args.dataset_only:
                dataset_only(fresh_workflow(tmp / "wf"), cfg[0])
                continue
            for _ in range(args.repeat):
                measure(fresh_workflow(tmp / "wf"), cfg, n, args.full_max, "new")
                for extra in (args.compare_config or [[]]) if args.compare else []:
                    old = fresh_workflow(tmp / "old", args.compare.resolve())
                    measure(old, cfg + extra, n, args.full_max, "old" + (f" {' '.join(extra)}" if extra else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
