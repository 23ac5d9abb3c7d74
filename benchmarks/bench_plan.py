"""Planning many traces (#30 item 4): `snakemake -n -q` on synthetic sheets of 1000 to 10 000 traces.

A sheet of N rows names `--distinct` synthetic traces (small git repos, `--versions` each) under N
distinct labels, so every row is its own trace to Snakemake (its own slug, jobs and fingerprint) while
building the sheet stays cheap. Nothing has run yet, so the plan is the first run's: every job of every
trace. Each measurement is a fresh `python -m snakemake -n -q` in a fresh copy of the checkout; it
reports wall seconds, the controller's CPU seconds (user+sys, from wait4) and its peak memory (VmHWM,
read from /proc while it runs), and the 1-minute load average before and after (the machine may be
shared: compare CPU seconds, and alternate the trees being compared).

`--compare CHECKOUT` measures another checkout (an exported older main) on the same sheets, alternating
new and old `--repeat` times. `--profile DIR` also writes a cProfile of one planning run per size and
tree (DIR/plan-<tree>-<N>.prof; profiled runs are slower and are not the figures).

    python benchmarks/bench_plan.py [--traces 1000 3000 10000] [--repeat 2] [--compare /tmp/plan-old]

Target (issue #30): 10 000 traces planned in <= 60 s with the controller <= 1.5 GB.
"""

from __future__ import annotations

import argparse
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
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def vm_hwm_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def load1() -> float:
    return os.getloadavg()[0]


def build_sheet(tmp: Path, n_traces: int, distinct: int, n_versions: int) -> Path:
    traces = []
    for i in range(distinct):
        path = tmp / "traces" / f"kernel_opt_{i:04d}_gemm_n4096_k4096"
        if not path.exists():
            synthetic_trace(path, n_versions, seed=i)
        traces.append(path)
    rows = ["label\tpath"] + [f"kernel_opt_{i:05d}_gemm\t{traces[i % distinct]}" for i in range(n_traces)]
    sheet = tmp / f"traces-{n_traces}.tsv"
    sheet.write_text("\n".join(rows) + "\n")
    return sheet


def package_path(wd: Path) -> Path:
    return next(p for p in (wd / "workflow" / "scripts", wd / "src") if (p / "optrace").is_dir())


def fresh_copy(source: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        source,
        dest,
        ignore=shutil.ignore_patterns(".git", ".snakemake", "results", ".venv", "__pycache__", "tests", "benchmarks"),
    )
    return dest


def measured(cmd: list[str], cwd: Path, env: dict, timeout: float | None = None) -> tuple[str, int, dict]:
    """Run `cmd` and measure it: (its output, exit status, {wall, cpu, peak, load, stopped}). CPU is
    user+sys from wait4 (the process and every child it waited for), peak its VmHWM read from /proc
    while it runs, load the 1-minute average before and after; a run past `timeout` s is stopped."""
    before, t0 = load1(), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0.0]

    def watch() -> None:
        while proc.returncode is None:
            peak[0] = max(peak[0], vm_hwm_mb(proc.pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    timer = threading.Timer(timeout, proc.kill) if timeout else None
    if timer:
        timer.start()
    log = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    watcher.join()
    if timer:
        timer.cancel()
    stopped = bool(timeout and wall >= timeout)
    figures = dict(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak=peak[0] if stopped else max(peak[0], usage.ru_maxrss / 1024),
        load=(before, load1()),
        stopped=stopped,
    )
    return log, proc.returncode, figures


def plan(wd: Path, sheet: Path, profile: Path | None = None, timeout: float | None = None) -> dict:
    """One planning run in `wd`: wall s, controller CPU s, peak MB, load before/after (a run past
    `timeout` seconds is stopped, and says so)."""
    pre = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m"] if profile else [sys.executable, "-m"]
    cmd = [*pre, "snakemake", "-c2", "-n", "-q", "--config", f"traces={sheet}"]
    log, rc, figures = measured(cmd, wd, {**ENV, "PYTHONPATH": str(package_path(wd))}, timeout)
    if rc != 0 and not figures["stopped"]:
        raise SystemExit(f"snakemake -n failed in {wd}:\n{log[-3000:]}")
    return figures


def line(tree: str, n: int, r: dict) -> str:
    stopped = "  STOPPED at the timeout (not done)" if r.get("stopped") else ""
    return (
        f"  {tree:4s} {n:6d} traces: wall {r['wall']:6.1f} s  CPU {r['cpu']:6.1f} s  peak {r['peak']:6.0f} MB  "
        f"load {r['load'][0]:.2f} -> {r['load'][1]:.2f}{stopped}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, nargs="+", default=[1000, 3000, 10000])
    ap.add_argument("--distinct", type=int, default=50, help="distinct synthetic traces the sheet's rows name")
    ap.add_argument("--versions", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--compare", type=Path, help="another checkout, measured alternately on the same sheets")
    ap.add_argument("--profile", type=Path, help="also write one cProfile per size and tree here")
    ap.add_argument("--timeout", type=float, help="stop a planning run after this many seconds (reported)")
    ap.add_argument("--tmp", type=Path, help="keep sheets and traces here (reused across runs)")
    args = ap.parse_args()
    print(
        f"{platform.node()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M %Z')}, "
        f"python {platform.python_version()}; target: 10 000 traces <= 60 s, <= 1500 MB"
    )
    with tempfile.TemporaryDirectory(prefix="optrace-plan-bench-") as scratch:
        tmp = args.tmp or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        trees = {"new": ROOT} | ({"old": args.compare.resolve()} if args.compare else {})
        for n in args.traces:
            sheet = build_sheet(tmp, n, args.distinct, args.versions)
            print(f"\n{n} traces ({args.distinct} distinct, {args.versions} versions)", flush=True)
            for _ in range(args.repeat):
                for tree, source in trees.items():
                    r = plan(fresh_copy(source, Path(scratch) / f"wf-{tree}"), sheet, timeout=args.timeout)
                    print(line(tree, n, r), flush=True)
            if args.profile:
                args.profile.mkdir(parents=True, exist_ok=True)
                for tree, source in trees.items():
                    out = args.profile.resolve() / f"plan-{tree}-{n}.prof"
                    plan(fresh_copy(source, Path(scratch) / f"wf-{tree}"), sheet, profile=out)
                    print(f"  {tree} profile: {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
