"""Atomic, deterministic JSON I/O: every writer writes a temp file and renames, so a killed job leaves no torn file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from .errors import InputError


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def dumps_compact(obj: Any) -> str:
    """One line, sorted keys: the C encoder (indent forces the pure-Python one), for machine-read files."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_lines_atomic(path, (text,))


def write_lines_atomic(path: str | os.PathLike, pieces: Iterable[str]) -> None:
    """write_text_atomic of "".join(pieces), written piece by piece (no whole-file string in memory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; outputs are shared like any file the user writes
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(pieces)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path, obj: Any) -> None:
    write_text_atomic(path, dumps(obj))


def write_jsonl(path, rows: Iterable[Any]) -> None:
    write_lines_atomic(path, (json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))


def read_json(path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not valid JSON ({exc})") from None


def read_jsonl(path) -> list[Any]:
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise InputError(f"{path}:{lineno}", f"not valid JSON ({exc.msg})") from None
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    return rows
