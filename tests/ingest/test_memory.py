"""memory/v<N>.json: strict version names, drift tolerance, numbers that are not this version's."""

import json

import pytest

from optrace.ingest.memory import normalise_pitfalls, parse_record, scan_memory
from optrace.ingest.trace_files import WorkTreeFiles


def _write(root, name, obj):
    path = root / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))


def test_only_strict_version_names_are_versions(tmp_path):
    for name in ("v7.json", "v71_512.json", "live.json", "long_horizon_e0003.json", "v5_rerun.json"):
        _write(tmp_path, name, {"performance": {"latency_us_geomean": 10.0}})
    scan = scan_memory(WorkTreeFiles(tmp_path))
    assert sorted(scan.records) == [7]
    assert {v["file"] for v in scan.variants} == {
        "memory/v71_512.json",
        "memory/live.json",
        "memory/long_horizon_e0003.json",
        "memory/v5_rerun.json",
    }
    assert 71512 not in scan.records


def test_unparseable_and_non_object_files_are_variants(tmp_path):
    _write(tmp_path, "v1.json", "{not json")
    _write(tmp_path, "v2.json", [1, 2])
    scan = scan_memory(WorkTreeFiles(tmp_path))
    assert scan.records == {}
    assert {v["why"] for v in scan.variants} == {"unparseable", "not a JSON object"}


@pytest.mark.parametrize("geo", [0, -3.0, "fast", float("nan"), None, True])
def test_bad_geomean_is_no_number(geo):
    rec = parse_record(3, {"performance": {"latency_us_geomean": geo, "latency_us_by_shape": {"a": 1.0}}})
    assert rec.geomean_us is None and rec.number_note
    assert rec.by_shape_us == {}


def test_numeric_string_geomean_is_accepted():
    assert parse_record(1, {"performance": {"latency_us_geomean": "12.5"}}).geomean_us == 12.5


def test_carried_forward_numbers_are_never_claimed():
    rec = parse_record(
        7,
        {"performance": {"latency_us_geomean": 21.2, "carried_from_version": "v6", "latency_us_by_shape": {"a": 20.0}}},
    )
    assert rec.geomean_us is None and rec.carried_from == "v6"
    assert rec.number_note == "numbers carried forward from v6" and rec.by_shape_us == {}


@pytest.mark.parametrize("ref", ["v7", "V7", 7, "07"])
def test_carried_from_itself_is_its_own_number(ref):
    # an agent that fills carried_from_version with the version it measured copied nothing
    rec = parse_record(
        7,
        {"performance": {"latency_us_geomean": 21.2, "carried_from_version": ref, "latency_us_by_shape": {"a": 20.0}}},
    )
    assert rec.geomean_us == 21.2 and rec.number_note is None and rec.by_shape_us == {"a": 20.0}
    assert rec.carried_from is None


def test_a_ten_digit_version_file_is_no_version(tmp_path):
    # grammar.NUM: a version number has at most 9 digits, in a file name as in a subject
    _write(tmp_path, "v1234567890.json", {"performance": {"latency_us_geomean": 10.0}})
    _write(tmp_path, "v123456789.json", {"performance": {"latency_us_geomean": 10.0}})
    scan = scan_memory(WorkTreeFiles(tmp_path))
    assert sorted(scan.records) == [123456789]
    assert scan.variants == [{"file": "memory/v1234567890.json", "why": "not a version name"}]


def test_incomplete_measurement_is_no_number():
    rec = parse_record(
        4, {"performance": {"latency_us_geomean": 9.0, "measurement_status": "not_evaluated_or_incomplete"}}
    )
    assert rec.geomean_us is None and rec.number_note == "measurement incomplete"


def test_string_optimization_is_the_action_description():
    rec = parse_record(2, {"optimization": "hoist the weight load"})
    assert rec.action_description == "hoist the weight load" and rec.action_category is None


def test_non_numeric_shape_latencies_dropped():
    rec = parse_record(
        2, {"performance": {"latency_us_geomean": 5.0, "latency_us_by_shape": {"a": 4.0, "b": "n/a", "c": 0}}}
    )
    assert rec.by_shape_us == {"a": 4.0}


def test_both_pitfall_dialects_strings_and_nulls():
    out = normalise_pitfalls(
        [
            {
                "error_type": "CompileError",
                "error_message": "smem overflow",
                "root_cause": "3 stages at BLOCK_K=128",
                "fix_applied": "2 stages",
                "lesson": "count smem per stage",
            },
            {"pitfall": "3 stages exceeded smem", "explanation": "occupancy 1 CTA/SM", "fix": "2 stages"},
            "bank conflicts on B tile",
            None,
            {"unrelated": 1},
        ]
    )
    assert [(p.text, p.fix) for p in out] == [
        ("CompileError. smem overflow. 3 stages at BLOCK_K=128. count smem per stage", "2 stages"),
        ("3 stages exceeded smem. occupancy 1 CTA/SM", "2 stages"),
        ("bank conflicts on B tile", None),
    ]


