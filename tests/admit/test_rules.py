"""Each admission rule pinned by a test of its own name (#27's surviving mutants, #29's refusals).

Real stores in tmp_path, records from the store's specimens; see test_admission.py for the round trips.
"""

import json

import pytest

from optrace.admit import command, commits
from optrace.admit import proposals as matching
from optrace.admit.admissibility import destination
from optrace.admit.live_store import GateStore
from optrace.gates.store.specimens import anti_strategy, strategy
from tests.admit.test_admission import check_store_fails, in_process, index_of, variant, write


@pytest.fixture
def store(tmp_path, capsys):
    from tests.admit.test_admission import empty_store

    root = empty_store(tmp_path / "store")
    for rec in (strategy(), anti_strategy()):
        rc, out = in_process(capsys, "commit", "insert", "--input", write(tmp_path / "in.json", rec), "--store", root)
        assert rc == 0, out
    return root


def held(root, rid):
    entry = next(e for e in index_of(root)["records"] if e["id"] == rid)
    return json.loads((root / entry["path"]).read_text())


# --- the direction rule ------------------------------------------------------------------------------


def test_two_unknown_directions_are_proposed_for_review_not_confirm():
    assert matching.direction_rule("unknown", [("x", "unknown")])["action"] == "review"
    assert matching.direction_rule("unknown", [("x", "positive")])["action"] == "review"
    assert matching.direction_rule("positive", [("x", "unknown")])["action"] == "review"
    assert matching.direction_rule("positive", [("x", "positive")])["action"] == "confirm"
    assert matching.direction_rule("negative", [("x", "positive")])["action"] == "conflict"


def test_a_match_where_both_directions_are_unknown_goes_to_review(store, tmp_path, capsys):
    flat = strategy()
    flat["id"] = flat["id"][:-7] + "s0e0e0e"
    flat["worth"]["gain"]["pct"] = flat["worth"]["gain"]["metrics"][0]["delta_pct"] = 0.0
    flat["episode_key"] = flat["episode_key"].replace("online_softmax", "flat_lever")
    rc, out = in_process(capsys, "commit", "insert", "--input", write(tmp_path / "f.json", flat), "--store", store)
    assert rc == 0, out
    again = variant(flat, "0f0f0f")  # another run of that lever, also flat: unknown against unknown
    rc, out = in_process(capsys, "match", "--input", write(tmp_path / "g.json", again), "--store", store)
    assert out["action"] == "review" and out["target"] == flat["id"] and "unknown vs unknown" in out["reason"]


# --- confirm -----------------------------------------------------------------------------------------


def test_a_record_cannot_confirm_itself(store, tmp_path, capsys):
    own = write(tmp_path / "own.json", strategy())
    rc, out = in_process(capsys, "commit", "confirm", "--input", own, "--target", strategy()["id"], "--store", store)
    assert (
        rc == 1 and out["outcome"] == "refused" and out["messages"] == [f"{strategy()['id']!r} cannot confirm itself"]
    )
    assert held(store, strategy()["id"])["worth"]["track"]["counters"]["verified_effective"] == 0


def test_a_copy_with_rewritten_commits_is_not_an_independent_confirmation(store, tmp_path, capsys):
    """A trace copied with its authors rewritten: other ids, other commits, the very same measured numbers."""
    copy_of_it = variant(strategy(), "c0ffee", same_run=True)
    copy_of_it["evidence"]["raw"]["git_commit"] = "c0ffee" * 6 + "c0ff"
    path = write(tmp_path / "copy.json", copy_of_it)
    rc, out = in_process(capsys, "match", "--input", path, "--store", store)
    assert out["action"] == "review" and "the same measurements" in out["reason"]
    rc, out = in_process(capsys, "commit", "confirm", "--input", path, "--target", strategy()["id"], "--store", store)
    assert (
        rc == 1
        and "same measurements" in out["messages"][0]
        and "not an independent confirmation" in out["messages"][0]
    )
    assert held(store, strategy()["id"])["worth"]["track"]["counters"]["verified_effective"] == 0


def test_seven_copies_of_a_run_confirm_nothing(store, tmp_path, capsys):
    """The issue's case: a byte-identical copy of a run (authors rewritten) counted as 7 confirmations."""
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    for i in range(7):
        rec = variant(strategy(), f"{i + 1:06x}", same_run=True)
        rec["evidence"]["raw"]["git_commit"] = f"{i + 1:040x}"
        write(staging / f"{i}.json", rec)
    report = matching.match_files(GateStore(store), matching.staged_files(tmp_path / "staging"), 0, str)
    assert [p["action"] for p in report["proposals"]] == ["review"] * 7


# --- insert: duplicate ids -----------------------------------------------------------------------------


def test_insert_refuses_a_duplicate_id(store, tmp_path, capsys):
    same_id = strategy()
    same_id["episode_key"] = same_id["episode_key"].replace("online_softmax", "another_lever")  # not the episode
    before = (store / "records" / "index.json").read_bytes()
    rc, out = in_process(capsys, "commit", "insert", "--input", write(tmp_path / "d.json", same_id), "--store", store)
    assert rc == 1 and out["messages"][0].startswith(f"id {same_id['id']!r} already exists at records/")
    assert (store / "records" / "index.json").read_bytes() == before


def test_insert_refuses_a_file_the_index_does_not_list(store, tmp_path, capsys):
    rec = variant(strategy(), "d1d1d1")
    rec["episode_key"] = rec["episode_key"].replace("online_softmax", "unlisted_lever")
    relpath = destination(rec)
    (store / relpath).parent.mkdir(parents=True, exist_ok=True)
    (store / relpath).write_text("{}")
    rc, out = in_process(capsys, "commit", "insert", "--input", write(tmp_path / "u.json", rec), "--store", store)
    assert rc == 1 and "already exists although the index does not list it" in out["messages"][0]


