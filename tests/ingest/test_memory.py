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


def test_non_dict_sections_do_not_crash():
    rec = parse_record(1, {"performance": "fast", "correctness": None, "quality_gate": [], "pitfalls_and_fixes": "x"})
    assert rec.geomean_us is None and rec.correctness["status"] is None and rec.pitfalls == ()
