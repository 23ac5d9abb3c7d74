"""The secret that makes what the results tree remembers unforgeable by whoever can write it.

The validation cache (optrace.gates.validate) and the staging memo (optrace.publish.staging) let a run
skip work for inputs it has seen. Both live in the results tree, which the agent whose records are
judged can write, and it can compute every content hash: a plain digest would let it write "PASS" for
any bytes, or a staged copy of its own. So each entry carries an HMAC-SHA256 under a key kept OUTSIDE
the results tree (OPTRACE_CACHE_KEY names its file; default ~/.cache/optrace/validation-cache.key,
created 0600 on first use). An entry whose MAC does not verify is not believed: the work is done again.
When no key file can be kept, a per-process key is used: nothing remembered then ever verifies, which
is slow but never wrong.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

CACHE_KEY_ENV = "OPTRACE_CACHE_KEY"  # path of the HMAC key file; default below
DEFAULT_CACHE_KEY = Path("~/.cache/optrace/validation-cache.key")

_PROCESS_KEY = secrets.token_bytes(32)


def cache_key_path() -> Path:
    return Path(os.environ.get(CACHE_KEY_ENV) or DEFAULT_CACHE_KEY).expanduser()


def cache_secret() -> bytes:
    """The HMAC key: read from (or created at) cache_key_path(), else a per-process key."""
    path = cache_key_path()
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:
            key = fh.read(4096)
        if len(key) >= 32:
            return key
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        key = secrets.token_hex(32).encode()
        with open(fd, "wb") as fh:
            fh.write(key)
        return key
    except OSError:
        return _PROCESS_KEY


def mac(secret: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of the parts, length-prefixed so no two splits of the same bytes agree."""
    h = hmac.new(secret, digestmod=hashlib.sha256)
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def verifies(secret: bytes, claimed: object, *parts: bytes) -> bool:
    return isinstance(claimed, str) and hmac.compare_digest(claimed, mac(secret, *parts))
