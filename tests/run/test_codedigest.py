"""Stage code closures (optrace.run.codedigest): a stage re-runs when a module it runs changes, and only then."""

from __future__ import annotations

from optrace import PACKAGE_DIR
from optrace.cli import MODULES
from optrace.run import codedigest


def files(command: str) -> set[str]:
    entry = MODULES[command].partition(".")[2]
    return {p.relative_to(PACKAGE_DIR).as_posix() for p in codedigest.closure(PACKAGE_DIR, entry)}


def test_stages_using_the_store_gates_include_the_modules_that_define_them():
    for command in ("distill", "validate", "check-store", "gate"):
        assert {"gates/store/runner.py", "gates/store/model.py", "gates/store/store.py"} <= files(command), command


def test_ingest_includes_the_validator_of_its_hardware_table_and_no_gate():
    ingest = files("ingest")
    assert {"ingest/hardware.py", "fastschema.py"} <= ingest
    assert not {f for f in ingest if f.startswith("gates/")}, "editing a gate would re-run every trace's ingest"
