"""Injection tests for all 19 gates on the drafter's records of the example trace: each planted defect
makes exactly its gate FAIL and names the record. A gate without a case, or a case that finds no record
to plant into, fails the suite (the reference let a skipped case pass).
"""

from __future__ import annotations

import pytest

from optrace.errors import InputError
from optrace.gates import validate
from optrace.gates.store import injection as store_injection
from optrace.gates.trace import injection
from optrace.gates.trace.injection import (
    TRACE_INJECTIONS,
    TraceInjection,
    check_baseline,
    covered_gates,
    format_outcomes,
    mine_example,
    run_injections,
    run_trace_injection,
    workbench,
)
from optrace.gates.trace.runner import ALL_GATES

CASES = [*store_injection.INJECTIONS, *TRACE_INJECTIONS]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return workbench(mine_example(tmp_path_factory.mktemp("example")))


@pytest.fixture(scope="module")
def outcomes(bench):
    return {(o.injection.gate, o.injection.name): o for o in run_injections(bench)}


def case_id(case) -> str:
    return f"{case.gate}/{case.name}"


def test_every_one_of_the_19_gates_has_a_case():
    assert len(ALL_GATES) == 19
    assert {c.gate for c in CASES} == set(ALL_GATES)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_case_fires_exactly_its_gate_on_a_real_passing_record(outcomes, case):
    outcome = outcomes[case.gate, case.name]
    assert outcome.relpath is not None, "no suitable record: a case that cannot plant is a failure, not a skip"
    assert outcome.failed == (case.gate,) and outcome.named, outcome


@pytest.mark.parametrize(
    "name,kinds",
    [
        ("episode_key another record of the trace holds", {"episode_key"}),
        ("id another record of the trace claims", {"id", "episode_key"}),  # the copy holds both
    ],
)
def test_a_within_trace_duplicate_fails_for_what_is_duplicated(bench, name, kinds):
    case = next(c for c in TRACE_INJECTIONS if c.gate == "store-overlap" and c.name == name)
    planted = injection.plant(bench, case)
    assert planted is not None
    verdicts = injection.validate_records(planted.bench, planted.records, planted.live)
    messages = verdicts[planted.i].gates["store-overlap"][1]
    assert all("is also claimed by" in m for m in messages), messages
    assert {m.split(": ", 1)[1].split(" ", 1)[0] for m in messages} == kinds


def test_covered_gates_are_all_defined_gates(outcomes):
    assert covered_gates(list(outcomes.values())) == set(ALL_GATES)


def test_the_planted_records_are_the_drafters(bench):
    assert bench.records and all(rel.startswith(f"distilled/{bench.slug}/") for rel, _ in bench.records)
    assert {rec["type"] for _, rec in bench.records} == {"strategy", "anti-strategy", "reference-kernel"}


def test_a_defect_that_does_not_fire_is_missed(bench):
    noop = TraceInjection("verbatim", "changes nothing", lambda p: True, lambda p: None)
    outcome = run_trace_injection(bench, noop)
    assert not outcome.fired and outcome.failed == ()
    assert format_outcomes([outcome]).startswith("MISSED verbatim/changes nothing")


def test_a_case_without_a_suitable_record_is_missed_not_skipped(bench):
    nowhere = TraceInjection("layout", "suits nothing", lambda p: False, lambda p: None)
    outcome = run_trace_injection(bench, nowhere)
    assert not outcome.fired and "no suitable record" in format_outcomes([outcome])


def test_the_cli_fails_when_a_case_misses_or_a_gate_is_uncovered(monkeypatch, capsys):
    kept = tuple(i for i in TRACE_INJECTIONS if i.gate != "store-overlap")
    monkeypatch.setattr(injection, "TRACE_INJECTIONS", kept)
    assert validate.main(["--injection-tests"]) == 1
    assert "not proven: store-overlap" in capsys.readouterr().out


def test_the_cli_proves_all_19_gates(capsys):
    assert validate.main(["--injection-tests"]) == 0
    out = capsys.readouterr().out
    assert "MISSED" not in out and out.rstrip().endswith("19 of 19 gates proven to fire")


def test_records_that_already_fail_are_refused(bench):
    rel, record = bench.records[0]
    broken = type(bench)(bench.slug, bench.packets, bench.trace, ((rel, {**record, "notes": "x"}),) + bench.records[1:])
    with pytest.raises(InputError, match="before any defect is planted"):
        check_baseline(broken)
