"""The best-so-far ratchet over a trace's versions.

Every version gets an outcome and a reason. Only versions that survive every rejection rule can move
the floor; a version whose own subject says it changed nothing (NO_CHANGE, within noise, ...) may take
the floor but never claims a gain. A version is a harness re-baseline only when the evidence says so:
the reference re-measured in the same run (`speedup_vs_ref_geomean`) moved with the latency, the
commit changed harness/workload/definition files, or the run's own text says so. It moves the floor
without a claim. A version whose kernel did not change (ingest's verdict "none") is let through only on
harness evidence (files or text): a declared re-baseline of the unchanged kernel sets the floor the next
step is measured against instead of being skipped. A jump beyond the re-baseline factor with none of
these is a claim like any other
(naive -> coalesced SGEMM, PyTorch wrapper -> fused kernel are real 6x steps), flagged for review.
A jump of about 10^3 (a factor within UNIT_TOLERANCE of 1000 either way) with no harness evidence
(files, text) is a unit slip: latencies written in ns or ms instead of µs. The reference's implied
latency moves by the same factor, so it is no evidence of a harness change here; a reference that
stayed put (the speedup moved a thousandfold with the latency) says the change is real. The version is
rejected and the floor stays, so the next real win is measured against the floor it beat.
"Final" is the surviving version that holds the floor at the end.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass

from optrace.rows import VersionRow

CLAIMS = ("milestone", "mega")
ANCHORS = ("baseline", "rebaseline") + CLAIMS  # what a later claim is measured against and builds on
# The implied reference latency (geomean x speedup) moving by this factor means the harness changed.
REFERENCE_MOVE = 1.25
# A unit slip: the latency moved by about this factor (µs written as ns, or as ms) ...
UNIT_FACTOR = 1000.0
UNIT_TOLERANCE = 2.0  # ... within this factor of it (x939 is a slip; a 6x or 100x step is not)
HARNESS_FILE_RE = re.compile(
    r"^(?:definition\.json|workload\.jsonl|harness/.+|bench(?:mark)?s?/.+|[^/]*bench[^/]*\.(?:py|cu|sh)|test_kernel\.py)$"
)
REBASELINE_TEXT_RE = re.compile(
    r"\bre-?baselin\w*|\bharness (?:changed|change|update[sd]?)\b|\b(?:new|changed) (?:benchmark|harness|workload set)\b"
    r"|\b(?:benchmark|problem|matrix) size changed\b|\bswitch(?:ed|es)? (?:the )?(?:benchmark|harness|workloads?)\b",
    re.I,
)


def harness_file(path: str) -> bool:
    """A file whose change alters what is measured, not the kernel under test."""
    return bool(HARNESS_FILE_RE.match(path))


@dataclass(frozen=True)
class Thresholds:
    milestone_pct: float = 1.5
    mega_pct: float = 20.0
    rebaseline_factor: float = 5.0

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The ladder's thresholds as options, for every stage that runs the ladder."""
        parser.add_argument(
            "--milestone-pct",
            type=float,
            default=Thresholds.milestone_pct,
            help="a version must beat the floor by this %% to claim a milestone",
        )
        parser.add_argument(
            "--mega-pct", type=float, default=Thresholds.mega_pct, help="... and by this %% to be a mega milestone"
        )
        parser.add_argument(
            "--rebaseline-factor",
            type=float,
            default=Thresholds.rebaseline_factor,
            help="a jump beyond this factor is the harness changing, not the kernel",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Thresholds:
        return cls(args.milestone_pct, args.mega_pct, args.rebaseline_factor)


@dataclass(frozen=True)
class Step:
    version: str
    n: int
    outcome: str
    reason: str
    geomean_us: float | None
    improve_pct: float | None  # against the floor before this version; None when not compared
    floor_before_us: float | None
    final: bool = False
    review: str | None = None  # a claim a person should look at (a jump beyond the re-baseline factor)

    def to_row(self) -> dict:
        return asdict(self)


def rejection(row: VersionRow) -> str | None:
    """Why a version can never move the floor, or None. Order: most fundamental first."""
    if row["verdict"] == "reverted":
        return "infrastructure failure" if row["infrastructure"] else f"reverted ({row['verdict_basis']})"
    if row["verdict"] == "none" and not harness_evidence(row):
        # An unchanged kernel re-measured under a declared harness change is the re-baseline itself:
        # run_ladder reads it as one (the evidence that lets it through is rebaseline evidence), never a claim.
        return f"not a kept change ({row['verdict_basis']})"
    if row["infrastructure"]:
        return "infrastructure failure"
    status = (row["correctness"] or {}).get("status")
    if status is not None and status != "PASS":
        return f"incorrect (correctness {status})"
    if ((row["quality_gate"] or {}).get("result") or "").upper() in ("FAIL", "TIMEOUT_FAIL"):
        return "quality gate failed"
    if row["geomean_us"] is None:
        return f"no genuine number ({row['number_note']})"
    return None


def harness_evidence(row: VersionRow) -> str | None:
    """What says this version's commit changed what is measured: harness files, or the run's own words."""
    if row.get("harness_files"):
        return f"its commit changed the harness ({', '.join(row['harness_files'][:3])})"
    text = " ".join(x for x in (row.get("subject"), row.get("body")) if x)
    if m := REBASELINE_TEXT_RE.search(text):
        return f"the run says so ({m.group(0)!r})"
    return None


def rebaseline_evidence(row: VersionRow, floor_row: VersionRow) -> str | None:
    """Why this version's numbers are not comparable with the floor's, or None."""
    geo, floor = row["geomean_us"], floor_row["geomean_us"]
    assert geo is not None and floor is not None  # asked of measured versions only (run_ladder)
    mine, theirs = row.get("speedup_vs_ref"), floor_row.get("speedup_vs_ref")
    if mine and theirs:
        moved = (geo * mine) / (floor * theirs)  # the reference's own latency, now over then
        same_way = (moved > 1) == (geo > floor)
        if max(moved, 1 / moved) >= REFERENCE_MOVE and same_way:
            return f"the reference re-measured in the same run moved {_times(moved)} with the latency"
    return harness_evidence(row)


def unit_slip(row: VersionRow, floor_row: VersionRow) -> str | None:
    """Why this version's latencies are in the wrong unit, or None: a jump of about 10^3 that nothing of
    the harness explains."""
    geo, floor = row["geomean_us"], floor_row["geomean_us"]
    assert geo is not None and floor is not None
    ratio = geo / floor
    jump = max(ratio, 1 / ratio)
    if not UNIT_FACTOR / UNIT_TOLERANCE <= jump <= UNIT_FACTOR * UNIT_TOLERANCE or harness_evidence(row):
        return None
    mine, theirs = row.get("speedup_vs_ref"), floor_row.get("speedup_vs_ref")
    if mine and theirs and max(moved := (geo * mine) / (floor * theirs), 1 / moved) < REFERENCE_MOVE:
        return None  # the speedup moved with the latency: a real thousandfold change, in the right unit
    unit, where = ("ns", "above") if ratio > 1 else ("ms", "below")
    return (
        f"unit slip: latencies {jump:.0f}x {where} the floor's with no harness change (written in {unit}, "
        "not µs); the floor stays"
    )


def _times(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio >= 1 else f"{1 / ratio:.1f}x down"


def run_ladder(rows: list[VersionRow], t: Thresholds = Thresholds()) -> list[Step]:
    steps: list[Step] = []
    best: float | None = None
    best_row: VersionRow | None = None  # the row that set the floor (its speedup is the reference's yardstick)
    holder: int | None = None  # index in steps of the surviving version that holds the floor
    for row in sorted(rows, key=lambda r: r["n"]):
        geo = row["geomean_us"]
        reject = rejection(row)
        if reject:
            steps.append(Step(row["version"], row["n"], "rejected", reject, geo, None, best))
            continue
        if best is None:
            steps.append(Step(row["version"], row["n"], "baseline", "first surviving version", geo, None, None))
            best, best_row, holder = geo, row, len(steps) - 1
            continue
        assert geo is not None and best_row is not None  # rejection() refuses a version without a number
        if slip := unit_slip(row, best_row):
            steps.append(Step(row["version"], row["n"], "rejected", slip, geo, None, best))
            continue
        improve = round((best - geo) / best * 100.0, 2)
        evidence = rebaseline_evidence(row, best_row)
        if evidence:
            ratio = geo / best
            steps.append(
                Step(
                    row["version"],
                    row["n"],
                    "rebaseline",
                    f"harness re-baseline ({f'{ratio:.1f}x slower' if ratio >= 1 else f'{1 / ratio:.1f}x faster'}): "
                    f"{evidence}; the floor moves, no claim",
                    geo,
                    improve,
                    best,
                )
            )
            best, best_row, holder = geo, row, len(steps) - 1
            continue
        review = None
        if geo * t.rebaseline_factor < best or geo > best * t.rebaseline_factor:
            review = (
                f"{best / geo:.1f}x faster" if geo < best else f"{geo / best:.1f}x slower"
            ) + " than the floor with no re-baseline evidence (reference, harness files, text): review"
        if improve >= t.milestone_pct and not row["no_change"]:
            kind = "mega" if improve >= t.mega_pct else "milestone"
            steps.append(
                Step(
                    row["version"],
                    row["n"],
                    kind,
                    f"{improve:.2f}% faster than the floor",
                    geo,
                    improve,
                    best,
                    review=review,
                )
            )
            best, best_row, holder = geo, row, len(steps) - 1
        elif improve > 0:
            why = (
                "its subject says it changed nothing"
                if row["no_change"]
                else f"under the {t.milestone_pct}% milestone threshold"
            )
            steps.append(
                Step(
                    row["version"],
                    row["n"],
                    "floor",
                    f"took the floor by {improve:.2f}% without a claim: {why}",
                    geo,
                    improve,
                    best,
                    review=review,
                )
            )
            best, best_row, holder = geo, row, len(steps) - 1
        else:
            steps.append(
                Step(
                    row["version"],
                    row["n"],
                    "flat",
                    f"no improvement over the floor ({improve:.2f}%)"
                    if improve > -100
                    else f"no improvement over the floor ({geo / best:.4g}x slower)",
                    geo,
                    improve,
                    best,
                    review=review,
                )
            )
    if holder is not None:
        steps[holder] = Step(**{**asdict(steps[holder]), "final": True})
    return steps
