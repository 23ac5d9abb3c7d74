"""Where the tests find the repository, its package data and the real data beside it."""

from pathlib import Path

from optrace import EXAMPLE_SOURCES, PACKAGE_DIR, SCHEMAS  # noqa: F401  (re-exported for tests)

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
FIXTURES = ROOT / "tests" / "fixtures"
