"""The secret that makes what the results tree remembers unforgeable by whoever can write it.

The validation cache (optrace.gates.validate) lets a run skip work for inputs it has seen. It lives in
the results tree, which the agent whose records are judged can write, and it can compute every content
hash: a plain digest would let it write "PASS" for any bytes. So each entry carries an HMAC-SHA256 under a key kept OUTSIDE
the results tree (OPTRACE_CACHE_KEY names its file; default ~/.cache/optrace/validation-cache.key,
created 0600 on first use). An entry whose MAC does not verify is not believed: the work is done again.
When no key file can be kept, a per-process key is used: nothing remembered then ever verifies, which
is slow but never wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path

CACHE_KEY_ENV = "OPTRACE_CACHE_KEY"  # path of the HMAC key file; default below
DEFAULT_CACHE_KEY = Path("~/.cache/optrace/validation-cache.key")

_PROCESS_KEY = secrets.token_bytes(32)


def cache_key_path() -> Path:
    return Path(os.environ.get(CACHE_KEY_ENV) or DEFAULT_CACHE_KEY).expanduser()


def cache_secret() -> bytes:
    """The HMAC key: read from (or created at) cache_key_path(), else a per-process key (said once on
    stderr, with why: a FIFO, a key others can read or write, an unwritable or non-directory home)."""
    path = cache_key_path()
    home = os.environ.get("HOME")
    if not os.environ.get(CACHE_KEY_ENV) and home is not None and not os.path.isabs(home):
        # an empty or relative $HOME puts the key at / or under the working directory (the results tree)
        _note_fallback(path, f"is not kept: $HOME ({home!r}) is not an absolute path")
        return _PROCESS_KEY
    if not path.is_absolute():
        _note_fallback(path, f"is not kept: {CACHE_KEY_ENV} is not an absolute path")
        return _PROCESS_KEY
    key, problem = _read_key(path)
    if key is not None:
        return key
    if problem == "absent":
        key, problem = _create_key(path)
        if key is not None:
            return key
    _note_fallback(path, problem)
    return _PROCESS_KEY


def _read_key(path: Path) -> tuple[bytes | None, str]:
    """(key, "") or (None, why not): opened without blocking and without following a symlink, and
    trusted only when it is a regular file of this user that nobody else can read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, f"cannot be opened ({exc.strerror})"
    with open(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "is not a regular file (a FIFO, device or directory)"
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None, "can be read or written by another user (it must be this user's, mode 0600)"
        key = fh.read(4096)
    return (key, "") if len(key) >= 32 else (None, "holds fewer than 32 bytes")


def _create_key(path: Path) -> tuple[bytes | None, str]:
    """A new key written whole to a private file, then linked into place: a process racing this one
    reads either no key or the complete key of whichever linked first."""
    key = secrets.token_hex(32).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")  # mode 0600
    except OSError as exc:  # $HOME a file, read-only, full: nothing can be kept
        return None, f"cannot be created ({exc.strerror})"
    try:
        with open(fd, "wb") as fh:
            fh.write(key)
        os.link(tmp, path)
    except FileExistsError:
        return _read_key(path)
    except OSError as exc:
        return None, f"cannot be created ({exc.strerror})"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key, ""


_noted: set[Path] = set()


def _note_fallback(path: Path, problem: str) -> None:
    if path not in _noted:
        _noted.add(path)
        print(
            f"note: cache key {path} {problem}; a per-process key is used, so nothing cached is reused "
            f"(set {CACHE_KEY_ENV} to a file of your own to keep the cache)",
            file=sys.stderr,
        )


def mac(secret: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of the parts, length-prefixed so no two splits of the same bytes agree."""
    h = hmac.new(secret, digestmod=hashlib.sha256)
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def verifies(secret: bytes, claimed: object, *parts: bytes) -> bool:
    return isinstance(claimed, str) and hmac.compare_digest(claimed, mac(secret, *parts))
