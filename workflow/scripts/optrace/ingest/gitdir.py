"""A trace's git directory, found and checked before git may read it: no git process, lstat first.

A trace must carry its own history. Every git directory it names (`.git`, a `gitdir:` file's target,
`commondir`) must lie inside the trace, so one hostile row of a sheet cannot make us mine and publish
another repository the mining host can read. A `.git` file is followed only when it is a genuine linked
work tree of a repository inside the trace: its git directory's own `gitdir` file points back at this
`.git` (git's rule for telling a real one). A FIFO or device never reaches an open() (it would block),
a shallow clone or borrowed objects (alternates) are refused, and what git opens blindly under
`objects/` is proven to be regular files. Used at planning time too (`optrace sheet`): cheap.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from optrace.errors import InputError
from optrace.ingest.trace_files import read_small_file

MAX_GIT_FILE_BYTES = 64 * 1024  # HEAD, a loose ref, `.git` (gitdir:), commondir, config
MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024
MAX_GIT_ENTRIES = 2_000_000  # entries under objects/ checked before git may open them
MAX_NAMED_REFS = 5  # branches named in one error line
SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# the files under objects/info that make git read objects from elsewhere
BORROWING_FILES = ("alternates", "http-alternates")


@dataclass(frozen=True)
class GitDir:
    """Where a trace's git data lives: its git dir (HEAD, refs) and the common dir (objects, packed refs)."""

    gitdir: Path
    common: Path


@dataclass(frozen=True)
class Head:
    """What HEAD names: a commit id (None when unborn) and the branch it goes through, if any."""

    sha: str | None
    ref: str | None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


@overload
def git_file(where: Path, path: Path, cap: int = ..., *, required: Literal[True]) -> str: ...
@overload
def git_file(where: Path, path: Path, cap: int = ..., required: bool = ...) -> str | None: ...
def git_file(where: Path, path: Path, cap: int = MAX_GIT_FILE_BYTES, required: bool = False) -> str | None:
    """A small git file's text, or None when absent; a FIFO, device, symlink or oversized file is refused."""
    data, problem = read_small_file(path, cap)
    if problem == "absent" and not required:
        return None
    if problem is not None:
        raise InputError(where, f"{path.name} in the git directory is {problem}; not a usable repository")
    assert data is not None  # read_small_file gives bytes or a problem
    return data.decode("utf-8", "replace")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _outside_error(trace: Path, what: str, target: Path) -> InputError:
    return InputError(
        trace,
        f"{what} points outside the trace ({target}); a trace must carry its own history: "
        "give a full clone or a bundle of it",
    )


def _named_path(where: Path, file: Path, text: str) -> str:
    """The path a `gitdir:`/`gitdir`/`commondir` file names: one line, no control characters (a NUL
    or a second line is no path git would follow, and would break the error line or `resolve`)."""
    named = text.strip()
    if any(ch < " " or ch == "\x7f" for ch in named):
        raise InputError(
            where, f"`{file.name}` names a path holding a control character (a NUL or a second line); not followed"
        )
    return named


def locate_gitdir(trace: Path) -> GitDir:
    """The trace's git directory, from `.git` (a directory, or the `gitdir:` file of a linked work tree
    of a repository inside the trace); every git directory it leads to lies inside the trace."""
    root = trace.resolve()
    dotgit = trace / ".git"
    st = _lstat(dotgit)
    if st is None:
        raise InputError(trace, "not a git work tree (no .git); give the trace's repository or a .bundle")
    if stat.S_ISDIR(st.st_mode):
        gitdir = root / ".git"
    elif stat.S_ISREG(st.st_mode):
        text = git_file(trace, dotgit, required=True)
        if not text.startswith("gitdir:"):
            raise InputError(dotgit, "is a file without a `gitdir:` line; not a git work tree")
        named = _named_path(trace, dotgit, text[len("gitdir:") :])
        gitdir = (root / named).resolve()
        if not _inside(gitdir, root):
            raise _outside_error(trace, "`.git` (a `gitdir:` file)", gitdir)
        if not gitdir.is_dir():
            raise InputError(dotgit, f"points to {gitdir}, which is not a directory")
        back = git_file(trace, gitdir / "gitdir")
        if back is None or (gitdir / _named_path(trace, gitdir / "gitdir", back)).resolve() != root / ".git":
            raise InputError(
                dotgit,
                f"points to {gitdir}, which is not a linked work tree of this trace "
                "(its `gitdir` file does not point back at this .git); not followed",
            )
    else:
        raise InputError(
            dotgit, "is neither a directory nor a `gitdir:` file (a symlink or special file); not followed"
        )
    common_text = git_file(trace, gitdir / "commondir")
    common = (gitdir / _named_path(trace, gitdir / "commondir", common_text)).resolve() if common_text else gitdir
    if not _inside(common, root):
        raise _outside_error(trace, "`commondir` of its git directory", common)
    if common_text and not (common / "objects").is_dir():
        raise InputError(trace, f"`commondir` names {common}, which holds no objects; not a usable repository")
    return GitDir(gitdir, common)


def check_gitdir(where: Path, gd: GitDir) -> None:
    """Refuse what would block git, hide history, or make it read objects outside the trace."""
    check_history_is_own(where, gd)
    check_objects_are_files(where, gd)


