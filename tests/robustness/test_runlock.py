"""Stale Snakemake locks (optrace.run.runlock): cleared only when this host knows their owner is dead."""

import json
import os
import subprocess
import sys

from optrace.run import runlock


def locked(sm):
    (sm / "locks").mkdir(parents=True)
    (sm / "locks" / "0.input.lock").write_text("results/x\n")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_lock_of_a_dead_controller_on_this_host_is_cleared(tmp_path):
    sm = tmp_path / ".snakemake"
    locked(sm)
    (sm / runlock.CONTROLLERS).mkdir()
    (sm / runlock.CONTROLLERS / "h-1.json").write_text(json.dumps({"host": "h", "pid": dead_pid(), "start": "1"}))
    note = runlock.clear_stale_locks(sm, host="h")
    assert note and "killed run" in note and not (sm / "locks").exists()
    assert not list((sm / runlock.CONTROLLERS).iterdir())


def test_a_live_controller_or_another_hosts_keeps_its_lock(tmp_path):
    sm = tmp_path / ".snakemake"
    locked(sm)
    me = runlock.register(sm, host="h")  # this very process: alive
    assert runlock.clear_stale_locks(sm, host="h") is None and (sm / "locks" / "0.input.lock").exists()
    runlock.unregister(me)
    (sm / runlock.CONTROLLERS / "other-7.json").write_text(json.dumps({"host": "other", "pid": dead_pid()}))
    assert runlock.clear_stale_locks(sm, host="h") is None and (sm / "locks" / "0.input.lock").exists()


def test_a_reused_pid_is_not_the_controller_that_registered(tmp_path):
    sm = tmp_path / ".snakemake"
    locked(sm)
    (sm / runlock.CONTROLLERS).mkdir()
    entry = {"host": "h", "pid": os.getpid(), "start": "not-this-process-start"}
    (sm / runlock.CONTROLLERS / "h-reused.json").write_text(json.dumps(entry))
    assert runlock.clear_stale_locks(sm, host="h") is not None and not (sm / "locks").exists()


def test_locks_nobody_registered_are_left_alone(tmp_path):
    sm = tmp_path / ".snakemake"
    locked(sm)
    assert runlock.clear_stale_locks(sm, host="h") is None and (sm / "locks" / "0.input.lock").exists()
