"""opt-trace-mining: turn GPU-kernel optimization traces into validated knowledge records."""

from importlib.resources import files
from pathlib import Path

__version__ = "0.1.0"

# Package data ships inside the package (pyproject's package-data), so an installed copy finds it in
# site-packages and a checkout in src/; an on-disk package's files() is a real directory.
PACKAGE_DIR = Path(str(files(__name__)))
SCHEMAS = PACKAGE_DIR / "schemas"
DEFAULT_TARGETS = PACKAGE_DIR / "ingest" / "targets.yaml"
EXAMPLE_SOURCES = PACKAGE_DIR / "example" / "sources"
