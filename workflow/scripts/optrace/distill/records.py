"""Which files of `distilled/<slug>/` are records: one rule for validation and for the workflow's digest.

A record is a `*.json` file directly in the folder that is not hidden (an agent's temp file) and not
a directory; a symlink is listed like a file (validation refuses to read it, and says so).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def _entries(distilled: Path) -> list[os.DirEntry]:
    if not distilled.is_dir():
        return []
    return sorted(
        (
            e
            for e in os.scandir(distilled)
            if e.name.endswith(".json") and not e.name.startswith(".") and not e.is_dir(follow_symlinks=False)
        ),
        key=lambda e: e.name,
    )


def record_names(distilled: Path) -> list[str]:
    """The record files of one trace, sorted (no record yet: no directory, no names)."""
    return [e.name for e in _entries(distilled)]


def records_digest(distilled: Path) -> str:
    """Names, sizes and mtimes of the record files: cheap to take, and changes with any record (the
    workflow's param that re-runs one trace's validation after an agent batch)."""
    h = hashlib.sha256()
    for entry in _entries(distilled):
        st = entry.stat(follow_symlinks=False)
        h.update(f"{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
