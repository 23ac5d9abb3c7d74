"""opt-trace-mining: turn GPU-kernel optimization traces into validated knowledge records."""

from pathlib import Path

__version__ = "0.1.0"

# The package lives in <repo>/workflow/scripts/optrace; schemas, config and resources sit at <repo>.
REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = REPO_ROOT / "schemas"
RESOURCES = REPO_ROOT / "resources"
