"""The embedded example trace: deterministic, and rich enough to exercise the whole chain."""

import pytest

from optrace.errors import InputError
from optrace.example.embedded import build_example, example_name
from optrace.ingest.hardware import HardwareTable
from optrace.ingest.ingest import DEFAULT_NON_TARGET, Overrides, ingest

TABLE = HardwareTable.load()


def test_identical_commit_shas_on_every_build(tmp_path):
    assert build_example(tmp_path / "a") == build_example(tmp_path / "b")


def test_example_exercises_every_ingest_feature(tmp_path):
    trace = tmp_path / example_name()
    build_example(trace)
    rows, profiles, meta, _ = ingest(trace, label=None, table=TABLE, over=Overrides(), non_target=DEFAULT_NON_TARGET)
    by = {r["version"]: r for r in rows}
    assert len(rows) >= 12
    subjects = " ".join(r["subject"] for r in rows)
    # the three grammars
    assert "TB/s |" in subjects and "committed (+" in subjects and "episode 7: promote" in subjects
    assert {r["verdict"] for r in rows} == {"baseline", "kept", "reverted"}
    assert any(r["deadend_items"] for r in rows)  # a list-form dead end
    assert any(r["no_change"] for r in rows if r["verdict"] == "kept")  # a NO_CHANGE version
    assert any(r["carried_from"] for r in rows)
    # both pitfall dialects, a bare string and a null (dropped) were normalised
    assert by["v2"]["pitfalls"] and by["v2"]["pitfalls"][0]["fix"]
    assert len(by["v3"]["pitfalls"]) == 2 and by["v3"]["pitfalls"][1]["fix"] is None
    unusable = [p for p in profiles if not p["usable"]]
    usable_with_report = [p for p in profiles if p["usable"] and p["report"]]
    assert unusable and unusable[0]["kernel_normalized"] == "distribution_elementwise_grid_stride_kernel"
    assert usable_with_report
    assert by["v8"]["usable_profile_dirs"] == ["profiles/episode_7/shape-0"]
    assert meta["languages"] == ["triton"] and meta["target"]["product"] == "h100"
    assert "solution.json" in meta["target"]["basis"]
    assert {v["file"] for v in meta["memory_variants"]} >= {"memory/v8_512.json", "memory/live.json"}
    assert {r["dsl"] for r in rows} >= {"triton", "gluon"}


def test_an_untracked_file_without_a_source_is_a_one_line_error(tmp_path):
    plan = tmp_path / "trace.yaml"
    plan.write_text("name: t\ncommits: []\nuntracked:\n  scratch.txt: null\n")
    with pytest.raises(InputError, match=r"untracked file 'scratch\.txt' names no source"):
        build_example(tmp_path / "out", plan)
