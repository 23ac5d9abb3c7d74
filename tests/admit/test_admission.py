"""`optrace gate`: admission into a live store that never leaves it invalid.

Stores are real directories: a small one built here from the specimen records, and a copy of the
847-record upstream store (skipped without ../shared). Concurrency and crash tests use separate
processes and a real SIGKILL.
"""

import copy
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from optrace.admit import command, commits
from optrace.admit import proposals as matching
from optrace.admit import store_match as storematch
from optrace.admit.live_store import INTENT_NAME, LOCK_NAME, PAUSE_ENV, GateStore
from optrace.gates.store.model import FAIL
from optrace.gates.store.runner import run_store_gates
from optrace.gates.store.specimens import anti_strategy, reference_kernel, strategy
from tests.support.paths import ROOT, SHARED_DATA
from tests.support.schemas import load_schema

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}


# --- helpers ----------------------------------------------------------------------------------------


def check_store_fails(root: Path) -> dict:
    return {r.gate: r.messages for r in run_store_gates(root, ()) if r.status == FAIL}


def empty_store(root: Path) -> Path:
    (root / "records").mkdir(parents=True)
    (root / "records" / "index.json").write_text(
        json.dumps({"schema": "clean-1.3", "generated_by": "test", "builder_version": "t", "count": 0, "records": []})
    )
    return root


def writable_copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dest.chmod(dest.stat().st_mode | stat.S_IWUSR)
    return dest


@pytest.fixture
def real_store(tmp_path):
    if not (SHARED_DATA / "upstream-store" / "records").is_dir():
        pytest.skip("../shared/data/upstream-store is absent")
    return writable_copy(SHARED_DATA / "upstream-store", tmp_path / "store")


def write(path: Path, record) -> Path:
    path.write_text(json.dumps(record, indent=1))
    return path


def variant(record: dict, tail: str, pct: float | None = None, same_run: bool = False) -> dict:
    """The same episode under another content hash: another trace's run of the same lever (its own commit
    and its own measured latencies), or, `same_run`, the same run's evidence again (a trace listed twice
    under two names: same commit, same numbers)."""
    rec = copy.deepcopy(record)
    rec["id"] = rec["id"][:-6] + tail
    if not same_run:
        rec["evidence"]["raw"]["git_commit"] = (tail * 7)[:40]
        effect = rec["evidence"]["raw"].get("effect", {})
        for key in ("new_geomean_us", "parent_geomean_us"):
            if key in effect:  # another run measures other absolute numbers
                effect[key] = round(effect[key] * (1 + (int(tail, 16) % 997 + 1) / 1e5), 4)
    if pct is not None:
        gain = rec["worth"]["gain"]
        gain["pct"] = gain["metrics"][0]["delta_pct"] = pct
    return rec


def run_gate(*args) -> tuple[int, dict | None, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "optrace", "gate", *map(str, args)], capture_output=True, text=True, env=ENV
    )
    try:
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    return proc.returncode, out, proc.stderr


def in_process(capsys, *args) -> tuple[int, dict]:
    rc = command.main([str(a) for a in args])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def index_of(root: Path) -> dict:
    return json.loads((root / "records" / "index.json").read_text())


