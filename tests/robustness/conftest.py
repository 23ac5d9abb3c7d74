"""Fixtures of the hostile-input tests."""

import json
import os

import pytest

from tests.robustness.hostile_kit import CANARY


@pytest.fixture
def outside(tmp_path):
    """A directory outside every trace: a canary file and a FIFO (reading it would block)."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.json").write_text(json.dumps({"performance": {"latency_us_geomean": 1.0}, "note": CANARY}))
    os.mkfifo(d / "fifo")
    return d