def test_a_pitfalls_stated_cause_and_lesson_are_kept_apart():
    out = normalise_pitfalls(
        [
            {
                "error_type": "illegal instruction",
                "error_message": "CUDA error: an illegal instruction was encountered",
                "root_cause": "tcgen05 instructions exist only for sm_100a",
                "fix_applied": "compile for sm_100a",
                "lesson": "target sm_100a whenever tcgen05 is used",
            },
            {
                "pitfall": "did not build on the sm_75 runner",
                "why": "bf16 mma exists only for sm_80+",
                "fix": "skip it",
            },
            {"pitfall": "first call timed", "explanation": "the first call autotunes", "fix": "pin the config"},
            {"error_type": "amax mismatch", "root_cause": None, "fix_applied": "zero amax first", "lesson": None},
            "keep the autotune key to M only",
        ]
    )
    assert [(p.cause, p.lesson) for p in out] == [
        ("tcgen05 instructions exist only for sm_100a", "target sm_100a whenever tcgen05 is used"),
        ("bf16 mma exists only for sm_80+", None),  # the `why` dialect: its cause is in the text too
        ("the first call autotunes", None),
        (None, None),  # a fix is no cause
        (None, None),
    ]
    assert out[1].text == "did not build on the sm_75 runner. bf16 mma exists only for sm_80+"


def test_non_dict_sections_do_not_crash():
    rec = parse_record(1, {"performance": "fast", "correctness": None, "quality_gate": [], "pitfalls_and_fixes": "x"})
    assert rec.geomean_us is None and rec.correctness["status"] is None and rec.pitfalls == ()


def test_a_full_record_in_full():
    # every field the later stages read, from a record with each section present and some of it drifted
    rec = parse_record(
        5,
        {
            "performance": {
                "latency_us_geomean": 0.5,
                "latency_us_by_shape": {"4096": 0.4, "8192": "0.6"},
                "speedup_vs_ref_geomean": 1.8,
            },
            "correctness": {"status": " PASS ", "max_abs_err": 0.001, "max_rel_err": 0.02},
            "quality_gate": {"result": "PASS", "failure_reason": " slow compile "},
            "optimization": {
                "action_category": "memory",
                "action_description": "hoist the loads",
                "expected_impact": "+3%",
            },
            "pitfalls_and_fixes": [
                {
                    "error_type": "Smem overflow.",
                    "error_message": "SMEM overflow",
                    "root_cause": "3 stages",
                    "lesson": "tune BLOCK_X",
                    "fix_applied": "2 stages",
                },
                {"explanation": "occupancy 1 CTA/SM", "fix": "fewer registers"},  # one half of the other dialect
                {"pitfall": "bank conflicts on the B tile", "fix_applied": "not this dialect's key"},  # the other half
                42,
                "bank conflicts",
            ],
            "open_directions": [
                {"direction": "split-K", "rationale": "long K"},
                "  warp specialise ",
                {"direction": " "},
                "",
                3,
                {"direction": "TMA loads"},
            ],
            "profile_evidence": {"evidence_summary": "DRAM bound", "bottleneck_type": "memory"},
            "experience": {
                "experiments": [
                    {"name": "tile 256", "change": "BLOCK=256", "decision": "REVERT", "result": "x" * 2500},
                    {"hypothesis": "neither a name nor a change"},
                    "not an experiment",
                    {"change": "only a change", "decision": ""},
                ]
            },
        },
    )
    assert (rec.n, rec.geomean_us, rec.number_note) == (5, 0.5, None)
    assert rec.by_shape_us == {"4096": 0.4, "8192": 0.6} and rec.speedup_vs_ref == 1.8
    assert rec.correctness == {"status": "PASS", "max_abs_err": 0.001, "max_rel_err": 0.02}
    assert rec.quality_gate == {"result": "PASS", "failure_reason": "slow compile"}
    assert (rec.action_category, rec.action_description, rec.expected_impact) == ("memory", "hoist the loads", "+3%")
    assert [(p.text, p.fix) for p in rec.pitfalls] == [
        ("Smem overflow. 3 stages. tune BLOCK_X", "2 stages"),  # a part repeated in another case is said once
        ("occupancy 1 CTA/SM", "fewer registers"),
        ("bank conflicts on the B tile", None),
        ("bank conflicts", None),
    ]
    assert rec.open_directions == (
        {"direction": "split-K", "rationale": "long K"},
        {"direction": "warp specialise", "rationale": None},
        {"direction": "TMA loads", "rationale": None},
    )
    assert (rec.evidence_summary, rec.bottleneck_type) == ("DRAM bound", "memory")
    empty = dict.fromkeys(("name", "hypothesis", "change", "evidence", "result", "decision"))
    assert rec.experiments == (
        {**empty, "name": "tile 256", "change": "BLOCK=256", "decision": "revert", "result": "x" * 2000},
        {**empty, "change": "only a change"},
    )


