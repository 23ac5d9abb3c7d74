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


def test_the_default_thresholds_are_the_workflows():
    # a stage run by hand (its CLI defaults) ranks a trace exactly as the workflow does (config/config.yaml)
    import yaml

    from tests.support.paths import ROOT

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert Thresholds() == Thresholds(**config["ladder"]) == Thresholds(1.5, 20.0, 5.0)


@pytest.mark.parametrize(
    "geo,outcome",
    [
        (98.5, "milestone"),  # exactly 1.5 % faster: at the threshold is enough
        (98.51, "floor"),  # 1.49 %: under it, the floor moves without a claim
        (80.0, "mega"),  # exactly 20 %
        (80.01, "milestone"),  # 19.99 %
    ],
)
def test_default_thresholds_at_their_boundaries(geo, outcome):
    steps = run_ladder([row(0, 100.0, "baseline"), row(1, geo)])
    assert (steps[1].outcome, steps[1].final) == (outcome, True)


@pytest.mark.parametrize("geo,flagged", [(20.0, False), (19.9, True), (500.0, False), (501.0, True)])
def test_default_review_factor_at_its_boundary(geo, flagged):
    # a jump of exactly 5x is still plausible; beyond it, in either direction, a person looks
    assert bool(run_ladder([row(0, 100.0, "baseline"), row(1, geo)])[1].review) is flagged


@pytest.mark.parametrize(
    "ref_now_us,outcome",
    [
        (125.0, "rebaseline"),  # 2x slower and the reference 1.25x slower with it: the harness moved
        (120.0, "flat"),  # the reference moved less than 1.25x: the version is only slower
    ],
)
def test_reference_move_threshold(ref_now_us, outcome):
    # the reference's latency is geomean x speedup_vs_ref: 100 us before, ref_now_us now
    rows = [row(0, 100.0, "baseline", speedup_vs_ref=1.0), row(1, 200.0, speedup_vs_ref=ref_now_us / 200.0)]
    assert run_ladder(rows)[1].outcome == outcome


def test_every_step_of_the_series_in_full():
    # what recon, partition and the dataset read from each step: its number, the floor it was compared
    # with, its gain, why, and what a person should review
    got = [
        (s.version, s.n, s.outcome, s.geomean_us, s.improve_pct, s.floor_before_us, s.final, s.reason, s.review)
        for s in run_ladder(SERIES)
    ]
    review = "6.0x slower than the floor with no re-baseline evidence (reference, harness files, text): review"
    assert got == [
        ("v0", 0, "baseline", 100.0, None, None, False, "first surviving version", None),
        ("v1", 1, "flat", 600.0, -500.0, 100.0, False, "no improvement over the floor (6x slower)", review),
        ("v2", 2, "milestone", 97.0, 3.0, 100.0, False, "3.00% faster than the floor", None),
        ("v3", 3, "flat", 97.5, -0.52, 97.0, False, "no improvement over the floor (-0.52%)", None),
        (
            "v4",
            4,
            "floor",
            96.0,
            1.03,
            97.0,
            False,
            "took the floor by 1.03% without a claim: its subject says it changed nothing",
            None,
        ),
        ("v5", 5, "mega", 70.0, 27.08, 96.0, False, "27.08% faster than the floor", None),
        ("v6", 6, "rejected", 60.0, None, 70.0, False, "reverted (test)", None),
        ("v7", 7, "rejected", 50.0, None, 70.0, False, "incorrect (correctness FAIL)", None),
        ("v8", 8, "rejected", 55.0, None, 70.0, False, "quality gate failed", None),
        ("v9", 9, "rejected", 58.0, None, 70.0, False, "infrastructure failure", None),
        ("v10", 10, "rejected", None, None, 70.0, False, "no genuine number (no geomean recorded)", None),
        (
            "v11",
            11,
            "floor",
            69.5,
            0.71,
            70.0,
            False,
            "took the floor by 0.71% without a claim: under the 1.5% milestone threshold",
            None,
        ),
        (
            "v12",
            12,
            "rebaseline",
            13.0,
            81.29,
            69.5,
            False,
            "harness re-baseline (5.3x faster): its commit changed the harness (workload.jsonl); the floor moves, no claim",
            None,
        ),
        ("v13", 13, "milestone", 12.5, 3.85, 13.0, True, "3.85% faster than the floor", None),
        ("v14", 14, "rejected", 12.4, None, 12.5, False, "not a kept change (test)", None),
    ]


def test_an_empty_trace_has_no_steps():
    assert run_ladder([]) == []


@pytest.mark.parametrize(
    "last,outcome",
    [
        (row(2, 95.0, harness_files=["definition.json"]), "rebaseline"),
        (row(2, 99.0), "floor"),
    ],
)
def test_the_last_version_to_move_the_floor_is_final_whatever_its_kind(last, outcome):
    steps = run_ladder([row(0, 100.0, "baseline"), row(1, 99.5), last])
    assert [(s.outcome, s.final) for s in steps] == [("baseline", False), ("floor", False), (outcome, True)]