def check_history_is_own(where: Path, gd: GitDir) -> None:
    """A few lstats (cheap enough to plan with): not shallow, no borrowed objects, an objects folder."""
    if _lstat(gd.common / "shallow") is not None or _lstat(gd.gitdir / "shallow") is not None:
        raise InputError(
            where,
            "is a shallow clone (.git/shallow): its history is truncated; "
            "run `git fetch --unshallow` in the trace, or give a full clone or a bundle",
        )
    for name in BORROWING_FILES:
        alt = gd.common / "objects" / "info" / name
        if _lstat(alt) is not None:
            raise InputError(
                where,
                f"borrows objects from another repository (.git/objects/info/{name}); "
                "run `git repack -a -d` and remove that file, or give a bundle",
            )
    objects = gd.common / "objects"
    st = _lstat(objects)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise InputError(where, "has no objects directory (or it is a symlink); not a usable repository")


def check_objects_are_files(where: Path, gd: GitDir) -> None:
    """Every entry under objects/ a regular file or a folder: one walk, bounded by MAX_GIT_ENTRIES."""
    objects = gd.common / "objects"
    # git opens pack, index, commit-graph and loose object files blindly: prove each a regular file
    stack, seen = [objects], 0
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise InputError(where, f"cannot list {folder} ({exc.strerror})") from None
        for e in entries:
            seen += 1
            if seen > MAX_GIT_ENTRIES:
                raise InputError(where, f"more than {MAX_GIT_ENTRIES} entries under .git/objects; run `git gc` first")
            if e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))
            elif not e.is_file(follow_symlinks=False):
                rel = Path(e.path).relative_to(gd.common)
                raise InputError(where, f".git/{rel} is not a regular file (a FIFO, device or symlink); not read")


def _ref_file(where: Path, base: Path, ref: str) -> str | None:
    """A loose ref's text; a ref reached through a symlinked folder that leaves `base` is not read."""
    path = base / ref
    if not _inside(path.parent.resolve(), base):
        raise InputError(where, f"{ref} in the git directory is reached through a symlink out of it; not read")
    return git_file(where, path)


def _packed_refs(where: Path, base: Path) -> dict[str, str]:
    packed = git_file(where, base / "packed-refs", MAX_PACKED_REFS_BYTES) or ""
    refs: dict[str, str] = {}
    for line in packed.splitlines():
        if line.startswith(("#", "^")):
            continue
        sha, _, ref = line.partition(" ")
        if SHA_RE.match(sha) and ref:
            refs.setdefault(ref, sha)
    return refs


def resolve_head(where: Path, gd: GitDir) -> Head:
    """What HEAD names, read without git and without a blocking open (sha None when HEAD is unborn)."""
    head = git_file(where, gd.gitdir / "HEAD", required=True).strip()
    branch, holder = None, "HEAD"
    for _ in range(5):  # symbolic refs may chain; a loop is not followed forever
        if not head.startswith("ref:"):
            if not SHA_RE.match(head):
                raise InputError(where, f"{holder} holds {head[:60]!r}, not a commit id or a ref")
            return Head(head, branch)
        ref = holder = head[4:].strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            raise InputError(where, f"HEAD names {ref[:60]!r}, not a ref under refs/")
        branch = branch or ref
        found = None
        for base in dict.fromkeys((gd.gitdir, gd.common)):
            loose = _ref_file(where, base, ref)
            found = loose.strip() if loose is not None else _packed_refs(where, base).get(ref)
            if found:
                break
        if found is None:
            return Head(None, branch)
        head = found
    raise InputError(where, "HEAD's symbolic refs loop")


def branches(where: Path, gd: GitDir) -> list[str]:
    """The branches (refs/heads/*) the repository holds, loose or packed, sorted."""
    names = {r for r in _packed_refs(where, gd.common) if r.startswith("refs/heads/")}
    heads = gd.common / "refs" / "heads"
    stack = [heads] if (st := _lstat(heads)) is not None and stat.S_ISDIR(st.st_mode) else []
    while stack and len(names) < 10_000:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))
            elif e.is_file(follow_symlinks=False):
                names.add("refs/" + Path(e.path).relative_to(gd.common / "refs").as_posix())
    return sorted(names)


def unborn_head_error(where: Path, gd: GitDir, head: Head) -> InputError:
    """Why an unborn HEAD gives no history: nothing committed at all, or HEAD on a branch that does
    not exist while others hold the commits."""
    held = branches(where, gd)
    if not held:
        return InputError(where, "the repository has no commits")
    shown = ", ".join(r.removeprefix("refs/heads/") for r in held[:MAX_NAMED_REFS])
    more = f" and {len(held) - MAX_NAMED_REFS} more" if len(held) > MAX_NAMED_REFS else ""
    holds = f"branch {shown} holds" if len(held) == 1 else f"branches {shown}{more} hold"
    return InputError(
        where,
        f"HEAD names {head.ref}, which has no commits, while {holds} commits; "
        "check out the trace's branch (`git checkout <branch>`) and re-run",
    )


def object_format(where: Path, gd: GitDir) -> str:
    config = git_file(where, gd.common / "config") or ""
    return "sha256" if re.search(r"^\s*objectformat\s*=\s*sha256\s*$", config, re.I | re.M) else "sha1"
