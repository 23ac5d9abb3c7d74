"""Fixtures shared by the whole suite; helpers live in tests/support/."""

import pytest

from tests.support.paths import SHARED_DATA
from tests.support.workflow import copy_workflow


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has none)")
    return SHARED_DATA


@pytest.fixture
def workdir(tmp_path):
    """A private copy of the workflow to run real snakemake in."""
    return copy_workflow(tmp_path / "wf")