def test_a_version_equal_to_the_floor_does_not_take_it():
    steps = run_ladder([row(0, 100.0, "baseline"), row(1, 100.0)])
    assert [(s.outcome, s.final) for s in steps] == [("baseline", True), ("flat", False)]


def test_the_outcome_agrees_with_the_gain_as_reported():
    # 1.499 % is reported as 1.50 %: at the threshold, as the reader sees it
    step = run_ladder([row(0, 100.0, "baseline"), row(1, 98.501)])[1]
    assert (step.improve_pct, step.outcome) == (1.5, "milestone")


@pytest.mark.parametrize("gate", ["FAIL", "TIMEOUT_FAIL", "fail", "timeout_fail"])
def test_a_failed_quality_gate_in_any_case_is_rejected(gate):
    assert rejection(row(1, 9.0, quality_gate={"result": gate})) == "quality gate failed"


def test_infrastructure_on_a_kept_version_is_rejected_as_such():
    assert rejection(row(1, 9.0, infrastructure=True)) == "infrastructure failure"


@pytest.mark.parametrize(
    "geo,ref_now_us,why",
    [
        (200.0, 125.0, "moved 1.2x with the latency"),  # slower together
        (50.0, 75.0, "moved 1.3x down with the latency"),  # faster together
        (150.0, 300.0, "moved 3.0x with the latency"),
    ],
)
def test_the_reference_moving_with_the_latency_either_way_is_a_rebaseline(geo, ref_now_us, why):
    rows = [row(0, 100.0, "baseline", speedup_vs_ref=1.0), row(1, geo, speedup_vs_ref=ref_now_us / geo)]
    step = run_ladder(rows)[1]
    assert step.outcome == "rebaseline" and why in step.reason


def test_a_reference_that_moved_without_the_latency_is_no_rebaseline():
    # same latency, the reference 1.5x slower: the kernel did not get faster or slower, nothing to re-baseline
    rows = [row(0, 100.0, "baseline", speedup_vs_ref=1.0), row(1, 100.0, speedup_vs_ref=1.5)]
    assert run_ladder(rows)[1].outcome == "flat"


def test_rebaseline_reason_says_how_far_and_which_way():
    rows = [
        row(0, 100.0, "baseline"),
        row(1, 150.0, harness_files=["a/bench.py", "b/bench.py", "c/bench.py", "d/bench.py"]),
    ]
    reason = run_ladder(rows)[1].reason
    assert reason.startswith("harness re-baseline (1.5x slower): ")
    assert "(a/bench.py, b/bench.py, c/bench.py)" in reason  # the first three files, not a wall of them


def test_rebaseline_text_in_the_body_counts():
    rows = [row(0, 100.0, "baseline"), row(1, 30.0, subject="v1: committed", body="re-baselined on the new workloads")]
    assert run_ladder(rows)[1].outcome == "rebaseline"


def test_a_no_change_version_far_faster_than_the_floor_is_flagged():
    # it takes the floor without a claim, and a 6x jump still goes to a person
    step = run_ladder([row(0, 100.0, "baseline"), row(1, 16.0, no_change=True)])[1]
    assert step.outcome == "floor" and "6.2x faster" in step.review


def test_thresholds_as_cli_options():
    import argparse

    parser = argparse.ArgumentParser()
    Thresholds.add_arguments(parser)
    assert Thresholds.from_args(parser.parse_args([])) == Thresholds()
    args = parser.parse_args(["--milestone-pct", "2", "--mega-pct", "30", "--rebaseline-factor", "4"])
    assert Thresholds.from_args(args) == Thresholds(2.0, 30.0, 4.0)
    assert "--milestone-pct" in parser.format_help()


@pytest.mark.parametrize(
    "path,harness",
    [
        ("definition.json", True),
        ("workload.jsonl", True),
        ("harness/run.py", True),
        ("benchmarks/sizes.yaml", True),
        ("bench/x.cu", True),
        ("my_bench.py", True),
        ("run_benchmark.sh", True),
        ("test_kernel.py", True),
        ("kernel.py", False),
        ("memory/v3.json", False),
        ("src/bench.py", False),
        ("notes/benchmark.md", False),
        ("bench.md", False),
        ("old/definition.json", False),
    ],
)
def test_harness_files(path, harness):
    from optrace.mine.ladder import harness_file

    assert harness_file(path) is harness


def test_a_step_row_carries_every_field():
    step = run_ladder([row(0, 100.0, "baseline")])[0]
    assert step.to_row() == {
        "version": "v0",
        "n": 0,
        "outcome": "baseline",
        "reason": "first surviving version",
        "geomean_us": 100.0,
        "improve_pct": None,
        "floor_before_us": None,
        "final": True,
        "review": None,
    }


