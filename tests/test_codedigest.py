"""Stage code closures (optrace.codedigest) follow imports that run lazily too: optrace.storegates loads
its exports on first use (PEP 562), and a stage that uses them must still re-run when a gate changes."""

from __future__ import annotations

from pathlib import Path

import optrace
from optrace import codedigest

PKG = Path(optrace.__file__).parent


def files(stage: str) -> set[str]:
    return {str(p.relative_to(PKG)) for p in codedigest.closure(PKG, stage)}


def test_stages_using_storegates_names_include_the_modules_that_define_them():
    for stage in ("distill", "validate", "check_store", "gate"):
        assert {"storegates/runner.py", "storegates/model.py", "storegates/store.py"} <= files(stage), stage


def test_ingest_includes_the_validator_of_its_hardware_table():
    assert {"hardware.py", "storegates/fastschema.py"} <= files("ingest")
