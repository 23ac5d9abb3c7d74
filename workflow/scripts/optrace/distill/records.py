"""Which files of `distilled/<slug>/` are records: one rule for validation and for the workflow's digest;
and distill's copies of them (the drafts file) for jobs that cannot see the area.

A record is a `*.json` file directly in the folder that is not hidden (an agent's temp file) and not
a directory; a symlink is listed like a file (validation refuses to read it, and says so).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from optrace.errors import InputError
from optrace.jsonio import load_or_none, open_regular, parse_untrusted, read_bytes, write_text_atomic

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
        h.update(os.fsencode(entry.name) + f"\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
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


# ---- distill's copies of its records (the drafts file) ------------------------------------------------
# A job that shares no file system with the controller (isolated jobs, #30) cannot see the records area:
# distill's declared output `work/<slug>/drafts.json` carries the bytes of every record its packets have
# in the area when it ends, and validation and stage read the area and those copies, a file in the area
# first. On one machine the area holds every record the copies hold, so nothing changes there.
DRAFTS_FORMAT = 1


def _text(data: bytes) -> str:
    """Bytes as a JSON string that gives the same bytes back (undecodable ones as lone surrogates)."""
    return data.decode("utf-8", "surrogateescape")


def drafts_json(slug: str, records: dict[str, bytes]) -> str:
    body = {name: _text(data) for name, data in sorted(records.items())}
    return json.dumps({"format": DRAFTS_FORMAT, "slug": slug, "records": body}, ensure_ascii=True) + "\n"


def read_drafts(path: Path | None, slug: str) -> dict[str, bytes]:
    """name -> bytes of trace `slug`'s drafts file; {} for none given or a failed trace's placeholder
    (no `records`)."""
    if path is None:
        return {}
    with open_regular(path) as fh:
        doc, error = parse_untrusted(fh.read())
    if error is not None or not isinstance(doc, dict):
        raise InputError(path, f"drafts file: {error or 'not a JSON object'}")
    if doc.get("slug", slug) != slug or doc.get("format", DRAFTS_FORMAT) != DRAFTS_FORMAT:
        raise InputError(path, f"is not a drafts file of trace {slug} (format {DRAFTS_FORMAT})")
    records = doc.get("records", {})
    if not isinstance(records, dict) or not all(isinstance(v, str) for v in records.values()):
        raise InputError(path, "drafts file: `records` is not an object of texts")
    out = {}
    for name, text in records.items():
        try:  # a lone surrogate of the copy's own escapes (U+DC80-U+DCFF) is a byte; any other is no text
            out[name.encode("utf-8").decode("utf-8")] = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise InputError(path, f"drafts file: {name!r} holds text that is not UTF-8") from None
        if not _is_record_name(name):
            raise InputError(path, f"drafts file names {name!r}, not a record file name")
    return out


def shown_name(name: str) -> str:
    """A record file's name as reports print it: a name the file system holds as undecodable bytes
    (listed as lone surrogates) shows them as \\xNN escapes, so the reports stay JSON text."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _is_record_name(name: str) -> bool:
    return name.endswith(".json") and not name.startswith(".") and "/" not in name and "\0" not in name


@dataclass(frozen=True)
class TraceRecords:
    """One trace's records as validation and stage read them: the area's files, then distill's copies of
    records the area does not hold (a job that cannot see the area)."""

    area: Path
    drafts: dict[str, bytes]

    @cached_property
    def in_area(self) -> frozenset[str]:
        return frozenset(record_names(self.area))

    def names(self) -> list[str]:
        return sorted(self.in_area | set(self.drafts))

    def read(self, name: str, cap: int) -> tuple[bytes | None, str | None]:
        """(bytes, None) or (None, why not), as a record file is read: no link followed, no FIFO opened."""
        if shown_name(name) != name:
            return None, "its file name is not UTF-8 text; not read"
        if name in self.in_area or name not in self.drafts:
            return read_bytes(self.area / name, cap)
        data = self.drafts[name]
        return (data, None) if len(data) <= cap else (None, f"{len(data)} bytes, over the {cap}-byte limit; not read")
