"""The reviewer's loop (#29), with real snakemake: the drafter's per-packet progress reaches the console,
and deleting a record and re-running re-drafts exactly that packet, then nothing is stale."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.support.workflow import run_snakemake

pytestmark = pytest.mark.workflow


def test_a_deleted_record_is_drafted_again_and_alone(workdir):
    env = {k: v for k, v in os.environ.items() if k != "ATREX_WIKI_DENYLIST"}
    first = run_snakemake(workdir, env=env)
    # a run without a denylist says so before anything else of its own
    own = [ln for ln in first.stderr.splitlines() if not ln.startswith("Using workflow specific profile")]
    assert own[0].startswith("warning: no denylist: $ATREX_WIKI_DENYLIST is unset"), own[:3]
    stated = run_snakemake(workdir, "-n", env={**env, "ATREX_WIKI_DENYLIST": "none"})
    assert "no denylist" not in stated.stdout + stated.stderr
    progress = re.findall(r"^(\d+)/(\d+) \S+: \S+", first.stdout + first.stderr, re.M)
    assert progress and progress[-1][0] == progress[-1][1]  # every packet's line, on the console
    records = sorted((workdir / "results" / "distilled").glob("*/*.json"))
    assert records
    gone = records[len(records) // 2]
    gone.unlink()
    again = run_snakemake(workdir)
    assert gone.is_file()
    (report,) = (workdir / "results" / "staging" / "reports").glob("*/distill.json")
    outcomes = {p["output"].rsplit("/", 1)[-1]: p["outcome"] for p in json.loads(report.read_text())["packets"]}
    assert outcomes[gone.name] == "drafted"
    assert {o for name, o in outcomes.items() if name != gone.name} <= {"skipped-exists", "skipped-thin"}
    assert "drafted" in again.stdout + again.stderr
    dry = run_snakemake(workdir, "-n")
    stale = [r for r in ("ingest_trace", "distill_trace", "validate_trace", "stage") if f"rule {r}:" in dry.stdout]
    assert not stale, dry.stdout[-2000:]  # only the summary target is left to run