# ---- unit slips ----------------------------------------------------------------------------------


def steps_of(rows):
    return {s.version: s for s in run_ladder(rows)}


@pytest.mark.parametrize(
    "slipped,unit",
    [(15423.9, "ns"), (0.0154239, "ms")],  # the realistic Helion trace's v4, in ns; and the same written in ms
)
def test_a_jump_of_about_a_thousand_with_no_harness_change_is_a_unit_slip(slipped, unit):
    # the harness's own speedup says the slip was a real 2.4 % win: the reference "moves" x1000 with it
    rows = [
        row(0, 20.197, speedup_vs_ref=1.0),
        row(1, 15.798, speedup_vs_ref=1.2785),
        row(2, slipped, speedup_vs_ref=1.3095),
        row(3, 14.721, speedup_vs_ref=1.372),
    ]
    steps = steps_of(rows)
    assert steps["v2"].outcome == "rejected" and f"written in {unit}, not µs" in steps["v2"].reason
    assert steps["v3"].outcome == "milestone" and steps["v3"].floor_before_us == 15.798  # the floor stayed
    assert steps["v3"].improve_pct == 6.82 and steps["v3"].final


@pytest.mark.parametrize(
    "evidence",
    [{"harness_files": ["bench/bench_add.py"]}, {"subject": "v2: re-baseline: the harness now reports ns"}],
)
def test_a_thousandfold_jump_with_harness_evidence_is_a_rebaseline(evidence):
    steps = steps_of([row(0, 20.0), row(1, 15.8), row(2, 15423.9, **evidence)])
    assert steps["v2"].outcome == "rebaseline"


@pytest.mark.parametrize("factor", [6.0, 100.0, 400.0, 2500.0])
def test_jumps_far_from_a_thousand_are_not_unit_slips(factor):
    # a 6x or 100x step is a kernel's (naive -> coalesced SGEMM); beyond x2 of 1000 is no unit either
    steps = steps_of([row(0, 1000.0), row(1, 1000.0 / factor)])
    assert steps["v1"].outcome == "mega" and steps["v1"].review


def test_a_thousandfold_win_the_speedup_confirms_is_no_unit_slip():
    # the reference stayed put (its implied latency 50 ms both times): the kernel really got 1000x faster
    steps = steps_of([row(0, 50_000.0, speedup_vs_ref=1.0), row(1, 50.0, speedup_vs_ref=1000.0)])
    assert steps["v1"].outcome == "mega" and steps["v1"].review  # a claim, flagged for review as any big jump


# ---- a declared re-baseline of an unchanged kernel ----------------------------------------------------


@pytest.mark.parametrize(
    "evidence",
    [
        {"subject": "V5: re-baseline: the harness now flushes L2 before each call"},
        {"harness_files": ["bench/harness.py"]},
    ],
)
@pytest.mark.parametrize("geo", [130.0, 90.0])  # the harness change made it slower, or faster
def test_an_unchanged_kernel_under_a_declared_harness_change_is_the_rebaseline(evidence, geo):
    # ingest gives an unchanged kernel with no verdict in its subject verdict "none"; the harness change it
    # declares is what moved the numbers, so it sets the floor the next step is measured against
    rows = [row(0, 100.0), row(1, 80.0), row(2, geo, "none", **evidence), row(3, geo * 0.9)]
    steps = steps_of(rows)
    assert steps["v2"].outcome == "rebaseline" and steps["v2"].improve_pct is not None
    assert steps["v3"].outcome == "milestone" and steps["v3"].floor_before_us == geo
    assert steps["v3"].improve_pct == 10.0 and steps["v3"].final


def test_an_unchanged_kernel_without_harness_evidence_is_still_not_a_kept_change():
    # faster numbers alone (noise, a warmer GPU) never make an unchanged kernel a claim or move the floor
    steps = steps_of([row(0, 100.0), row(1, 80.0), row(2, 60.0, "none", subject="v2: retimed"), row(3, 76.0)])
    assert steps["v2"].outcome == "rejected" and "not a kept change" in steps["v2"].reason
    assert steps["v3"].outcome == "milestone" and steps["v3"].floor_before_us == 80.0


def test_an_unchanged_kernel_is_never_a_claim_whatever_its_evidence():
    for evidence in ({"subject": "v2: re-baseline"}, {"harness_files": ["bench/x.py"]}):
        steps = steps_of([row(0, 100.0), row(1, 80.0), row(2, 40.0, "none", **evidence)])
        # 2x faster with the kernel unchanged: the harness moved, so it sets the floor without a claim
        assert steps["v2"].outcome == "rebaseline" and steps["v2"].final
