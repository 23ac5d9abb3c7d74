"""The best-so-far ratchet, pinned on a non-monotonic series."""

import pytest

from optrace.mine.ladder import Thresholds, rejection, run_ladder


def row(n, geo, verdict="kept", **kw):
    r = {
        "version": f"v{n}",
        "n": n,
        "verdict": verdict,
        "verdict_basis": "test",
        "infrastructure": False,
        "no_change": False,
        "correctness": {"status": "PASS"},
        "quality_gate": {"result": "PASS"},
        "geomean_us": geo,
        "number_note": None if geo else "no geomean recorded",
    }
    r.update(kw)
    return r


def table(rows, **kw):
    return {s.version: (s.outcome, s.final) for s in run_ladder(rows, Thresholds(**kw))}


# A real-looking non-monotonic series: quantised timings go up and down (cf. the FlashInfer-Bench run).
SERIES = [
    row(0, 100.0, "baseline"),
    row(1, 600.0),  # 6x slower with no re-baseline evidence: flat, flagged for review
    row(2, 97.0),  # +3.0%: milestone
    row(3, 97.5),  # slower: flat
    row(4, 96.0, no_change=True),  # faster but says NO_CHANGE: takes the floor, no claim
    row(5, 70.0),  # +27%: mega
    row(6, 60.0, "reverted"),  # reverted, faster than the floor: never a milestone or final
    row(7, 50.0, correctness={"status": "FAIL"}),  # incorrect and faster: rejected
    row(8, 55.0, quality_gate={"result": "FAIL"}),  # gate failed: rejected
    row(9, 58.0, infrastructure=True),  # infrastructure: rejected
    row(10, None),  # no genuine number
    row(11, 69.5),  # +0.7%: under the threshold, takes the floor
    row(12, 13.0, harness_files=["workload.jsonl"]),  # 5.3x faster, its commit changed the workloads: re-baseline
    row(13, 12.5),  # +3.8% against the new floor: milestone, final
    row(14, 12.4, "none"),  # kernel unchanged: rejected even though faster
]


def test_non_monotonic_series_is_pinned():
    assert table(SERIES) == {
        "v0": ("baseline", False),
        "v1": ("flat", False),
        "v2": ("milestone", False),
        "v3": ("flat", False),
        "v4": ("floor", False),
        "v5": ("mega", False),
        "v6": ("rejected", False),
        "v7": ("rejected", False),
        "v8": ("rejected", False),
        "v9": ("rejected", False),
        "v10": ("rejected", False),
        "v11": ("floor", False),
        "v12": ("rebaseline", False),
        "v13": ("milestone", True),
        "v14": ("rejected", False),
    }


def test_every_version_has_an_outcome_and_a_reason():
    steps = run_ladder(SERIES)
    assert len(steps) == len(SERIES) and all(s.reason for s in steps)
    by = {s.version: s for s in steps}
    assert by["v5"].improve_pct == pytest.approx(27.08, abs=0.01) and by["v5"].floor_before_us == 96.0
    assert (
        "6.0x slower" in by["v1"].review and "5.3x faster" in by["v12"].reason and "workload.jsonl" in by["v12"].reason
    )
    assert "changed nothing" in by["v4"].reason


def test_a_rejected_version_faster_than_the_floor_is_not_final():
    rows = [row(0, 100.0, "baseline"), row(1, 90.0), row(2, 40.0, correctness={"status": "TIMEOUT_FAIL"})]
    assert table(rows) == {"v0": ("baseline", False), "v1": ("milestone", True), "v2": ("rejected", False)}


def test_no_milestone_leaves_the_baseline_final():
    assert table([row(0, 100.0, "baseline"), row(1, 101.0)]) == {"v0": ("baseline", True), "v1": ("flat", False)}


def test_thresholds_come_from_config():
    rows = [row(0, 100.0, "baseline"), row(1, 97.0), row(2, 70.0)]
    assert table(rows, milestone_pct=5.0) == {"v0": ("baseline", False), "v1": ("floor", False), "v2": ("mega", True)}
    assert table(rows, mega_pct=50.0)["v2"] == ("milestone", True)
    assert run_ladder(rows, Thresholds(rebaseline_factor=1.2))[2].review  # beyond the factor: a claim to review


@pytest.mark.parametrize(
    "r,reason",
    [
        (row(1, 9.0, "reverted"), "reverted"),
        (row(1, 9.0, "reverted", infrastructure=True), "infrastructure failure"),
        (row(1, 9.0, "none"), "not a kept change"),
        (row(1, 9.0, correctness={"status": "FAIL"}), "incorrect"),
        (row(1, 9.0, quality_gate={"result": "FAIL"}), "quality gate failed"),
        (row(1, None, number_note="numbers carried forward from v0"), "no genuine number"),
        (row(1, 9.0, correctness={"status": None}), None),
    ],
)
def test_rejection_reasons(r, reason):
    got = rejection(r)
    assert (got is None) if reason is None else got.startswith(reason)


def test_blockedlayout_is_not_infrastructure(tmp_path):
    # through the real grammar: the infrastructure flag is set by whole words only
    from optrace.ingest.grammar import has_infra

    assert not has_infra("v11: committed (+3.1%) explicit BlockedLayout with 16-byte vector loads")
    rows = [row(0, 100.0, "baseline"), row(1, 95.0, infrastructure=has_infra("explicit BlockedLayout tiling"))]
    assert table(rows)["v1"] == ("milestone", True)


def test_a_big_jump_without_evidence_is_a_claim_flagged_for_review():
    # naive -> coalesced SGEMM: 6.4x, the reference (cuBLAS) re-measured in the same run did not move
    rows = [row(0, 444.8, "baseline", speedup_vs_ref=0.06), row(1, 69.2, speedup_vs_ref=0.386)]
    v1 = run_ladder(rows)[1]
    assert (v1.outcome, v1.final) == ("mega", True) and v1.improve_pct == pytest.approx(84.44, abs=0.01)
    assert "6.4x faster" in v1.review and "no re-baseline evidence" in v1.review


@pytest.mark.parametrize(
    "evidence,why",
    [
        ({"speedup_vs_ref": 8.73}, "reference re-measured"),  # latency x3, speedup unchanged: the reference moved too
        ({"harness_files": ["definition.json"]}, "changed the harness"),
        ({"subject": "v2: committed, re-baseline on the 14-workload set"}, "the run says so"),
    ],
)
def test_rebaseline_only_from_evidence_and_it_moves_the_floor(evidence, why):
    rows = [
        row(0, 86.0, "baseline", speedup_vs_ref=1.0),
        row(1, 9.73, speedup_vs_ref=8.84),
        row(2, 29.5, **evidence),
        row(3, 28.9, speedup_vs_ref=8.9),
    ]
    steps = run_ladder(rows)
    assert [s.outcome for s in steps] == ["baseline", "mega", "rebaseline", "milestone"]
    assert why in steps[2].reason and steps[3].floor_before_us == 29.5 and steps[3].final


def test_a_reference_that_stayed_put_is_no_rebaseline():
    rows = [row(0, 86.0, "baseline", speedup_vs_ref=1.0), row(1, 13.3, speedup_vs_ref=6.46)]
    assert run_ladder(rows)[1].outcome == "mega"
