"""The worth formula against hand-computed values."""

from datetime import datetime

import pytest

from optrace.publish.worth import COUNTERS, prior_score, rank, recency


def track(prior=None, **counters):
    return {"prior": prior or {}, "counters": {**{k: 0 for k in COUNTERS}, **counters}}


@pytest.mark.parametrize(
    "kind,prior,expected",
    [
        # ln(1+19.27)/ln(101) = 3.00915/4.61512 (the reference's fresh 19.27 % strategy: 0.652)
        ("strategy", {"step_gain_pct": 19.27}, 0.6520),
        ("strategy", {}, 0.30),  # nothing known
        # (1.5*ln(11)/ln(101) + 1.0*(0.6-0.1)/0.7) / 2.5 = (0.77937 + 0.71429) / 2.5
        ("strategy", {"step_gain_pct": 10.0, "corpus_kept_ratio": 0.6}, 0.5975),
        ("strategy", {"step_gain_pct": 10.0, "n_independent_runs": 1}, 0.5196),  # one run is dropped
        # (1.5*0.51958 + 0.5*ln(2)/ln(4)) / 2.0 = (0.77937 + 0.25) / 2
        ("strategy", {"step_gain_pct": 10.0, "n_independent_runs": 2}, 0.5147),
        ("anti-strategy", {}, 0.45),
        # 0.45 + 0.30*log10(3) + 0.25*(1 - (0.5-0.1)/0.7) = 0.45 + 0.14314 + 0.10714
        ("anti-strategy", {"rediscovered": 3, "corpus_kept_ratio": 0.5}, 0.7003),
        ("reference-kernel", {}, 0.45),
        # 0.45 + 0.15*ln(2.574)/ln(300) = 0.45 + 0.15*0.94545/5.70378
        ("reference-kernel", {"best_speedup_x": 2.574}, 0.4749),
        ("doc", {}, 0.40),
    ],
)
def test_prior_and_fresh_score(kind, prior, expected):
    assert prior_score(kind, prior) == pytest.approx(expected, abs=5e-5)
    r = rank(kind, "measured", track(prior))
    assert r.score == pytest.approx(expected, abs=5e-5)


def test_feedback_term_hand_computed():
    # prior 0.51958; good 6 bad 2: posterior 7/10, ref 0.5, room 0.5 -> signed 0.4, confidence 1
    r = rank("strategy", "measured", track({"step_gain_pct": 10.0}, verified_effective=6, verified_ineffective=2))
    assert r.score == pytest.approx(0.51958 + 0.35 * 0.4, abs=5e-5)
    assert r.tier == "promising" and r.components["feedback_signed"] == 0.4


def test_usage_and_recency():
    # served 49 times: 0.05 * ln(50)/ln(50); last used 180 days ago: 0.5 + 0.5 * 0.25
    now = datetime(2026, 11, 30)
    r = rank("anti-strategy", "measured", track(served_count=49, last_used_ts="2026-06-03T00:00:00"), now=now)
    assert recency("2026-06-03T00:00:00", now) == pytest.approx(0.625)
    assert r.score == pytest.approx((0.45 + 0.05) * 0.625, abs=5e-5)


@pytest.mark.parametrize(
    "kind,basis,counters,tier",
    [
        ("anti-strategy", "measured", {}, "cautionary"),
        ("strategy", "measured", {}, "promising"),
        ("strategy", "qualitative", {}, "provisional"),
        ("strategy", "measured", {"verified_effective": 8}, "proven"),
        ("strategy", "measured", {"verified_ineffective": 8}, "cautionary"),
        ("reference-kernel", "reported", {}, "provisional"),
    ],
)
def test_tiers(kind, basis, counters, tier):
    assert rank(kind, basis, track({"step_gain_pct": 5.0}, **counters)).tier == tier
