"""The realistic suites share one fixture: three realistic traces, mined once per module."""

from tests.realistic.test_realistic import mined  # noqa: F401  (a fixture, found by name)
