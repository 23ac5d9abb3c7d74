"""The run's lifecycle (optrace.run.lifecycle): the lock record a controller keeps, and the summary
command a target runs. No timing: a "killed" controller is an entry whose process is gone."""

from __future__ import annotations

import json
import threading

from optrace.run import runlock, snakemake_shim
from optrace.run.lifecycle import Controller, main
from tests.robustness.test_runlock import dead_pid as a_dead_pid
from tests.robustness.test_runlock import locked


def test_a_started_controller_records_itself_and_forgets_itself_when_it_ends(tmp_path):
    sm = tmp_path / ".snakemake"
    controller = Controller(sm)
    controller.started()
    (entry,) = (sm / runlock.CONTROLLERS).iterdir()
    doc = json.loads(entry.read_text())
    assert doc["pid"] == __import__("os").getpid() and doc["start"] == runlock.start_time(doc["pid"])
    locked(sm)
    assert controller.clear_stale_locks() is None  # its own lock, while it runs
    assert (sm / "locks" / "0.input.lock").exists()
    controller.ended()
    assert not list((sm / runlock.CONTROLLERS).iterdir()) and controller.entry is None
    controller.ended()  # a second end (onerror after onsuccess) is harmless


def test_the_lock_of_a_controller_that_never_ended_is_cleared_by_the_next_one(tmp_path):
    """A killed controller never reaches `ended`: its entry names a process that is gone."""
    sm = tmp_path / ".snakemake"
    locked(sm)
    registry = sm / runlock.CONTROLLERS
    registry.mkdir()
    host = __import__("socket").gethostname()
    (registry / f"{host}-dead.json").write_text(json.dumps({"host": host, "pid": a_dead_pid(), "start": "1"}))
    note = Controller(sm).clear_stale_locks()
    assert note and "killed run" in note and not (sm / "locks").exists()
    assert not list(registry.iterdir())


def test_a_lock_is_kept_while_any_recorded_controller_lives(tmp_path):
    sm = tmp_path / ".snakemake"
    locked(sm)
    host = __import__("socket").gethostname()
    live = Controller(sm)
    live.started()
    (sm / runlock.CONTROLLERS / f"{host}-dead.json").write_text(
        json.dumps({"host": host, "pid": a_dead_pid(), "start": "1"})
    )
    assert Controller(sm).clear_stale_locks() is None and (sm / "locks" / "0.input.lock").exists()
    # the dead entry is gone, the live one stays: when that one ends, nothing holds the lock but Snakemake
    assert [p.name for p in (sm / runlock.CONTROLLERS).iterdir()] == [live.entry.name]
    live.ended()


def test_unregister_removes_exactly_its_own_entry(tmp_path):
    sm = tmp_path / ".snakemake"
    mine = runlock.register(sm, host="h")
    other = sm / runlock.CONTROLLERS / "h-other.json"
    other.write_text("{}")
    runlock.unregister(mine)
    assert not mine.exists() and other.exists()


def test_only_the_schedulers_timers_are_cancelled():
    """A timer of another thread of the controller keeps running; the scheduler's (by its function's
    qualified name, snakemake_shim.SCHEDULER_TIMER) are cancelled."""
    fired = threading.Event()
    others = threading.Timer(0.01, fired.set)

    def scheduler_like():
        return None

    scheduler_like.__qualname__ = snakemake_shim.SCHEDULER_TIMER
    pending = threading.Timer(3600, scheduler_like)
    pending.start()
    others.start()
    try:
        assert snakemake_shim.cancel_rescheduling_timers() == 1
        pending.join(5)
        assert not pending.is_alive()
        others.join(5)
        assert fired.is_set()
    finally:
        pending.cancel()


def test_the_summary_command_exits_1_for_a_failing_record_only_when_asked(tmp_path, capsys):
    from optrace.gates.validate import trace_report

    report = tmp_path / "reports/a/validation.json"
    report.parent.mkdir(parents=True)
    doc = trace_report("a", [], [])

    def row(name, failed):
        gates = {
            "schema": {"status": "FAIL" if failed else "PASS", "messages": ["m"] if failed else []},
            "store-overlap": {"status": "PASS", "messages": []},
        }
        return {
            **dict.fromkeys(("id", "episode_key", "seg_id", "sha256"), name),
            "path": f"distilled/a/{name}.json",
            "status": "FAIL" if failed else "PASS",
            "failed": ["schema"] if failed else [],
            "gates": gates,
        }

    doc["records"] = [row("x", True), row("y", False)]
    doc["counts"] = {"records": 2, "passed": 1, "failed": 1}
    report.write_text(json.dumps(doc))
    args = ["--slugs", "a", "--reports", str(tmp_path / "reports/{slug}/validation.json")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "strict is off" in text and "staging README" not in text  # no place the target does not declare
    assert main([*args, "--exits-because", "strict: true"]) == 1
    assert "this run exits 1 because a record failed (strict: true)" in capsys.readouterr().out


def test_a_failing_targets_log_holds_only_why_it_exits_1_and_a_passing_ones_the_summary():
    from optrace.run.lifecycle import log_text

    summary = "\nRun summary\n\n  total: 1 traces\n  this run exits 1 because a record failed (`snakemake validate`)\n"
    assert log_text(summary, 0) == summary
    failed = log_text(summary, 1)
    assert "Run summary" not in failed and "total:" not in failed
    assert failed.startswith("this run exits 1 because a record failed (`snakemake validate`)\n")
