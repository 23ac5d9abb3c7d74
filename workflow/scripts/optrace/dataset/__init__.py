"""Stage family dataset: ingest outputs -> the lean cost-model dataset.

`from optrace.dataset import load` is the dataset's reading API (README "What it produces").
"""

from optrace.dataset.loader import load

__all__ = ["load"]
