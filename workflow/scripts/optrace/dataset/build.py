"""`optrace dataset`: build, split and CSV copies of the lean cost-model dataset (README "What it produces").

`build` reads every trace's ingest outputs and the kernel sources its samples measured, and writes
measurements, autotune, runs and kernels (.parquet, `optrace.dataset.tables`) and README.md
(`optrace.dataset.readme`); `split` writes split.parquet (`optrace.dataset.split`); `csv` a CSV copy
beside each parquet file. The reading API is `optrace.dataset.load` (`optrace.dataset.loader`).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import asdict
from pathlib import Path

from optrace import DEFAULT_TARGETS
from optrace.dataset.columns import BUILT, FILES
from optrace.dataset.files import export_csv, file_metadata, read_trace, write_parquet
from optrace.dataset.readme import render_readme
from optrace.dataset.split import DEFAULT_TEST_FRACTION, report_lines, write_split
from optrace.dataset.tables import Dataset, build
from optrace.errors import InputError
from optrace.jsonio import write_text_atomic
from optrace.mine.ladder import Thresholds
from optrace.printable import escape_controls
from optrace.scrub.leak_patterns import add_denylist_argument


def build_config(thresholds: Thresholds, targets: Path | None) -> dict:
    """The settings a built table depends on, as its file metadata records them (never the denylist:
    even a digest of it would let a guessed private term be confirmed offline)."""
    table = targets or DEFAULT_TARGETS
    return {"ladder": asdict(thresholds), "targets_sha256": hashlib.sha256(Path(table).read_bytes()).hexdigest()}


def write_dataset(ds: Dataset, out_dir: Path, thresholds: Thresholds, config: dict | None = None) -> None:
    config = config if config is not None else {"ladder": asdict(thresholds)}
    for name in BUILT:
        write_parquet(out_dir / FILES[name], ds.tables[name], ds.columns(name), file_metadata(name, config))
    write_text_atomic(out_dir / "README.md", escape_controls(render_readme(ds, thresholds), keep_layout=True))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace dataset", description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="measurements, autotune, runs, kernels (.parquet) and README.md")
    b.add_argument("work_dirs", nargs="*", type=Path, help="ingest output directories (work/<slug>)")
    b.add_argument(
        "--traces",
        nargs="*",
        default=[],
        help="the traces (work tree or .bundle), one per work dir, "
        "in the same order: their kernel sources are read from them",
    )
    b.add_argument("--out-dir", required=True, type=Path, help="the dataset directory to write")
    b.add_argument("--targets", type=Path, help="hardware table (default: the built-in one)")
    add_denylist_argument(b)
    Thresholds.add_arguments(b)
    sp = sub.add_parser("split", help="split.parquet: train/test by group")
    sp.add_argument(
        "dataset_dir",
        type=Path,
        nargs="?",
        default=Path("results/dataset"),
        help="the built dataset (default: results/dataset)",
    )
    sp.add_argument(
        "--test-fraction",
        type=float,
        default=DEFAULT_TEST_FRACTION,
        help=f"fraction of the samples in test, whole groups (default {DEFAULT_TEST_FRACTION})",
    )
    cp = sub.add_parser("csv", help="a .csv copy next to each parquet file")
    cp.add_argument("parquet", nargs="+", type=Path, help="parquet files of the dataset")
    args = ap.parse_args(argv)
    if args.command == "csv":
        for path in args.parquet:
            if not path.is_file():
                raise InputError(path, "file not found")
            print(f"dataset: wrote {export_csv(path)}")
        return 0
    if args.command == "split":
        report = write_split(args.dataset_dir, args.test_fraction)
        print(f"dataset split: test fraction {args.test_fraction} of the samples, groups kept whole")
        print("\n".join(report_lines(report)))
        return 0
    from optrace.scrub.anonymize import Scrubber

    scrubber = Scrubber.from_env(args.denylist_env)
    if len(args.traces) != len(args.work_dirs):
        raise InputError(
            "dataset build",
            f"{len(args.work_dirs)} work dir(s) but {len(args.traces)} trace(s) "
            "given; --traces names one trace per work dir",
        )
    from optrace.ingest.hardware import HardwareTable

    table = HardwareTable.load(args.targets)
    thresholds = Thresholds.from_args(args)
    inputs, left_out = [], []
    for work_dir, trace in zip(args.work_dirs, args.traces):
        try:
            found = read_trace(work_dir, trace, scrubber, args.out_dir)
        except InputError as exc:  # one unreadable trace must not cost every other trace its dataset
            left_out.append(f"{work_dir.name}: left out: {exc.where}: {exc.problem}")
            continue
        if found is not None:
            inputs.append(found)
    ds = build(inputs, thresholds, scrubber, table)
    write_dataset(ds, args.out_dir, thresholds, build_config(thresholds, args.targets))
    excluded = sum(sum(s.excluded.values()) for s in ds.summaries.values())
    print(
        f"dataset: {len(ds.summaries)} trace(s): {len(ds.tables['measurements'])} measurements "
        f"({excluded} versions excluded), {len(ds.tables['autotune'])} autotune rows, {len(ds.tables['runs'])} runs, "
        f"{len(ds.tables['kernels'])} kernels, {len(ds.conflicts)} context conflict(s)"
    )
    for c in [*left_out, *ds.conflicts]:
        print(f"  warning: {c}")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
