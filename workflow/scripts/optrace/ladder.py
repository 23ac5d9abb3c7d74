"""The best-so-far ratchet over a trace's versions.

Every version gets an outcome and a reason. Only versions that survive every rejection rule can move
the floor; a version whose own subject says it changed nothing (NO_CHANGE, within noise, ...) may take
the floor but never claims a gain; a jump beyond the re-baseline factor either way is the harness
changing, not the kernel. "Final" is the surviving version that holds the floor at the end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

OUTCOMES = ("baseline", "milestone", "mega", "floor", "flat", "rebaseline", "rejected")
CLAIMS = ("milestone", "mega")


@dataclass(frozen=True)
class Thresholds:
    milestone_pct: float = 1.5
    mega_pct: float = 20.0
    rebaseline_factor: float = 5.0

    @staticmethod
    def add_arguments(parser) -> None:
        """The ladder's thresholds as options, for every stage that runs the ladder."""
        parser.add_argument("--milestone-pct", type=float, default=Thresholds.milestone_pct,
                            help="a version must beat the floor by this %% to claim a milestone")
        parser.add_argument("--mega-pct", type=float, default=Thresholds.mega_pct,
                            help="... and by this %% to be a mega milestone")
        parser.add_argument("--rebaseline-factor", type=float, default=Thresholds.rebaseline_factor,
                            help="a jump beyond this factor is the harness changing, not the kernel")

    @classmethod
    def from_args(cls, args) -> "Thresholds":
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

    def to_row(self) -> dict:
        return asdict(self)


def rejection(row: dict) -> str | None:
    """Why a version can never move the floor, or None. Order: most fundamental first."""
    if row["verdict"] == "reverted":
        return "infrastructure failure" if row["infrastructure"] else f"reverted ({row['verdict_basis']})"
    if row["verdict"] == "none":
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


def run_ladder(rows: list[dict], t: Thresholds = Thresholds()) -> list[Step]:
    steps: list[Step] = []
    best: float | None = None
    holder: int | None = None  # index in steps of the surviving version that holds the floor
    for row in sorted(rows, key=lambda r: r["n"]):
        geo = row["geomean_us"]
        reject = rejection(row)
        if reject:
            steps.append(Step(row["version"], row["n"], "rejected", reject, geo, None, best))
            continue
        if best is None:
            steps.append(Step(row["version"], row["n"], "baseline", "first surviving version", geo, None, None))
            best, holder = geo, len(steps) - 1
            continue
        improve = round((best - geo) / best * 100.0, 2)
        if geo > best * t.rebaseline_factor:
            steps.append(Step(row["version"], row["n"], "rebaseline",
                              f"{geo / best:.1f}x slower than the floor: the harness changed, not the kernel",
                              geo, improve, best))
            continue
        if geo * t.rebaseline_factor < best:
            steps.append(Step(row["version"], row["n"], "rebaseline",
                              f"{best / geo:.1f}x faster than the floor: treated as a harness change; the floor moves, no claim",
                              geo, improve, best))
            best, holder = geo, len(steps) - 1
            continue
        if improve >= t.milestone_pct and not row["no_change"]:
            kind = "mega" if improve >= t.mega_pct else "milestone"
            steps.append(Step(row["version"], row["n"], kind, f"{improve:.2f}% faster than the floor", geo, improve, best))
            best, holder = geo, len(steps) - 1
        elif improve > 0:
            why = ("its subject says it changed nothing" if row["no_change"]
                   else f"under the {t.milestone_pct}% milestone threshold")
            steps.append(Step(row["version"], row["n"], "floor", f"took the floor by {improve:.2f}% without a claim: {why}",
                              geo, improve, best))
            best, holder = geo, len(steps) - 1
        else:
            steps.append(Step(row["version"], row["n"], "flat", f"no improvement over the floor ({improve:.2f}%)", geo, improve, best))
    if holder is not None:
        steps[holder] = Step(**{**asdict(steps[holder]), "final": True})
    return steps