@pytest.mark.parametrize(
    "value,kept",
    [
        (0.001, 0.001),
        (-2, -2.0),
        (float("inf"), None),
        (float("nan"), None),
        (10**400, None),
        (True, None),
        ("0.1", None),
    ],
)
def test_error_bounds_are_finite_numbers_or_none(value, kept):
    rec = parse_record(1, {"correctness": {"status": "PASS", "max_abs_err": value}})
    assert rec.correctness["max_abs_err"] == kept


def test_each_variant_says_why(tmp_path):
    for name in ("v5_rerun.json", "v5-512.json", "long_horizon_e0003.json", "live.json", "V5.json"):
        _write(tmp_path, name, {})
    assert {v["file"]: v["why"] for v in scan_memory(WorkTreeFiles(tmp_path)).variants} == {
        "memory/v5_rerun.json": "scratch variant or re-measurement",
        "memory/v5-512.json": "scratch variant or re-measurement",
        "memory/long_horizon_e0003.json": "long-horizon episode evidence",
        "memory/live.json": "not a version name",
        "memory/V5.json": "not a version name",
    }


def test_the_older_latency_key_is_read():
    assert parse_record(2, {"performance": {"latency_us": 7.5}}).geomean_us == 7.5
    rec = parse_record(2, {"performance": {}})
    assert rec.geomean_us is None and rec.number_note == "no geomean recorded"


def test_a_carried_record_has_no_speedup_either():
    rec = parse_record(
        7,
        {"performance": {"latency_us_geomean": 21.2, "carried_from_version": "v6", "speedup_vs_ref_geomean": 2.0}},
    )
    assert rec.speedup_vs_ref is None


def test_spellings_of_one_version_use_the_canonical_file(tmp_path):
    _write(tmp_path, "v003.json", {"performance": {"latency_us_geomean": 3.0}})
    _write(tmp_path, "v03.json", {"performance": {"latency_us_geomean": 2.0}})
    _write(tmp_path, "v3.json", {"performance": {"latency_us_geomean": 1.0}})
    scan = scan_memory(WorkTreeFiles(tmp_path))
    assert (scan.records[3].n, scan.records[3].geomean_us) == (3, 1.0)  # memory/v3.json's number
    assert scan.variants == [
        {"file": "memory/v003.json", "why": "duplicate of v3 (memory/v3.json is used)"},
        {"file": "memory/v03.json", "why": "duplicate of v3 (memory/v3.json is used)"},
    ]
    assert scan.warnings == [
        "memory/v03.json: another spelling of v3; memory/v3.json is used, this file is ignored",
        "memory/v003.json: another spelling of v3; memory/v3.json is used, this file is ignored",
    ]


def test_other_entries_in_memory_are_passed_over(tmp_path):
    _write(tmp_path, "a.txt", "notes")
    (tmp_path / "memory" / "v2.json").mkdir()  # a directory with a version's name
    _write(tmp_path, "v1.json", {"performance": {"latency_us_geomean": 1.0}})
    scan = scan_memory(WorkTreeFiles(tmp_path))
    assert sorted(scan.records) == [1] and scan.variants == [] and scan.warnings == []


def test_a_version_without_a_record_is_named_in_a_warning(tmp_path):
    _write(tmp_path, "v2.json", [1, 2])
    assert scan_memory(WorkTreeFiles(tmp_path)).warnings == ["memory/v2.json: not a JSON object; v2 has no step record"]


def test_a_pitfall_field_that_is_not_text_never_becomes_its_python_repr():
    out = normalise_pitfalls(
        [
            {"pitfall": "x tile spilled", "why": ["256 regs/thread", "no launch bounds"]},  # a list of texts
            {"pitfall": {"nested": 1}},  # an object: no text at all
            {"pitfall": "y", "explanation": {"a": 1}, "fix": ["z"]},
        ]
    )
    assert [(p.text, p.cause, p.fix) for p in out] == [
        ("x tile spilled. 256 regs/thread; no launch bounds", "256 regs/thread; no launch bounds", None),
        ("y", None, "z"),
    ]


@pytest.mark.parametrize(
    "item",
    [
        {"pitfall": "Same text", "explanation": "same text."},
        {"error_type": "OOM", "error_message": "smem overflow", "root_cause": "Smem overflow"},
    ],
)
def test_an_explanation_that_repeats_what_happened_is_no_stated_cause(item):
    (pit,) = normalise_pitfalls([item])
    assert pit.cause is None and pit.text.lower().count("overflow" if "OOM" in pit.text else "same text") == 1
