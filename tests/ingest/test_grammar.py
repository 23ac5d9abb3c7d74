"""Commit-subject grammar of the three eras."""

import pytest

from optrace.ingest.grammar import deadend_items, has_infra, has_no_change, parse_subject, subject_fields


@pytest.mark.parametrize(
    "subject,kind,version,verdict",
    [
        ("V0: baseline kernel", "version", 0, "baseline"),
        ("v0: baseline (SOL reference wrapper)", "version", 0, "baseline"),
        ("V0: record baseline measurement", "version", 0, "baseline"),
        (
            "V3: 150 TFLOPS / 1.5 GB/s | XOR16 swizzle layout (bottleneck: ds_read bank conflict stall 12 cycles)",
            "version",
            3,
            None,
        ),
        ("V5: revert V4 (occupancy 25% -> 12%)", "version", 5, "reverted"),
        ("v4: committed (+3.2%)", "version", 4, "kept"),
        ("v7: reverted (smem overflow) — dead-end recorded", "version", 7, "reverted"),
        ("v12: reverted (flat-within-noise, +1.4%) - dead-end recorded", "version", 12, "reverted"),
        ("v2: triton->gluon conversion (no opt, perf parity)", "version", 2, None),
        ("v3: conversion reverted (layout mismatch)", "version", 3, "reverted"),
        ("v1: framework baseline (TRITON)", "version", 1, "kept"),
        ("v1: pin framework baseline 1a2b3c4d", "version", 1, None),
        ("episode 5: promote verified long-horizon candidate", "promote", None, "kept"),
        ("v9: long-horizon episode 8 candidate_ready", "version", 9, "reverted"),
        ("v9 trial 2: fast kernel candidate", "trial", 9, None),
        ("chore(007): tidy", "other", None, None),
        ("dead-end recorded: a lever, another lever. Next: x", "untagged", None, "reverted"),
    ],
)
def test_subject_kinds_and_verdicts(subject, kind, version, verdict):
    claim = parse_subject(subject)
    assert (claim.kind, claim.version, claim.verdict) == (kind, version, verdict)


def test_version_key_is_zero_stripped():
    assert parse_subject("v03: committed (+2%)").version == 3


def test_pin_and_record_commits_are_neutral():
    assert parse_subject("v1: pin framework baseline 1a2b3c4d").neutral
    assert parse_subject("V0: record baseline measurement").neutral
    assert not parse_subject("v1: framework baseline (triton)").neutral


def test_verdict_comes_from_subject_not_body():
    claim = parse_subject("v4: committed (+3.2%)", body="earlier attempt reverted; dead-end recorded elsewhere")
    assert claim.verdict == "kept"


def test_long_horizon_outcome_and_episode():
    claim = parse_subject("v9: long-horizon episode 8 invalid_handoff")
    assert (claim.episode, claim.outcome) == (8, "invalid_handoff")


def test_revert_marker_names_the_undone_version():
    assert parse_subject("V5: revert V4 (occupancy)").reverts == 4


def test_deadend_list_split_on_top_level_commas_and_stops_at_sentence():
    items = deadend_items(
        "dead-end recorded: split-K reduction (atomics, contention), fp32 smem accumulate, "
        "cp.async prefetch. Next: warp specialisation"
    )
    assert items == ["split-K reduction (atomics, contention)", "fp32 smem accumulate", "cp.async prefetch"]


def test_deadend_list_never_glues_the_body():
    text = "v3: dead-end recorded: wider tiles, more stages\nbody line that is not a lever"
    assert deadend_items(text) == ["wider tiles", "more stages"]


def test_deadend_list_drops_stray_closing_bracket():
    assert deadend_items("v8: reverted (dead-end recorded: swizzle, vector width 16)") == ["swizzle", "vector width 16"]


def test_short_items_dropped():
    assert deadend_items("dead-end recorded: x, tile 64") == ["tile 64"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("NO_CHANGE", True),
        ("no change in latency", True),
        ("NO_OP rebuild", True),
        ("hypothesis falsified", True),
        ("flat-within-noise", True),
        ("flat within noise", True),
        ("within noise", True),
        ("no improvement over 54.5 us", True),
        ("committed (+3.2%)", False),
        ("noisy measurement", False),
        ("no_changes_here_var", False),
    ],
)
def test_no_change_phrases(text, expected):
    assert has_no_change(text) is expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("sandbox outage", True),
        ("long-horizon episode 4 blocked", True),
        ("machine_down", True),
        ("infra failure", True),
        ("explicit BlockedLayout tiling", False),
        ("unblocked the pipeline", False),
        ("the merge queue was unblocked", False),
        ("infrared", False),
        ("v9: reverted (blocked) — dead-end recorded", True),
        ("v9: reverted (GPU unavailable)", True),
        ("v9: blocked on the sandbox queue", True),
        # English, not a status: a realistic trace's subject (tests/support/trace_helion_add.py V3)
        ("V3: 3510.9 GB/s | persistent_interleaved (bottleneck: tail of the blocked persistent grid)", False),
        ("v4: committed (+2.0%) the fast path is unavailable for bf16, fp16 only", False),
    ],
)
def test_infrastructure_words_match_whole_words(text, expected):
    assert has_infra(text) is expected


