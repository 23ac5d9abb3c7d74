"""Gate `profile`: the record satisfies the opt-trace-1.0 corpus profile.

The profile is clean-1.3 plus narrowing patches (each one conjunct of its allOf, `$comment` "patch
<id>: <reason>"). The base contract is the store's `schema` gate, so this gate checks what the
profile adds, patch by patch, and names the patch: a record that breaks clean-1.3 fails `schema`, one
that only breaks a narrowing fails `profile`. Together they are validation against the profile file.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from optrace.contracts import Error, SchemaError, compile_schema
from optrace.errors import InputError
from optrace.gates.store.model import Gate, RecordView
from optrace.gates.store.store import read_json_file
from optrace.gates.trace.model import PROFILE, Evidence

PATCH_COMMENT = "patch "
MAX_PROFILE_BYTES = 4 * 1024 * 1024


def patch_id(conjunct: dict) -> str:
    return conjunct["$comment"][len(PATCH_COMMENT) :].split(":", 1)[0]


@lru_cache(maxsize=4)
def narrowings(path: str = str(PROFILE)) -> tuple[tuple[str, Callable[[Any], list[Error]]], ...]:
    """(patch id, compiled validator) for every patch of the profile file at `path`."""
    profile, error = read_json_file(path, MAX_PROFILE_BYTES)
    if error is not None:
        raise InputError(path, error)
    conjuncts = profile.get("allOf") if isinstance(profile, dict) else None
    patches = [
        c for c in conjuncts or [] if isinstance(c, dict) and str(c.get("$comment", "")).startswith(PATCH_COMMENT)
    ]
    if not patches:
        raise InputError(path, "is not an opt-trace profile: no allOf conjunct is a patch")
    try:
        return tuple((patch_id(c), compile_schema({**c, "$defs": profile.get("$defs", {})})) for c in patches)
    except SchemaError as exc:
        raise InputError(path, f"cannot be compiled ({exc})") from None


def check(view: RecordView, ev: Evidence) -> list[str]:
    return [
        f"{view.relpath}: {loc}: {msg} (patch {pid})"
        for pid, errors in narrowings(str(ev.trace.profile))
        for loc, msg in errors(view.record)
    ]


GATE = Gate("profile", "every record satisfies the opt-trace-1.0 patches over clean-1.3", check=check)