def test_match_proposes_present_for_an_id_the_store_holds(store, tmp_path, capsys):
    rc, out = in_process(capsys, "match", "--input", write(tmp_path / "p.json", strategy()), "--store", store)
    assert rc == 0 and out["action"] == "present" and out["target"] == strategy()["id"]


def test_a_batch_holding_one_id_twice_inserts_it_once(store, tmp_path, capsys):
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    rec = variant(strategy(), "a2a2a2")
    rec["episode_key"] = rec["episode_key"].replace("online_softmax", "twice_lever")
    write(staging / "a.json", rec)
    write(staging / "b.json", rec)
    out_file = tmp_path / "match.json"
    assert (
        command.main(["match", "--all", str(tmp_path / "staging"), "--store", str(store), "--out", str(out_file)]) == 0
    )
    assert [p["action"] for p in json.loads(out_file.read_text())["proposals"]] == ["insert", "insert"]
    capsys.readouterr()
    rc = command.main(
        ["commit-all", "--proposals", str(out_file), "--store", str(store), "--out", str(tmp_path / "o.json")]
    )
    outcomes = [o["outcome"] for o in json.loads((tmp_path / "o.json").read_text())["outcomes"]]
    assert rc == 1 and outcomes == ["inserted", "refused"]
    assert check_store_fails(store) == {}


# --- conflict ------------------------------------------------------------------------------------------


def test_a_conflict_between_records_that_point_the_same_way_is_refused(store, tmp_path, capsys):
    same_way = write(tmp_path / "s.json", variant(strategy(), "5a5a5a"))
    rc, out = in_process(
        capsys, "commit", "conflict", "--input", same_way, "--target", strategy()["id"], "--store", store
    )
    assert rc == 1 and out["outcome"] == "refused"
    assert "point the same way: not a contradiction" in out["messages"][0]
    assert "gains +22.12% (positive)" in out["messages"][0]
    assert not (store / "conflicts").exists()


def test_a_conflict_with_a_record_of_another_episode_is_refused(store, tmp_path, capsys):
    """An anti-strategy of another lever (4 of 5 episode_key parts agree: confidence 0.8) contradicts nothing."""
    other = variant(anti_strategy(), "0b0b0b")
    other["episode_key"] = other["episode_key"].replace("tma_row_loads", "another_lever")
    path = write(tmp_path / "o.json", other)
    rc, out = in_process(capsys, "commit", "conflict", "--input", path, "--target", strategy()["id"], "--store", store)
    assert rc == 1 and any("match confidence 0.8" in m and "different episodes" in m for m in out["messages"])
    assert not (store / "conflicts").exists()


def test_a_forced_conflict_records_why(store, tmp_path, capsys):
    same_way = write(tmp_path / "s.json", variant(strategy(), "5b5b5b"))
    args = ("commit", "conflict", "--input", same_way, "--target", strategy()["id"], "--store", store, "--force")
    rc, out = in_process(capsys, *args)
    assert rc == 1 and "--force needs a --reason" in out["messages"][-1]
    rc, out = in_process(capsys, *args, "--reason", "the shapes differ: 4096 vs 8192 rows")
    assert rc == 0 and out["outcome"] == "conflict-filed" and out["forced"] is True
    doc = json.loads((store / out["path"]).read_text())
    assert doc["conflict_reason"].startswith("filed by force: the shapes differ: 4096 vs 8192 rows (overriding: ")
    assert "point the same way" in doc["conflict_reason"] and not commits.conflict_errors()(doc)


def test_a_conflict_reason_names_each_side_rightly(store, tmp_path, capsys):
    failed = variant(anti_strategy(), "0c0c0c")
    failed["episode_key"] = strategy()["episode_key"]  # the same lever, failed in another run
    failed["retrieval"]["scope"]["operator_family"] = strategy()["retrieval"]["scope"]["operator_family"]
    failed["id"] = strategy()["id"][:-7] + "a0c0c0c"
    rc, out = in_process(
        capsys,
        "commit",
        "conflict",
        "--input",
        write(tmp_path / "f.json", failed),
        "--target",
        strategy()["id"],
        "--store",
        store,
    )
    assert rc == 0, out
    reason = json.loads((store / out["path"]).read_text())["conflict_reason"]
    assert reason == (
        f"opposite directions: the existing strategy {strategy()['id']!r} gains +22.12% (positive), "
        f"the incoming anti-strategy {failed['id']!r} loses 3.10% (negative)"
    )


# --- commit-all ----------------------------------------------------------------------------------------


def test_commit_all_out_writes_the_outcomes_and_says_what_it_did(store, tmp_path, capsys):
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    fresh = variant(strategy(), "e1e1e1")
    fresh["episode_key"] = fresh["episode_key"].replace("online_softmax", "fresh_lever")
    bad = variant(anti_strategy(), "e2e2e2")
    bad["id"] = "nvidia.hopper.bad"
    write(staging / "a.json", fresh)
    write(staging / "b.json", bad)
    proposals = tmp_path / "reports" / "match.json"
    command.main(["match", "--all", str(tmp_path / "staging"), "--store", str(store), "--out", str(proposals)])
    capsys.readouterr()
    out_file = tmp_path / "reports" / "outcomes.json"
    rc = command.main(["commit-all", "--proposals", str(proposals), "--store", str(store), "--out", str(out_file)])
    said = capsys.readouterr().out.splitlines()
    assert rc == 1 and json.loads(out_file.read_text())["counts"] == {"inserted": 1, "refused": 1}
    assert said[0] == f"commit-all: inserted 1, refused 1 (every outcome in {out_file})"
    assert said[1].startswith("  refused nvidia.hopper.bad: action 'refuse': ")
