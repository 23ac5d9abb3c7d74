"""The train/test split: by group (operator family x GPU), so no group is on both sides, sized by samples.

Rows of one family on one GPU are highly correlated, so whole groups go to one side. The fraction is of
*samples*, not of groups: one group can hold most of the samples, and a split that counted groups
would then put 45 % of the samples in a "20 %" test set.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from optrace.dataset.columns import FILES, SAMPLE_TABLES, TABLES
from optrace.dataset.files import file_metadata, write_parquet
from optrace.errors import InputError

SPLIT_DOMAIN = "optrace.split.v2"
# The config schema's `dataset.test_fraction` default, for the command run by hand.
DEFAULT_TEST_FRACTION = 0.2


def group_order(groups: list[str]) -> list[str]:
    return sorted(groups, key=lambda g: hashlib.sha256(f"{SPLIT_DOMAIN}\x00{g}".encode()).hexdigest())


def split_groups(samples: dict[str, int], test_fraction: float) -> dict[str, str]:
    """Deterministic train/test by group. Groups are taken in the order of SHA-256 of
    `SPLIT_DOMAIN\0group`: first each that fits under the target share of the samples goes to test,
    then each that brings the share closer to `test_fraction`. Given two groups or more and a fraction
    above 0, at least one group is in test and one in train. Depends only on the groups, their sample
    counts and the fraction, never on row order."""
    if not 0 <= test_fraction < 1:
        raise InputError("--test-fraction", f"{test_fraction} is not in [0, 1)")
    ordered = group_order(list(samples))
    target = test_fraction * sum(samples.values())
    test: list[str] = []
    taken = 0
    if test_fraction > 0:
        for g in ordered:  # never past the target: a big group early in the order must not take it all
            if taken + samples[g] <= target:
                test.append(g)
                taken += samples[g]
        for g in ordered:
            if g not in test and abs(taken + samples[g] - target) < abs(taken - target):
                test.append(g)
                taken += samples[g]
    if len(ordered) >= 2 and test_fraction > 0:
        if not test:  # every group alone overshoots: the one closest to the target
            test = [min(ordered, key=lambda g: (abs(samples[g] - target), ordered.index(g)))]
        if len(test) == len(ordered):  # nothing left to train on: the smallest test group goes back
            test.remove(min(test, key=lambda g: (samples[g], ordered.index(g))))
    chosen = set(test)
    return {g: "test" if g in chosen else "train" for g in ordered}


def split_report(samples: dict[str, int], assignment: dict[str, str]) -> dict[str, dict]:
    """Per split: its groups, its samples and their share of all samples."""
    total = sum(samples.values()) or 1
    out = {}
    for side in ("train", "test"):
        groups = sorted(g for g, s in assignment.items() if s == side)
        n = sum(samples[g] for g in groups)
        out[side] = {"groups": len(groups), "samples": n, "share": round(n / total, 4), "group_names": groups}
    return out


def samples_by_group(dataset_dir: Path) -> dict[str, int]:
    """Samples (trace measurements and autotune rows) per group of `runs`."""
    import pyarrow.parquet as pq

    paths = {name: dataset_dir / FILES[name] for name in ("runs", *SAMPLE_TABLES)}
    for path in paths.values():
        if not path.is_file():
            raise InputError(path, "file not found (run `optrace dataset build` first)")
    runs = pq.read_table(paths["runs"], columns=["run_id", "group"]).to_pydict()
    group_of = dict(zip(runs["run_id"], map(str, runs["group"])))
    counts: Counter = Counter({g: 0 for g in group_of.values()})
    for name in SAMPLE_TABLES:
        for run_id in pq.read_table(paths[name], columns=["run_id"]).column("run_id").to_pylist():
            counts[group_of[run_id]] += 1
    return dict(counts)


def write_split(dataset_dir: Path, test_fraction: float) -> dict[str, dict]:
    """split.parquet (its report in the file's metadata); returns the report."""
    samples = samples_by_group(dataset_dir)
    assignment = split_groups(samples, test_fraction)
    report = split_report(samples, assignment)
    meta = {"optrace.test_fraction": str(test_fraction), "optrace.split_report": json.dumps(report, sort_keys=True)}
    write_parquet(
        dataset_dir / FILES["split"],
        [{"group": g, "split": s} for g, s in sorted(assignment.items())],
        TABLES["split"],
        file_metadata("split", {"test_fraction": test_fraction}, meta),
    )
    return report


def report_lines(report: dict[str, dict]) -> list[str]:
    return [
        f"  {side}: {r['groups']} group(s), {r['samples']} samples ({100 * r['share']:.1f} %)"
        + (f": {', '.join(r['group_names'])}" if side == "test" and r["group_names"] else "")
        for side, r in report.items()
    ]
