"""What a trace path is, decided without git: a git work tree (its git directory checked, see
optrace.ingest.gitdir) or a `.bundle` file (its header checked, see optrace.ingest.bundle).

Shared by ingest (before git runs) and planning (`optrace sheet`, a `trace` given in the config), so
a path is refused for the same reason, in the same words, at both.
"""

from __future__ import annotations

import stat
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.bundle import bundle_head
from optrace.ingest.gitdir import check_history_is_own, locate_gitdir, object_format, resolve_head, unborn_head_error

SHA256_REFUSAL = (
    "uses git's sha256 object format; optrace reads sha1 repositories (its outputs hold 40-digit commit ids)"
)


def _kind(mode: int) -> str:
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def classify(path: Path) -> tuple[Path, bool]:
    """(the trace path, True for a bundle file): a symlink the user named is followed; a missing path,
    a FIFO, a device or a file not named .bundle is a one-line InputError."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            path = path.resolve()  # the user named it; what counts is what it points to
            st = path.lstat()
    except (OSError, RuntimeError):  # missing, or a symlink loop
        raise InputError(path, "trace not found (give a git work tree or a .bundle file)") from None
    if stat.S_ISDIR(st.st_mode):
        return path, False
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, f"is {_kind(st.st_mode)}, not a git work tree or a .bundle file")
    if path.suffix != ".bundle":
        raise InputError(path, "a trace file must be a git bundle ending in .bundle")
    return path, True


def trace_kind_problem(path: str | Path) -> str | None:
    """Why a path cannot be a trace, by the rules applied before git runs, but for the walk over every
    object file (ingest's); None when it may be one."""
    try:
        resolved, is_bundle = classify(Path(path))
        if is_bundle:
            bundle_head(resolved)
            return None
        gd = locate_gitdir(resolved)
        if object_format(resolved, gd) != "sha1":
            return SHA256_REFUSAL
        check_history_is_own(resolved, gd)
        head = resolve_head(resolved, gd)
        if head.sha is None:
            return unborn_head_error(resolved, gd, head).problem
    except InputError as exc:
        return exc.problem
    return None