@pytest.mark.parametrize(
    "subject", ["v1234567890: committed (+2%)", "episode 1234567890: promote x", "v1234567890 trial 1: x"]
)
def test_a_ten_digit_number_names_no_version(subject):
    # never read as its first nine digits (v123456789 is another version)
    claim = parse_subject(subject)
    assert claim.version is None and claim.episode is None


BODY_ITEMS = "dead-end recorded: tile 256, swizzle 128B"


@pytest.mark.parametrize(
    "subject,body,claim",
    [
        ("V0: baseline kernel", "", ("version", 0, None, "baseline", "version 0", False, None, None, ())),
        (
            "V0: record baseline measurement",
            "",
            ("version", 0, None, "baseline", "baseline measurement record", True, None, None, ()),
        ),
        (
            "v2: record baseline measurement",
            "",  # a later re-measurement of the baseline decides nothing
            ("version", 2, None, None, "baseline measurement record", True, None, None, ()),
        ),
        (
            "V5: revert V4 (occupancy 25% -> 12%)",
            "",
            ("version", 5, None, "reverted", "revert marker (undoes v4)", False, 4, None, ()),
        ),
        (
            "v4: committed (+3.2%)",
            BODY_ITEMS,
            ("version", 4, None, "kept", "subject: committed", False, None, None, ()),
        ),
        (
            "v7: reverted (smem overflow) — dead-end recorded: split-K, fp32 smem accumulate",
            "",
            (
                "version",
                7,
                None,
                "reverted",
                "subject: dead-end recorded",
                False,
                None,
                None,
                ("split-K", "fp32 smem accumulate"),
            ),
        ),
        (
            "v7: reverted (smem overflow) — Dead-End Recorded",
            "",
            ("version", 7, None, "reverted", "subject: dead-end recorded", False, None, None, ()),
        ),
        (
            "v3: conversion reverted (layout mismatch)",
            BODY_ITEMS,
            ("version", 3, None, "reverted", "subject: reverted", False, None, None, ("tile 256", "swizzle 128B")),
        ),
        (
            "v6: dead-end recorded: a lever, b lever",
            BODY_ITEMS,  # the subject's own list wins over the body's
            ("version", 6, None, "reverted", "subject: dead-end recorded", False, None, None, ("a lever", "b lever")),
        ),
        (
            "v1: framework baseline (TRITON)",
            "",
            ("version", 1, None, "kept", "subject: framework baseline", False, None, None, ()),
        ),
        (
            "v1: pin framework baseline 1a2b3c4d",
            "",
            ("version", 1, None, None, "framework pin (metadata only)", True, None, None, ()),
        ),
        (
            "episode 5: promote verified long-horizon candidate",
            BODY_ITEMS,
            ("promote", None, 5, "kept", "episode promote commit", False, None, None, ("tile 256", "swizzle 128B")),
        ),
        (
            "v9: long-horizon episode 8 Candidate_Ready",
            BODY_ITEMS,
            (
                "version",
                9,
                8,
                "reverted",
                "long-horizon outcome Candidate_Ready",
                False,
                None,
                "candidate_ready",
                ("tile 256", "swizzle 128B"),
            ),
        ),
        (
            "v9 trial 2: fast kernel candidate",
            "",
            ("trial", 9, None, None, "episode-branch trial commit", False, None, None, ()),
        ),
        ("chore(007): tidy", "", ("other", None, None, None, "", False, None, None, ())),
        (
            "dead-end recorded: a lever, another lever. Next: x",
            "",
            (
                "untagged",
                None,
                None,
                "reverted",
                "subject: dead-end recorded",
                False,
                None,
                None,
                ("a lever", "another lever"),
            ),
        ),
        (
            "v2: triton->gluon conversion (no opt, perf parity)",
            BODY_ITEMS,
            ("version", 2, None, None, "subject states no verdict", False, None, None, ("tile 256", "swizzle 128B")),
        ),
    ],
)
def test_each_subject_read_in_full(subject, body, claim):
    # the basis becomes the version's verdict_basis, the items its dead ends: both reach the records
    c = parse_subject(subject, body)
    assert (c.kind, c.version, c.episode, c.verdict, c.basis, c.neutral, c.reverts, c.outcome, c.deadend_items) == claim


