"""Reading a store: every `*.json` under `records/` (any depth) except `records/index.json`, parsed once.

A file that cannot be read or parsed is kept with its error, so the schema gate can FAIL it by path
while the other gates go on with the rest of the store.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

INDEX_RELPATH = "records/index.json"
# Shipped records are at most ~18 KB; anything far larger is not a record and is not parsed.
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_INDEX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class RecordFile:
    relpath: str  # POSIX, relative to the store root: records/<type>/.../<id>.json
    record: Any = None  # parsed JSON (any type) when error is None
    error: str | None = None


@dataclass(frozen=True)
class IndexFile:
    data: Any = None
    error: str | None = None  # "missing", "not valid JSON (...)"


@dataclass(frozen=True)
class Store:
    root: Path
    files: tuple[RecordFile, ...]
    index: IndexFile


def parse_json_bytes(data: bytes) -> tuple[Any, str | None]:
    try:
        return json.loads(data), None
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"


def read_json_file(path: str, cap: int) -> tuple[Any, str | None]:
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > cap:
                return None, f"{size} bytes, over the {cap}-byte limit; not read"
            data = fh.read()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    return parse_json_bytes(data)


def record_relpaths(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root / "records"):
        dirnames.sort()
        rel = Path(dirpath).relative_to(root).as_posix()
        out.extend(f"{rel}/{name}" for name in sorted(filenames) if name.endswith(".json"))
    return [p for p in out if p != INDEX_RELPATH]


def load_store(store_root: str | os.PathLike) -> Store:
    root = Path(store_root)
    if not (root / "records").is_dir():
        raise InputError(root, "not a store: it has no records/ directory")
    files = []
    for rel in record_relpaths(root):
        record, error = read_json_file(os.path.join(root, rel), MAX_RECORD_BYTES)
        files.append(RecordFile(rel, record, error))
    index_path = root / INDEX_RELPATH
    index = IndexFile(*read_json_file(str(index_path), MAX_INDEX_BYTES)) if index_path.is_file() \
        else IndexFile(None, "missing")
    return Store(root, tuple(files), index)
