"""Injection tests: for every store gate, planting its defect in a passing store makes exactly that gate
FAIL and name the record. Each case runs on our specimen store (always) and on a subset of the real
store copied into tmp_path (when ../shared/data is present); a gate without a case fails the suite.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from optrace.errors import InputError
from optrace.gates.store.injection import INJECTIONS, Injection, plant, run_injection, run_injections, specimen_store
from optrace.gates.store.model import GATES
from optrace.gates.store.store import Store, load_store
from optrace.publish import check_store
from tests.support.paths import SHARED_DATA

STORE = SHARED_DATA / "upstream-store"
PER_TYPE = 3  # real records of each type in the subset


def write_store(store: Store, root: Path) -> Path:
    for f in store.files:
        path = root / f.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(f.record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (root / "records").mkdir(parents=True, exist_ok=True)
    (root / "records/index.json").write_text(json.dumps(store.index.data, indent=1) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def real_subset(tmp_path_factory) -> Store:
    """A few real records of each type, copied with their own index entries (count adjusted)."""
    if not STORE.is_dir():
        pytest.skip("../shared/data/upstream-store is absent")
    index = json.loads((STORE / "records/index.json").read_text(encoding="utf-8"))
    taken: dict[str, int] = {}
    entries = []
    for entry in sorted(index["records"], key=lambda e: e["path"]):
        if taken.get(entry["type"], 0) < PER_TYPE:
            taken[entry["type"]] = taken.get(entry["type"], 0) + 1
            entries.append(entry)
    root = tmp_path_factory.mktemp("real-subset")
    for entry in entries:
        (root / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STORE / entry["path"], root / entry["path"])
    (root / "records/index.json").write_text(json.dumps({**index, "count": len(entries), "records": entries}))
    return load_store(root)


@pytest.fixture(scope="module")
def specimens() -> Store:
    return specimen_store()


def case_id(injection: Injection) -> str:
    return f"{injection.gate}/{injection.name}"


def test_every_gate_has_an_injection_case():
    assert {i.gate for i in INJECTIONS} == set(GATES)


@pytest.mark.parametrize("injection", INJECTIONS, ids=case_id)
def test_injection_fires_on_our_specimens(specimens, injection):
    outcome = run_injection(specimens, injection)
    assert outcome.relpath is not None, "no suitable specimen record"
    assert outcome.failed == (injection.gate,) and outcome.named, outcome


@pytest.mark.parametrize("injection", INJECTIONS, ids=case_id)
def test_injection_fires_on_real_records(real_subset, injection):
    outcome = run_injection(real_subset, injection)
    assert outcome.relpath is not None, "no suitable real record"
    assert outcome.failed == (injection.gate,) and outcome.named, outcome


FIRST_PER_GATE = [next(i for i in INJECTIONS if i.gate == gate) for gate in GATES]


@pytest.mark.parametrize("injection", FIRST_PER_GATE, ids=case_id)
def test_check_store_on_a_planted_copy_fails_that_gate_and_names_the_record(
    request, specimens, injection, tmp_path, capsys
):
    store = request.getfixturevalue("real_subset") if STORE.is_dir() else specimens
    mutated, relpath = plant(store, injection)
    assert check_store.main([str(write_store(mutated, tmp_path))]) == 1
    out = capsys.readouterr().out
    failing = [line.split()[1] for line in out.splitlines() if line.startswith("FAIL ")]
    assert failing == [injection.gate]
    assert f"    {relpath}: " in out


def test_cli_injection_tests_prove_every_gate_fires_on_the_specimens(capsys):
    assert check_store.main(["--injection-tests"]) == 0
    out = capsys.readouterr().out
    assert "MISSED" not in out and out.rstrip().endswith(f"{len(GATES)} of {len(GATES)} gates proven to fire")


def test_a_defect_that_does_not_fire_is_reported_as_missed(specimens):
    noop = Injection("schema", "changes nothing", lambda draft, i: True, lambda draft, i: None)
    outcome = run_injection(specimens, noop)
    assert not outcome.fired and outcome.failed == ()


def test_injections_refuse_a_store_that_already_fails(specimens):
    broken, _ = plant(specimens, INJECTIONS[0])
    with pytest.raises(InputError, match="before any defect is planted"):
        run_injections(broken)