def stray_files(root: Path) -> list[str]:
    """Hidden files anywhere in the store except the lock: temp files, a leftover intent."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*") if p.name != LOCK_NAME)


@pytest.fixture
def own_store(tmp_path, capsys):
    """A store of our own holding the specimen strategy and anti-strategy, inserted by the gate."""
    root = empty_store(tmp_path / "own")
    for rec in (strategy(), anti_strategy()):
        rc, out = in_process(
            capsys, "commit", "insert", "--input", write(tmp_path / f"{rec['id']}.json", rec), "--store", root
        )
        assert rc == 0 and out["outcome"] == "inserted", out
    assert check_store_fails(root) == {}
    return root


# --- round trips ------------------------------------------------------------------------------------


def test_insert_stamps_the_computed_rank_not_the_callers(tmp_path, capsys):
    root = empty_store(tmp_path / "s")
    rec = strategy()
    rec["worth"]["rank"] = {"score": 1.0, "tier": "proven"}
    rec["worth"]["track"]["counters"]["verified_effective"] = 40
    rec["worth"]["track"]["prior"] = {"step_gain_pct": 100.0}
    rc, out = in_process(capsys, "commit", "insert", "--input", write(tmp_path / "in.json", rec), "--store", root)
    assert rc == 0
    stored = json.loads((root / out["path"]).read_text())
    assert stored["worth"]["rank"]["tier"] == "promising" and stored["worth"]["rank"]["score"] < 1.0
    assert stored["worth"]["track"]["counters"]["verified_effective"] == 0
    assert stored["worth"]["track"]["prior"]["step_gain_pct"] == rec["worth"]["gain"]["pct"]
    assert check_store_fails(root) == {}


def test_confirm_counts_once_and_conflict_files_are_valid_and_unique(own_store, tmp_path, capsys):
    s = strategy()
    same_way = write(tmp_path / "confirm.json", variant(s, "bbbbbb"))
    before = same_way.read_bytes()
    rc, proposal = in_process(capsys, "match", "--input", same_way, "--store", own_store)
    assert rc == 0 and proposal["action"] == "confirm" and proposal["target"] == s["id"]
    assert proposal["episode_key_matches"] == [s["id"]]
    for expected in ("confirmed", "already-counted"):
        rc, out = in_process(
            capsys, "commit", "confirm", "--input", same_way, "--target", s["id"], "--store", own_store
        )
        assert rc == 0 and out["outcome"] == expected and out["verified_effective"] == 1
        assert check_store_fails(own_store) == {}
    assert same_way.read_bytes() == before  # the caller's file is never rewritten
    entry = next(e for e in index_of(own_store)["records"] if e["id"] == s["id"])
    target = json.loads((own_store / entry["path"]).read_text())
    (key,) = target["worth"]["track"]["confirm_keys"]
    assert key.startswith(f"{s['id']}:{s['id'][:-6]}bbbbbb@")  # the store's pair, then the run's tokens
    assert entry["worth_score"] == target["worth"]["rank"]["score"] > 0.6805  # rescored, index follows

    other_way = write(tmp_path / "conflict.json", variant(s, "cccccc", pct=-4.5))
    rc, proposal = in_process(capsys, "match", "--input", other_way, "--store", own_store)
    assert proposal["action"] == "conflict" and proposal["target"] == s["id"]
    rc, out = in_process(capsys, "commit", "confirm", "--input", other_way, "--target", s["id"], "--store", own_store)
    assert rc == 1 and "conflict, not a confirm" in out["messages"][0]
    paths = []
    for _ in range(3):  # within one second: names must still differ
        rc, out = in_process(
            capsys, "commit", "conflict", "--input", other_way, "--target", s["id"], "--store", own_store
        )
        assert rc == 0 and out["outcome"] == "conflict-filed"
        paths.append(out["path"])
    assert len(set(paths)) == 3
    ours = jsonschema.Draft202012Validator(load_schema("conflict.schema.json"))
    upstream = SHARED_DATA / "upstream-store" / "conflict.schema.json"
    theirs = jsonschema.Draft202012Validator(json.loads(upstream.read_text())) if upstream.is_file() else None
    for p in paths:
        doc = json.loads((own_store / p).read_text())
        assert not list(ours.iter_errors(doc))
        assert theirs is None or not list(theirs.iter_errors(doc))
        assert doc["match_confidence"] == 1.0 and doc["incoming_record"] == json.loads(other_way.read_text())
    assert check_store_fails(own_store) == {}


def test_unknown_target_is_an_error_and_changes_nothing(own_store, tmp_path, capsys):
    incoming = write(tmp_path / "in.json", variant(strategy(), "dddddd"))
    index_before = (own_store / "records" / "index.json").read_bytes()
    for action in ("confirm", "conflict"):
        rc, out = in_process(
            capsys, "commit", action, "--input", incoming, "--target", "nvidia.x.y.z.nope", "--store", own_store
        )
        assert rc == 1 and out["outcome"] == "refused" and "not in the store" in out["messages"][0]
    assert (own_store / "records" / "index.json").read_bytes() == index_before
    assert not (own_store / "conflicts").exists() or not list((own_store / "conflicts").iterdir())


def test_round_trips_on_the_real_store(real_store, tmp_path, capsys):
    for rec in (strategy(), anti_strategy(), reference_kernel()):  # reference kernel links to the strategy
        rc, out = in_process(
            capsys, "commit", "insert", "--input", write(tmp_path / "in.json", rec), "--store", real_store
        )
        assert rc == 0, out
    assert check_store_fails(real_store) == {}
    assert index_of(real_store)["count"] == 850
    # a shipped record without worth.track (the reference's confirm wrote a partial one: schema FAIL)
    shipped = next(e for e in index_of(real_store)["records"] if e["type"] == "technique-card")
    path = real_store / shipped["path"]
    rec = json.loads(path.read_text())
    del rec["worth"]["track"]
    path.write_text(json.dumps(rec, ensure_ascii=False, indent=1) + "\n")
    assert check_store_fails(real_store) == {}
    incoming = write(tmp_path / "c.json", variant(strategy(), "eeeeee"))
    rc, out = in_process(
        capsys, "commit", "confirm", "--input", incoming, "--target", shipped["id"], "--store", real_store
    )
    assert rc == 0 and out["outcome"] == "confirmed"
    track = json.loads(path.read_text())["worth"]["track"]
    assert track["counters"]["verified_effective"] == 1 and len(track["counters"]) == 6
    assert check_store_fails(real_store) == {}
    # a strategy against a technique card of another episode is no contradiction: refused, unless forced
    rc, out = in_process(
        capsys, "commit", "conflict", "--input", incoming, "--target", shipped["id"], "--store", real_store
    )
    assert rc == 1 and out["outcome"] == "refused" and "different episodes" in " ".join(out["messages"])
    rc, out = in_process(
        capsys,
        "commit",
        "conflict",
        "--input",
        incoming,
        "--target",
        shipped["id"],
        "--store",
        real_store,
        "--force",
        "--reason",
        "the card's advice contradicts this measurement",
    )
    assert rc == 0 and out["forced"] and 0 <= out["match_confidence"] < 1
    doc = json.loads((real_store / out["path"]).read_text())
    assert doc["conflict_reason"].startswith("filed by force: the card's advice contradicts this measurement")
    assert check_store_fails(real_store) == {}


def test_match_on_the_real_store_lists_same_scope_candidates(real_store, tmp_path, capsys):
    shipped = index_of(real_store)["records"]
    anti = next(e for e in shipped if e["type"] == "anti-strategy" and e["retrieval"]["scope"]["dsl"] != "any")
    rec = copy.deepcopy(anti_strategy())
    scope = anti["retrieval"]["scope"]
    rec["retrieval"]["scope"].update(
        vendor=scope["vendor"],
        arch=scope["arch"],
        dsl="any",
        operator_family=scope["operator_family"],
        product=scope.get("product"),
    )
    rec["retrieval"]["generality"].update(arch=scope["arch"], language="any")
    rec["episode_key"] = "|".join([scope["arch"], "any", scope["operator_family"] or "x", "tma_row_loads", "operator"])
    rec["retrieval"]["scope"]["operator_family"] = scope["operator_family"] or "x"
    rec["id"] = (
        f"{scope['vendor']}.{scope['arch']}.any.{rec['retrieval']['scope']['operator_family']}.tma-row-loads-a41c07e"
    )
    rc, out = in_process(
        capsys, "match", "--input", write(tmp_path / "m.json", rec), "--store", real_store, "--max-candidates", "0"
    )
    assert rc == 0, out.get("errors")
    want = {
        e["id"]
        for e in shipped
        if e["retrieval"]["scope"]["vendor"] == scope["vendor"]
        and e["retrieval"]["scope"]["arch"] == scope["arch"]
        and e["retrieval"]["scope"].get("operator_family") == rec["retrieval"]["scope"]["operator_family"]
    }
    assert {c["id"] for c in out["candidates"]} == want and out["candidates_count"] == len(want)
    # dsl `any` the other way: a triton record still sees the store's dsl:any records of its scope
    rec["retrieval"]["scope"]["dsl"] = "triton"
    rec["retrieval"]["generality"]["language"] = "triton"
    rec["episode_key"] = rec["episode_key"].replace("|any|", "|triton|")
    rec["id"] = rec["id"].replace(".any.", ".triton.")
    rc, out = in_process(
        capsys, "match", "--input", write(tmp_path / "m.json", rec), "--store", real_store, "--max-candidates", "0"
    )
    assert {c["id"] for c in out["candidates"]} == {
        i for i in want if next(e for e in shipped if e["id"] == i)["retrieval"]["scope"]["dsl"] in ("triton", "any")
    }


# --- what the reference admitted and the store then failed ------------------------------------------


def _short_id(rec):
    rec["id"] = "x.y"


def _mechanism(phrase):
    def edit(rec):
        rec["payload"]["established_fact"]["mechanism"] = (
            f"Retried with {phrase} after the wait, the bulk copy adds latency."
        )

    return edit


def _traversal(rec):
    rec["retrieval"]["scope"]["operator_family"] = "../../../escape"


def _no_evidence(rec):
    del rec["evidence"]


def _episode_key(rec):
    rec["episode_key"] = "ampere|cuda|something|else|generic"


def _id_not_a_string(rec):
    # an unhashable id: admission once put it into a set and crashed (found by mypy)
    rec["id"] = [rec["id"]]


def _not_object(rec):
    rec.clear()
    rec["__list__"] = True


@pytest.mark.parametrize(
    "edit",
    [
        _short_id,
        _mechanism("no kernel change"),
        _mechanism("consecutive dead-end"),
        _traversal,
        _no_evidence,
        _episode_key,
        _id_not_a_string,
        _not_object,
    ],
    ids=[
        "id-with-2-segments",
        "store-only-phrase",
        "gate-only-phrase",
        "path-traversal",
        "no-evidence-block",
        "episode-key-disagrees",
        "id-not-a-string",
        "not-an-object",
    ],
)
def test_a_record_the_store_would_reject_is_refused(own_store, tmp_path, capsys, edit):
    rec = anti_strategy()
    rec["id"] = rec["id"][:-6] + "ffffff"
    rec["episode_key"] = rec["episode_key"].replace("tma_row_loads", "other_lever")
    edit(rec)
    body = [1, 2] if rec.get("__list__") else rec
    index_before = (own_store / "records" / "index.json").read_bytes()
    rc, out = in_process(
        capsys, "commit", "insert", "--input", write(tmp_path / "bad.json", body), "--store", own_store
    )
    assert rc == 1 and out["outcome"] == "refused" and out["messages"]
    assert (own_store / "records" / "index.json").read_bytes() == index_before
    assert not list(own_store.rglob("*escape*"))
    rc, out = in_process(capsys, "match", "--input", tmp_path / "bad.json", "--store", own_store)
    assert rc == 1 and out["action"] == "refuse" and out["errors"] and "candidates" not in out


def test_insert_refuses_an_episode_the_store_holds(own_store, tmp_path, capsys):
    rc, out = in_process(
        capsys,
        "commit",
        "insert",
        "--input",
        write(tmp_path / "v.json", variant(strategy(), "aaaaaa")),
        "--store",
        own_store,
    )
    assert rc == 1 and "confirm it or file a conflict" in out["messages"][0]


# --- concurrency and crashes -----------------------------------------------------------------------


def test_eight_concurrent_inserts_all_land(own_store, tmp_path):
    paths = []
    for i in range(8):
        rec = variant(strategy(), f"{i:06x}")
        rec["episode_key"] = rec["episode_key"].replace("online_softmax", f"lever_{i}")
        paths.append(write(tmp_path / f"c{i}.json", rec))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "optrace", "gate", "commit", "insert", "--input", str(p), "--store", str(own_store)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for p in paths
    ]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _, _ in results), results
    index = index_of(own_store)
    assert index["count"] == len(index["records"]) == 10
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []


def _kill_in_window(args, store: Path, tmp_path: Path, nth: int = 1) -> None:
    marker = tmp_path / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-m", "optrace", "gate", *map(str, args), "--store", str(store)],
        env={**ENV, PAUSE_ENV: f"{marker}:{nth}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the commit never reached the pause"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    marker.unlink()


def test_a_commit_killed_between_record_and_index_leaves_a_recoverable_store(own_store, tmp_path, capsys):
    rec = variant(strategy(), "123456")
    rec["episode_key"] = rec["episode_key"].replace("online_softmax", "crash_lever")
    incoming = write(tmp_path / "crash.json", rec)
    _kill_in_window(["commit", "insert", "--input", incoming], own_store, tmp_path)
    # inside the window: the record file is there, the index does not list it, the intent says so
    assert (own_store / INTENT_NAME).exists()
    assert list(own_store.rglob(f"{rec['id']}.json")) and rec["id"] not in {
        e["id"] for e in index_of(own_store)["records"]
    }
    assert "index" in check_store_fails(own_store)
    rc, out, err = run_gate("commit", "insert", "--input", incoming, "--store", own_store)
    assert rc == 0 and out["outcome"] == "inserted", err
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []

    # a confirm killed after rewriting the target: the re-run finds it counted and the index right
    confirming = write(tmp_path / "conf.json", variant(strategy(), "654321"))
    _kill_in_window(["commit", "confirm", "--input", confirming, "--target", strategy()["id"]], own_store, tmp_path)
    assert "index" in check_store_fails(own_store)
    rc, out, err = run_gate(
        "commit", "confirm", "--input", confirming, "--target", strategy()["id"], "--store", own_store
    )
    assert rc == 0 and out["outcome"] == "already-counted" and out["verified_effective"] == 1, err
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []


def test_commit_all_killed_inside_a_group_is_undone_and_the_rerun_admits_everything(own_store, tmp_path):
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    ids = []
    for i in range(5):
        rec = variant(strategy(), f"a{i:05x}")
        rec["episode_key"] = rec["episode_key"].replace("online_softmax", f"group_lever_{i}")
        write(staging / f"{i}.json", rec)
        ids.append(rec["id"])
    proposals = tmp_path / "staging" / "reports" / "match.json"
    assert (
        command.main(["match", "--all", str(tmp_path / "staging"), "--store", str(own_store), "--out", str(proposals)])
        == 0
    )
    _kill_in_window(["commit-all", "--proposals", proposals], own_store, tmp_path, nth=3)
    assert len([p for p in own_store.rglob("*.json") if p.stem in ids]) == 3  # written, never committed
    assert "index" in check_store_fails(own_store)
    rc, out, err = run_gate("commit-all", "--proposals", proposals, "--store", own_store)
    assert rc == 0 and out["counts"] == {"inserted": 5}, err
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []


def test_recover_undoes_an_unfinished_insert_and_removes_temp_files(own_store, capsys):
    rel = "records/strategy/nvidia/hopper/triton/x/nvidia.hopper.triton.x.half-aaaaaa.json"
    (own_store / rel).parent.mkdir(parents=True)
    (own_store / rel).write_text("{}")
    (own_store / rel).with_name(".nvidia.hopper.triton.x.half-aaaaaa.json.tmp1").write_text("{")
    (own_store / "records" / ".index.json.tmpz").write_text("[")
    (own_store / INTENT_NAME).write_text(
        json.dumps({"pending": [{"op": "insert", "id": "nvidia.hopper.triton.x.half-aaaaaa", "path": rel}]})
    )
    assert check_store_fails(own_store)
    assert command.main(["recover", "--store", str(own_store)]) == 0
    assert "undid the unfinished insert" in capsys.readouterr().out
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []


# --- batches: match --all and commit-all ------------------------------------------------------------


def test_match_all_then_commit_all_continues_past_a_refusal(own_store, tmp_path, capsys):
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    fresh = variant(strategy(), "777777")
    fresh["episode_key"] = fresh["episode_key"].replace("online_softmax", "batch_lever")
    confirm = variant(strategy(), "888888")
    bad = variant(anti_strategy(), "999999")
    bad["id"] = "nvidia.hopper.bad"
    changed = variant(strategy(), "abcdef")
    changed["episode_key"] = changed["episode_key"].replace("online_softmax", "changed_lever")
    for name, rec in (("a", fresh), ("b", confirm), ("c", bad), ("d", changed)):
        write(staging / f"{name}.json", rec)
    out_file = tmp_path / "staging" / "reports" / "match.json"
    rc = command.main(["match", "--all", str(tmp_path / "staging"), "--store", str(own_store), "--out", str(out_file)])
    assert rc == 1  # one record fails validation
    report = json.loads(out_file.read_text())
    actions = {p["id"]: p["action"] for p in report["proposals"]}
    assert actions == {fresh["id"]: "insert", confirm["id"]: "confirm", bad["id"]: "refuse", changed["id"]: "insert"}
    assert report["counts"] == {"confirm": 1, "insert": 2, "refuse": 1}
    changed["payload"]["goal"] = "edited after review"
    write(staging / "d.json", changed)
    capsys.readouterr()
    rc, out = in_process(capsys, "commit-all", "--proposals", out_file, "--store", own_store)
    assert rc == 1
    outcomes = {o["id"]: o["outcome"] for o in out["outcomes"]}
    assert outcomes == {
        fresh["id"]: "inserted",
        confirm["id"]: "confirmed",
        bad["id"]: "refused",
        changed["id"]: "refused",
    }
    assert check_store_fails(own_store) == {}
    rc, out = in_process(capsys, "commit-all", "--proposals", out_file, "--store", own_store)
    outcomes = {o["id"]: o["outcome"] for o in out["outcomes"]}
    assert outcomes[fresh["id"]] == "refused" and outcomes[confirm["id"]] == "already-counted"


def _one_episode_batch(staging: Path) -> tuple[dict, dict, dict]:
    """Three staged records of one new episode, as traces that found one lever give them: a strategy, the
    same lever kept by another run (same direction), and one where it failed (opposite direction)."""
    first, again, failed = (
        variant(strategy(), "111111"),
        variant(strategy(), "222222"),
        variant(anti_strategy(), "333333"),
    )
    key = strategy()["episode_key"].replace("online_softmax", "batch_episode")
    for name, rec in (("c", first), ("b", again), ("a", failed)):  # file order is not commit order
        rec["episode_key"] = key
        write(staging / f"{name}.json", rec)
    return first, again, failed


@pytest.mark.parametrize("group", [commits.GROUP, 1], ids=["one-transaction", "a-transaction-each"])
def test_a_batch_inserts_an_episode_once_and_confirms_or_conflicts_the_rest(
    own_store, tmp_path, capsys, monkeypatch, group
):
    monkeypatch.setattr(commits, "GROUP", group)  # 1: the target is committed by an earlier transaction
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    first, again, failed = _one_episode_batch(staging)
    out_file = tmp_path / "staging" / "reports" / "match.json"
    rc = command.main(["match", "--all", str(tmp_path / "staging"), "--store", str(own_store), "--out", str(out_file)])
    assert rc == 0
    proposals = json.loads(out_file.read_text())["proposals"]
    assert [(p["id"], p["action"], p["target"]) for p in proposals] == [
        (first["id"], "insert", None),
        (again["id"], "confirm", first["id"]),
        (failed["id"], "conflict", first["id"]),
    ]
    assert "inserted first" in proposals[1]["reason"] and proposals[2]["episode_key_matches"] == [first["id"]]
    capsys.readouterr()
    rc, out = in_process(capsys, "commit-all", "--proposals", out_file, "--store", own_store)
    assert rc == 0 and out["counts"] == {"confirmed": 1, "conflict-filed": 1, "inserted": 1}, out
    index = index_of(own_store)
    assert index["count"] == 3 and first["id"] in {e["id"] for e in index["records"]}
    entry = next(e for e in index["records"] if e["id"] == first["id"])
    stored = json.loads((own_store / entry["path"]).read_text())
    assert stored["worth"]["track"]["counters"]["verified_effective"] == 1
    assert [k.partition("@")[0] for k in stored["worth"]["track"]["confirm_keys"]] == [f"{first['id']}:{again['id']}"]
    conflict = json.loads((own_store / out["outcomes"][2]["path"]).read_text())
    assert conflict["existing_record_id"] == first["id"] and conflict["match_confidence"] == 1.0
    assert check_store_fails(own_store) == {} and stray_files(own_store) == []


def test_an_episode_the_live_store_holds_is_confirmed_by_every_record_of_the_batch(own_store, tmp_path, capsys):
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    for tail in ("444444", "555555"):
        write(staging / f"{tail}.json", variant(strategy(), tail))
    report = matching.match_files(GateStore(own_store), matching.staged_files(tmp_path / "staging"), 0, str)
    assert [(p["action"], p["target"]) for p in report["proposals"]] == [("confirm", strategy()["id"])] * 2


def test_store_root_comes_from_config_live_store(own_store, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(f"live_store: {own_store}\n")
    rc, out = in_process(capsys, "match", "--input", write(tmp_path / "s.json", strategy()), "--config", config)
    assert rc == 0 and out["action"] == "present"
    config.write_text("live_store: ''\n")
    with pytest.raises(Exception, match="no live store"):
        command.main(["match", "--input", str(tmp_path / "s.json"), "--config", str(config)])


def test_holdings_count_by_type_and_list_the_closest(own_store):
    entries = index_of(own_store)["records"]
    held = storematch.holdings(entries, "nvidia", "hopper", "fused-softmax-h4096")
    assert held["same_operator_by_type"] == {"anti-strategy": 1, "strategy": 1}
    assert {c["id"] for c in held["closest"]} == {strategy()["id"], anti_strategy()["id"]}
    assert storematch.holdings(entries, "amd", "cdna3", "gemm")["same_hardware"] == 0


# --- the workflow: promote writes proposals only; recon and the README see the live store -----------


def test_promote_writes_proposals_only_and_commit_all_admits_them(workdir, tmp_path, capsys):
    from tests.support.workflow import run_snakemake

    store = empty_store(tmp_path / "live")
    for rec in (strategy(), anti_strategy()):  # same hardware as the example trace (an H100), other operator
        assert (
            command.main(["commit", "insert", "--input", str(write(tmp_path / "in.json", rec)), "--store", str(store)])
            == 0
        )
    capsys.readouterr()
    index_before = (store / "records" / "index.json").read_bytes()
    run_snakemake(workdir, "promote", "readme", "--config", f"live_store={store}")
    assert (store / "records" / "index.json").read_bytes() == index_before  # proposals only
    results = workdir / "results"
    staged = json.loads((results / "staging" / "staged.json").read_text())["staged"]
    proposals_file = results / "staging" / "reports" / "match.json"
    report = json.loads(proposals_file.read_text())
    assert sorted(p["id"] for p in report["proposals"]) == sorted(s["id"] for s in staged) and staged
    assert report["counts"] == {"insert": len(staged)}
    readme = (results / "staging" / "README.md").read_text()
    assert "## Admission into the live store" in readme and f"insert {len(staged)}" in readme
    recon_md = next((results / "staging" / "reports").glob("*/recon.md")).read_text()
    assert "on nvidia hopper: 2 records (anti-strategy 1, strategy 1)" in recon_md
    assert f"closest: `{strategy()['id']}`" in recon_md

    # another trace's run of one staged lever reaches the store first: its episode is held, so that
    # record is still staged (validation does not fail it) and promote proposes a confirm
    held = next(s for s in staged if s["type"] == "strategy")
    held_rec = json.loads((results / "staging" / held["path"]).read_text())
    assert (
        command.main(
            [
                "commit",
                "insert",
                "--input",
                str(write(tmp_path / "held.json", variant(held_rec, "abcdef"))),
                "--store",
                str(store),
            ]
        )
        == 0
    )
    capsys.readouterr()
    run_snakemake(workdir, "promote", "readme", "--config", f"live_store={store}")
    assert json.loads((results / "staging" / "staged.json").read_text())["staged"] == staged
    report = json.loads(proposals_file.read_text())
    assert report["counts"] == {"insert": len(staged) - 1, "confirm": 1}
    assert (
        next(p for p in report["proposals"] if p["action"] == "confirm")["target"] == variant(held_rec, "abcdef")["id"]
    )
    assert "confirm 1" in (results / "staging" / "README.md").read_text()

    rc = command.main(["commit-all", "--proposals", str(proposals_file), "--store", str(store)])
    outcomes = json.loads(capsys.readouterr().out)
    assert rc == 0 and outcomes["counts"] == {"inserted": len(staged) - 1, "confirmed": 1}
    assert check_store_fails(store) == {} and index_of(store)["count"] == 3 + len(staged) - 1
    # re-running after admission fails nothing: what was just admitted holds its own id and episode
    run_snakemake(workdir, "promote", "readme", "--config", f"live_store={store}")
    assert json.loads((results / "staging" / "staged.json").read_text())["staged"] == staged
    assert json.loads(proposals_file.read_text())["counts"] == {"present": len(staged) - 1, "confirm": 1}


def test_conflict_schema_is_a_real_schema_that_rejects_the_references_files():
    schema = load_schema("conflict.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    doc = commits.conflict_document(
        variant(strategy(), "cccccc", pct=-4.5), strategy(), None, __import__("datetime").datetime(2026, 1, 2, 3, 4, 5)
    )
    assert not list(validator.iter_errors(doc)) and not commits.conflict_errors()(doc)
    reference_like = {k: v for k, v in doc.items() if k != "match_confidence"}  # what the reference wrote
    assert list(validator.iter_errors(reference_like)) and commits.conflict_errors()(reference_like)
    assert commits.conflict_errors()({**doc, "created": "2026-01-02 03:04"})


@pytest.mark.parametrize(
    "rtype,pct,want",
    [
        ("anti-strategy", 12.0, "negative"),
        ("strategy", 3.0, "positive"),
        ("strategy", -3.0, "negative"),
        ("strategy", 0, "unknown"),
        ("strategy", None, "positive"),
        ("technique-card", None, "unknown"),
    ],
)
def test_direction_rule(rtype, pct, want):
    assert storematch.direction(rtype, pct) == want


def test_a_match_of_unknown_direction_is_left_to_review(own_store, tmp_path, capsys):
    flat = variant(strategy(), "0f0f0f", pct=0.0)
    flat["worth"]["gain"]["basis"] = "measured"
    _rc, out = in_process(capsys, "match", "--input", write(tmp_path / "f.json", flat), "--store", own_store)
    assert out["action"] == "review" and out["target"] == strategy()["id"]


def test_a_repeat_mark_is_the_same_technique_for_closeness():
    """`tma_row_loads#2` (a trace's second episode of that lever) ranks the store's `tma_row_loads` record
    before other techniques of the same type, though it is not the same episode."""
    repeat = anti_strategy()
    repeat["episode_key"] = repeat["episode_key"].replace("tma_row_loads", "tma_row_loads#2")
    same, other = anti_strategy(), variant(anti_strategy(), "0a0a0a")
    other["episode_key"] = other["episode_key"].replace("tma_row_loads", "another_lever")
    entries = {r["id"]: r for r in (other, same)}
    catalogue = storematch.Catalogue(entries)
    assert [e["id"] for e in catalogue.candidates({**repeat, "id": "x"})] == [same["id"], other["id"]]
    assert (
        catalogue.episode_matches(repeat) == []
        and storematch.match_confidence(repeat["episode_key"], same["episode_key"]) == 0.8
    )


def test_the_same_runs_evidence_again_is_not_an_independent_confirmation(own_store, tmp_path, capsys):
    # a trace listed twice (or copied under another name) gives records with other ids but the same
    # commits: counted, it would confirm itself. Refused by commit confirm, sent to review by the batch
    s = strategy()
    copy_of_it = write(tmp_path / "copy.json", variant(s, "dddddd", same_run=True))
    rc, out = in_process(capsys, "commit", "confirm", "--input", copy_of_it, "--target", s["id"], "--store", own_store)
    assert rc == 1 and "not an independent confirmation" in out["messages"][0]
    entry = next(e for e in index_of(own_store)["records"] if e["id"] == s["id"])
    assert json.loads((own_store / entry["path"]).read_text())["worth"]["track"]["counters"]["verified_effective"] == 0
    staging = tmp_path / "staging" / "records"
    staging.mkdir(parents=True)
    other_run, its_copy = variant(s, "eeeeee"), variant(s, "ffffff")
    its_copy["evidence"]["raw"]["git_commit"] = other_run["evidence"]["raw"]["git_commit"]
    for rec in (other_run, its_copy):
        write(staging / f"{rec['id'][-6:]}.json", rec)
    report = matching.match_files(GateStore(own_store), matching.staged_files(tmp_path / "staging"), 0, str)
    assert [(p["id"], p["action"], p["target"]) for p in report["proposals"]] == [
        (other_run["id"], "confirm", s["id"]),
        (its_copy["id"], "review", other_run["id"]),
    ]
    assert "one run counted twice" in report["proposals"][1]["reason"]


@pytest.mark.parametrize("copied", ["commit", "measurements"])
def test_a_confirmers_run_again_in_a_later_batch_is_not_counted_twice(own_store, tmp_path, capsys, copied):
    """The confirm key carries the confirming run's tokens (`<target>:<id>@m<digest>+c<commit>`, still a
    string of confirm_keys: no contract change), so a copy committed in a later batch is refused: by its
    evidence commit (a trace listed twice) or by its measurements (a copy whose commits were rewritten)."""
    s = strategy()
    other_run = variant(s, "eeeeee")
    its_copy = copy.deepcopy(other_run)
    its_copy["id"] = other_run["id"][:-6] + "ffffff"
    if copied == "measurements":
        its_copy["evidence"]["raw"]["git_commit"] = "f" * 40  # only authors and dates rewritten
    outcomes = []
    for rec in (other_run, its_copy):
        path = write(tmp_path / f"{rec['id'][-6:]}.json", rec)
        rc, out = in_process(capsys, "commit", "confirm", "--input", path, "--target", s["id"], "--store", own_store)
        outcomes.append((rc, out["outcome"]))
    assert outcomes == [(0, "confirmed"), (1, "refused")]
    assert "already confirmed" in out["messages"][0] and other_run["id"] in out["messages"][0]
    entry = next(e for e in index_of(own_store)["records"] if e["id"] == s["id"])
    track = json.loads((own_store / entry["path"]).read_text())["worth"]["track"]
    assert track["counters"]["verified_effective"] == 1 and len(track["confirm_keys"]) == 1
    assert track["confirm_keys"][0].startswith(f"{s['id']}:{other_run['id']}@")
    assert check_store_fails(own_store) == {}


def test_commit_all_says_the_staging_readme_is_stale_once_the_store_changed():
    from optrace.admit.command import outcome_lines

    quiet = {"counts": {"skipped": 1}, "outcomes": [{"outcome": "skipped", "id": "a", "messages": ["review"]}]}
    assert not any("snakemake staging" in line for line in outcome_lines(quiet, None))
    for changed in ("inserted", "confirmed", "conflict-filed"):
        report = {"counts": {changed: 1}, "outcomes": [{"outcome": changed, "id": "a"}]}
        assert "run `snakemake staging` to rewrite it" in outcome_lines(report, None)[-1]
