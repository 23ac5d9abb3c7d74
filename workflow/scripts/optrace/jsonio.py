"""Atomic, deterministic JSON I/O: every writer writes a temp file and renames, so a killed job leaves no torn file.

No output holds a non-finite number (NaN and Infinity are not JSON): writers turn them into null, the
project's "no number". `parse_untrusted` reads a trace's JSON without ever raising past one line.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

from optrace.errors import InputError


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()


def finite(obj: Any) -> Any:
    """`obj` with every NaN/Infinity float replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def _dumps(obj: Any, **kw: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, allow_nan=False, **kw)
    except ValueError:  # a non-finite float somewhere (rare): the slow path walks the object once
        return json.dumps(finite(obj), ensure_ascii=False, sort_keys=True, allow_nan=False, **kw)


def dumps(obj: Any) -> str:
    return _dumps(obj, indent=2) + "\n"


def dumps_compact(obj: Any) -> str:
    """One line, sorted keys: the C encoder (indent forces the pure-Python one), for machine-read files."""
    return _dumps(obj, separators=(",", ":")) + "\n"


def parse_untrusted(data: bytes | str) -> tuple[Any, str | None]:
    """(document, None) or (None, why it is not one): malformed, nested past Python's recursion limit, or
    holding an integer longer than Python's int-from-string limit. Undecodable bytes become U+FFFD."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno})"
    except RecursionError:
        return None, "JSON nested too deeply to parse"
    except ValueError as exc:  # int-str limit: "Exceeds the limit (4300 digits) ..."
        return None, f"JSON with an unparseable number ({str(exc).split(';')[0][:80]})"


def write_atomic(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """The project's one atomic writer: `write` fills a temp file beside `path` (mode as the user's umask
    gives), which then replaces `path` whole; a failed write leaves the old file and no temp file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    tmp = Path(name)
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; outputs are shared like any file the user writes
        os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a full disk's error then names the output it could not write
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_lines_atomic(path, (text,))


def write_lines_atomic(path: str | os.PathLike, pieces: Iterable[str]) -> None:
    """write_text_atomic of "".join(pieces), written piece by piece (no whole-file string in memory)."""

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(pieces)

    write_atomic(path, write)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_text_atomic(path, dumps(obj))


def write_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> None:
    write_lines_atomic(path, (_dumps(r) + "\n" for r in rows))


MAX_JSON_BYTES = 1 << 30  # no file the project reads back is near this; a (sparse) file past it is not read


def open_regular(path: str | os.PathLike, cap: int = MAX_JSON_BYTES, follow_links: bool = True) -> BinaryIO:
    """A regular file of at most `cap` bytes opened for reading, or the InputError a stage gives for anything
    else. Opened without blocking: a FIFO named like a saved file (the results tree is one anyone can edit)
    is refused, never waited on. `follow_links=False` for what agents write (a record): a link is refused."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fh = open(os.open(path, flags), "rb")  # noqa: SIM115 (returned open)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "not a regular file; not read") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})") from None
    st = os.fstat(fh.fileno())
    if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
        fh.close()
        raise InputError(
            path,
            "not a regular file; not read"
            if not stat.S_ISREG(st.st_mode)
            else f"{st.st_size} bytes, over the {cap}-byte limit; not read",
        )
    return fh


def read_bytes(path: Path, cap: int) -> tuple[bytes | None, str | None]:
    """(bytes, None) or (None, why not); a symbolic link is not followed and only a regular file is read
    (records come from agents: a FIFO named *.json would block the open, then the read, forever)."""
    try:
        with open_regular(path, cap, follow_links=False) as fh:
            return fh.read(), None
    except InputError as exc:
        return None, exc.problem
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"


def load_or_none(path: str | os.PathLike) -> Any:
    """The JSON document in a file the project wrote itself (a cache, a memo, a lock's record), or None when
    it cannot be read or parsed: missing, not a regular file, not UTF-8, malformed, or nested past the
    parser's depth (such a file is one anyone with the results tree can edit, and its reader then starts
    over)."""
    data = bytes_or_none(path)
    try:
        return json.loads(data) if data is not None else None
    except (ValueError, RecursionError, MemoryError):
        return None


def bytes_or_none(path: str | os.PathLike) -> bytes | None:
    """The bytes of a regular file of at most MAX_JSON_BYTES, else None (missing, a FIFO, a directory, huge)."""
    try:
        with open_regular(path) as fh:
            return fh.read()
    except (InputError, OSError, MemoryError):
        return None


def _parse_for_stage(where: str | os.PathLike, data: bytes, detail: bool) -> Any:
    """One document, or an InputError naming `where`: malformed, not UTF-8, nested past the parser's depth,
    or an integer past Python's int-from-string limit (json raises a plain ValueError for it)."""
    try:
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(where, f"not valid JSON ({exc if detail else exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise InputError(where, f"not valid JSON (not UTF-8: {exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise InputError(where, "not valid JSON (nested too deeply to parse)") from None
    except MemoryError:
        raise InputError(where, "too large to parse in the memory this machine has") from None
    except ValueError as exc:
        raise InputError(where, f"not valid JSON (an unparseable number: {str(exc).split(';')[0][:80]})") from None


def read_json(path: str | os.PathLike) -> Any:
    with open_regular(path) as fh:
        data = fh.read()
    return _parse_for_stage(path, data, detail=True)


def read_jsonl(path: str | os.PathLike) -> list[Any]:
    """The rows of a JSON Lines file, read line by line (a line ends at \\n, \\r or \\r\\n, as text mode reads)."""
    rows, lineno = [], 0
    with open_regular(path) as fh:
        for chunk in fh:
            for line in chunk.splitlines():
                lineno += 1
                if line.strip():
                    rows.append(_parse_for_stage(f"{path}:{lineno}", line, detail=False))
    return rows
