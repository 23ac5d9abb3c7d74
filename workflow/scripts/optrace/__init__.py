"""opt-trace-mining: turn GPU-kernel optimization traces into validated knowledge records."""

from pathlib import Path

__version__ = "0.1.0"

# Package data ships inside the package (pyproject's package-data), so an installed copy finds it in
# site-packages and a checkout in workflow/scripts/. This is the directory importlib.resources.files
# names for an installed package (tests/workflow/test_install.py checks it on a wheel install), taken
# without importing importlib.resources, which every job would pay for at start-up.
PACKAGE_DIR = Path(__file__).resolve().parent
SCHEMAS = PACKAGE_DIR / "schemas"
DEFAULT_TARGETS = PACKAGE_DIR / "ingest" / "targets.yaml"
EXAMPLE_SOURCES = PACKAGE_DIR / "example" / "sources"
