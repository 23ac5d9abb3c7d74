"""Which files of `distilled/<slug>/` are records: one rule for validation and for the workflow's digest.

A record is a `*.json` file directly in the folder that is not hidden (an agent's temp file) and not
a directory; a symlink is listed like a file (validation refuses to read it, and says so).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from optrace.jsonio import load_or_none, write_text_atomic

# Outcomes after which a packet's record exists (a skipped-thin packet never had one).
WROTE = ("drafted", "agent-wrote", "skipped-exists")


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


def deleted_records(report: Path, results: Path) -> list[str]:
    """The records distill's last report says exist that are gone now (relative to the results root)."""
    data = load_or_none(report)
    packets = data.get("packets") if isinstance(data, dict) else None
    if not isinstance(packets, list):
        return []
    named = [p.get("output") for p in packets if isinstance(p, dict) and p.get("outcome") in WROTE]
    return sorted(o for o in named if isinstance(o, str) and not (results / o).exists())


def mark_deleted(marker: Path, report: Path, results: Path) -> Path:
    """distill's input that changes only when a record it wrote is deleted: its content (what is gone,
    and when that was seen) then changes, so distill is stale; a new record leaves it alone."""
    gone = deleted_records(report, results)
    if gone or not marker.exists():
        stamp = f"seen {time.time_ns()}\n" if gone else ""
        write_text_atomic(marker, "".join(f"{g}\n" for g in gone) + stamp)
    return marker
