"""Reading a store: every `*.json` under `records/` (any depth) except `records/index.json`, parsed once.

A file that cannot be read or parsed is kept with its error, so the schema gate can FAIL it by path
while the other gates go on with the rest of the store.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from optrace.errors import InputError

INDEX_RELPATH = "records/index.json"
# Limits on a record (issue #10 classes 9 and 10). The real store's 847 records are at most 17.6 KB,
# their longest string 11 KB (a snippet) and their deepest nesting 5 levels: a record is at most
# 256 KiB, no string or key is longer than 16 Ki characters, nothing is nested deeper than 32 levels.
# Anything beyond is not a record and FAILs the schema gate by name, never a crash.
MAX_RECORD_BYTES = 256 * 1024
MAX_STRING_CHARS = 16 * 1024
MAX_DEPTH = 32
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


class NotJson(ValueError):
    """A number JSON cannot hold: Infinity/NaN literals, or a float that overflows to inf."""


def _no_constant(name: str) -> NoReturn:
    raise NotJson(f"{name} is not a JSON number")


def _finite(token: str) -> float:
    value = float(token)
    if value != value or value in (float("inf"), float("-inf")):
        raise NotJson(f"{token[:40]} overflows a double")
    return value


def _add(seen: set[str], key: str) -> bool:
    """Adds key to seen; False, so a generator can record and go on."""
    seen.add(key)
    return False


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    # a key written twice is read as its last value here and as its first by other readers: the gates
    # would judge one claim while the store serves another
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or _add(seen, k))
        raise NotJson(f"the key {twice[:40]!r} appears twice in one object")
    return out


def loads_strict(data: bytes | str) -> Any:
    """json.loads that refuses NaN/Infinity, numbers that overflow to inf and duplicate keys; it raises
    ValueError (NotJson, JSONDecodeError, UnicodeDecodeError, an over-long integer) or RecursionError."""
    return json.loads(data, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=_unique_keys)


SURROGATE = re.compile("[\ud800-\udfff]")  # a lone \\ud800 escape: valid JSON, but no text (cannot be UTF-8)
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _not_text(s: str) -> bool:
    return not s.isascii() and SURROGATE.search(s) is not None


def shape_problem(
    value: Any, max_string: int | None = MAX_STRING_CHARS, max_depth: int = MAX_DEPTH, surrogates: bool = True
) -> str | None:
    """Why a parsed value is not record-shaped (too deep, a string too long, a lone surrogate), or None;
    iterative. `surrogates=False` when the source text holds no surrogate escape."""
    if max_string is None and not surrogates:
        return _too_deep(value, max_depth)
    not_text = _not_text if surrogates else (lambda s: False)
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return f"nested deeper than {max_depth} levels"
        if isinstance(node, dict):
            for key, item in node.items():
                if max_string is not None and len(key) > max_string:
                    return f"a key of {len(key)} characters, over the {max_string}-character limit"
                if not_text(key):
                    return "a key holds a lone surrogate (\\ud800-\\udfff), which is not text"
                stack.append((item, depth + 1))
        elif isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)
        elif isinstance(node, str):
            if max_string is not None and len(node) > max_string:
                return f"a string of {len(node)} characters, over the {max_string}-character limit"
            if not_text(node):
                return "a string holds a lone surrogate (\\ud800-\\udfff), which is not text"
    return None


def _too_deep(value: Any, max_depth: int) -> str | None:
    """shape_problem when only the depth is to check: containers only are visited (a container at
    max_depth that holds anything holds it one level too deep)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        items = node.values() if isinstance(node, dict) else node
        if depth > max_depth or (depth == max_depth and items):
            return f"nested deeper than {max_depth} levels"
        stack.extend((item, depth + 1) for item in items if isinstance(item, (dict, list)))
    return None


_AS_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nests_under(raw: bytes, levels: int) -> bool:
    """The JSON text `raw` (parsed without error) nests fewer than `levels` containers, told from its bytes:
    True only when sure. With no NUL (UTF-16 and UTF-32 text holds one) and no backslash before a quote,
    every quote byte opens or closes a string, so the bytes between strings are the document's structure;
    each pass drops the innermost (empty) pairs of brackets. False (unsure) sends the caller to the walk."""
    if b'\\"' in raw or b"\x00" in raw:
        return False
    structure = b"".join(raw.split(b'"')[0::2]).translate(_AS_BRACKETS, _NOT_A_BRACKET)
    for _ in range(levels - 1):
        if not structure:
            return True
        structure = structure.replace(b"[]", b"")
    return not structure


def parse_json_bytes(data: bytes, max_string: int | None = MAX_STRING_CHARS) -> tuple[Any, str | None]:
    """(value, None) or (None, why not): any bytes at all give one of the two, never an exception."""
    try:
        value = loads_strict(data)
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return None, f"not a record: nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:  # NotJson, or an integer longer than Python converts
        return None, f"not valid JSON ({str(exc)[:120]})"
    # A lone surrogate can only come from a \\uD800-\\uDFFF escape (UTF-8 cannot carry one), and no string
    # is longer than the text it came from: skip those checks when the bytes rule them out.
    if max_string is not None and len(data) <= max_string:
        max_string = None
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    surrogates = SURROGATE_ESCAPE.search(raw) is not None
    if max_string is None and not surrogates and nests_under(raw, MAX_DEPTH):
        return value, None  # only the depth was left to check, and the bytes show it is within the limit
    problem = shape_problem(value, max_string, surrogates=surrogates)
    return (None, f"not a record: {problem}") if problem else (value, None)


NO_FAMILY = "misc"  # the store's directory for records without an operator family
SAFE_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")  # a directory or file name that cannot climb or hide


def store_path(record_type: object, scope: dict, record_id: object) -> str | None:
    """records/<type>/<vendor>/<arch>/<dsl>/<operator_family | misc>/<id>.json, the one layout staging,
    validation and admission share; None when a part is not a safe name (`..`, `/`, a dot file)."""
    parts = [
        record_type,
        scope.get("vendor"),
        scope.get("arch"),
        scope.get("dsl"),
        scope.get("operator_family") or NO_FAMILY,
        record_id,
    ]
    safe = [p for p in parts if isinstance(p, str) and SAFE_SEGMENT.match(p)]
    if len(safe) != len(parts):
        return None
    return f"records/{'/'.join(safe[:-1])}/{record_id}.json"


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
    out: list[str] = []
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
    index = (
        IndexFile(*read_json_file(str(index_path), MAX_INDEX_BYTES))
        if index_path.is_file()
        else IndexFile(None, "missing")
    )
    return Store(root, tuple(files), index)