@pytest.mark.parametrize(
    "text,items",
    [
        ("dead-end recorded: a lever, b lever Next: c lever", ["a lever", "b lever"]),  # `Next:` ends it mid-line
        ("dead-end recorded: a lever, b lever. Then c lever", ["a lever", "b lever"]),  # so does a sentence
        ("dead-end recorded: a lever, b lever. then c lever", ["a lever", "b lever"]),
        ("dead-end recorded: tiles (256 (wide), 128), split-K", ["tiles (256 (wide), 128)", "split-K"]),  # nested
        ("dead-end recorded: split-K (XOR, atomics), fp32 acc", ["split-K (XOR, atomics)", "fp32 acc"]),
        ("dead-end recorded: XOR16 swizzle, split-K", ["XOR16 swizzle", "split-K"]),
        ("dead-end recorded: a lever, wider tiles )", ["a lever", "wider tiles"]),  # stray closer, then its space
        ("dead-end recorded: cp.async with BLOCK_X, split-K.", ["cp.async with BLOCK_X", "split-K"]),
        ("dead-end recorded: smem, ab, tma", ["smem"]),  # 4 characters is a lever, fewer is not
    ],
)
def test_deadend_list_edges(text, items):
    assert deadend_items(text) == items


@pytest.mark.parametrize(
    "subject,fields",
    [
        (
            "V7: 15971.7 GFLOPS | 2D blocktiling (bottleneck: shared-memory loads per FMA)",
            {"perf": [[15971.7, "GFLOPS"]], "change": "2D blocktiling", "bottleneck": "shared-memory loads per FMA"},
        ),
        (
            "V3: 150 TFLOPS / 1.5 GB/s | XOR16 swizzle layout (bottleneck: ds_read bank conflict stall 12 cycles)",
            {"perf": [[150.0, "TFLOPS"], [1.5, "GB/s"]], "change": "XOR16 swizzle layout"},
        ),
        ("V6: 3731.0 GB/s | num_warps=8 (within noise)", {"change": "num_warps=8", "note": "within noise"}),
        (
            "v2: committed (+6.6%) SwiGLU fused into the GEMM epilogue",
            {"claimed_pct": 6.6, "change": "SwiGLU fused into the GEMM epilogue"},
        ),
        (
            "v12: reverted (flat-within-noise, +1.4%) - dead-end recorded",
            {"change": None, "note": "flat-within-noise, +1.4%"},
        ),
        (
            "V4: revert V3 (64x64 tiles need 32 KB (per block); occupancy 67% -> 33%)",
            {"change": None, "note": "64x64 tiles need 32 KB (per block); occupancy 67% -> 33%"},
        ),
        ("v11: fix the mask | still slow", {"perf": [], "change": "fix the mask | still slow"}),  # no fields before |
        # a latency arrow is a field, not part of the change; the delta after it is the arrow's
        ("v4: tiled load -> 59.6->59.1us (-0.7%)", {"latency_us": [59.6, 59.1], "change": "tiled load", "note": None}),
        ("v4: 59.6 -> 51.2 us (+14.1%) with BLOCK=256", {"latency_us": [59.6, 51.2], "change": "with BLOCK=256"}),
        ("v5: 1.2 ms -> 900 us", {"latency_us": [1200.0, 900.0], "change": None}),  # in µs, whatever it was written in
        ("v5: tile 128 → 59.6 µs → 57.0 µs", {"latency_us": [59.6, 57.0], "change": "tile 128"}),  # the pair with units
        ("v3: committed (+2.3%, 59.6->58.2us) swizzle", {"claimed_pct": 2.3, "latency_us": [59.6, 58.2]}),
        # a stated gain wherever it stands, and a bottleneck in any bracket, with any separator
        ("v7: 2-stage cp.async (+3.2% geomean improvement)", {"claimed_pct": 3.2, "change": "2-stage cp.async"}),
        (
            "v3: XOR swizzle (bottleneck: bank conflicts) committed (+2.1%)",
            {"claimed_pct": 2.1, "change": "XOR swizzle", "bottleneck": "bank conflicts"},
        ),
        ("v5: 2-stage pipeline (Bottleneck - long scoreboard)", {"bottleneck": "long scoreboard", "note": None}),
        ("v2: 8,474.7 GFLOPS | 1D blocktiling", {"perf": [[8474.7, "GFLOPS"]], "change": "1D blocktiling"}),
        ("episode 3: promote verified long-horizon candidate", {"change": None}),
        ("v9: long-horizon episode 8 candidate_ready", {"change": None}),
        ("chore: bump", {"change": None}),
    ],
)
def test_subject_line_fields_are_parsed_not_pasted(subject, fields):
    got = subject_fields(subject).to_json()
    assert {k: got[k] for k in fields} == fields


def test_a_subject_of_brackets_is_read_in_one_pass():
    # a backtracking bracket pattern would take minutes on these; the backward scan reads each once
    assert subject_fields("v1: x" + "(" * 200_000 + ")" * 200_000).change == "x"
    assert subject_fields("v1: " + "( " * 300_000 + ")").note is None
    assert subject_fields("v1: " + "1.1->" * 100_000).latency_us is None  # tried at every number, each bounded
    assert subject_fields("v1: (bottleneck: x" + "(" * 200_000).bottleneck is None  # never closed
