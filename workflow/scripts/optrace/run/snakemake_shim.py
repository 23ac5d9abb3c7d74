"""The two places the workflow reaches past Snakemake's documented API, kept here and nowhere else.

tests/workflow/test_snakemake_shim.py runs real Snakemake against each: when a release changes what
they rely on, that test fails (not a run, silently).
"""

from __future__ import annotations

import threading
from typing import Any


def uses_conda(workflow: Any) -> bool:
    """Whether this run deploys software with conda (`--sdm conda`): then a job's `python` is its conda
    env's, which finds the package through PYTHONPATH. Snakemake documents the flag, not a way for a
    Snakefile to read it; `workflow.deployment_settings` is the settings object its API was given."""
    methods = workflow.deployment_settings.deployment_method
    return any(getattr(m, "name", "") == "CONDA" for m in methods)


# Snakemake's scheduler starts a threading.Timer of the rate limiter's timespan for every scheduling
# round that leaves jobs waiting, and Python waits for each pending one before the controller exits.
SCHEDULER_TIMER = "JobScheduler._schedule_reevalutation.<locals>.<lambda>"


def cancel_rescheduling_timers() -> int:
    """Cancel the scheduler's pending re-evaluation timers once the run is over (onsuccess/onerror);
    returns how many were pending. Other threads' timers are left alone."""
    cancelled = 0
    for thread in threading.enumerate():
        function = getattr(thread, "function", None)
        if isinstance(thread, threading.Timer) and getattr(function, "__qualname__", "") == SCHEDULER_TIMER:
            thread.cancel()
            cancelled += 1
    return cancelled
