"""Read-only access to the files of a trace, wherever they live.

A trace is either a git work tree (memory/, profiles/, versions/ are read from disk: profiles and some
memory files are untracked) or a bundle (only committed files exist; they are read from HEAD's tree).
Both give the same small interface, so parsers never care which one they read. Traces are untrusted:
a symlink that leaves the trace is never followed, and every read is size-capped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

# Nothing a parser reads (a memory record, a REPORT.md, an ncu CSV export) is legitimately larger.
MAX_READ_BYTES = 16 * 1024 * 1024
# Capture trees are at most a few levels deep (profiles/episode_4/shape-1/analysis/x.json); deeper
# is not a capture, and a 1100-deep tree must not cost a recursive walk or a path past PATH_MAX.
MAX_WALK_DEPTH = 12
MAX_WALK_ENTRIES = 200_000


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a device or socket"


def read_small_file(path: str | os.PathLike, cap: int, head: int | None = None) -> tuple[bytes | None, str | None]:
    """(bytes, None), or (None, problem) with problem "absent", "a FIFO", "a symlink", ... or "over the cap".

    Never blocks: the type is checked with lstat before the open, and the open itself is non-blocking
    and refuses symlinks (a FIFO swapped in between the two is caught by fstat). `head` reads only the
    first bytes (a bundle's header) whatever the size.
    """
    try:
        st = os.lstat(path)
    except OSError:
        return None, "absent"
    if not stat.S_ISREG(st.st_mode):
        return None, _kind(st.st_mode)
    if head is None and st.st_size > cap:
        return None, f"{st.st_size} bytes, over the {cap}-byte read cap"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, _kind(st.st_mode)
        want = head if head is not None else cap + 1
        chunks, got = [], 0
        while got < want and (chunk := os.read(fd, min(want - got, 1 << 20))):
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if head is None and len(data) > cap:  # it grew after the stat
        return None, f"over the {cap}-byte read cap"
    return data, None


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool


class TraceFiles(Protocol):
    def list_dir(self, rel: str) -> list[Entry]:
        """Immediate children of a directory (sorted by name); [] when it does not exist."""

    def walk(self, rel: str) -> Iterator[str]:
        """All regular files below a directory, as trace-relative POSIX paths, sorted."""

    def read_bytes(self, rel: str, cap: int = MAX_READ_BYTES) -> bytes | None:
        """A file's bytes (at most `cap`), or None when it is absent or not readable."""

    def skipped(self) -> list[str]:
        """Paths refused so far (symlinks out of the trace, oversized files), for the warnings list."""


def read_text(files: TraceFiles, rel: str, cap: int = MAX_READ_BYTES) -> str | None:
    data = files.read_bytes(rel, cap)
    return None if data is None else data.decode("utf-8", errors="replace")


class WorkTreeFiles:
    """Files of a git work tree on disk."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()
        self._skipped: list[str] = []
        self._dirs_inside: set[str] = {""}  # relative dirs already proven to resolve inside the root

    def _inside(self, rel: str) -> Path | None:
        rel = rel.strip("/")
        parent, _, leaf = rel.rpartition("/")
        path = self.root / rel
        # fast path: a non-symlink entry of a proven directory is inside (no realpath per file)
        if parent in self._dirs_inside and leaf and not path.is_symlink():
            return path
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):  # missing, or a symlink loop (RuntimeError before Python 3.13)
            if path.is_symlink():
                self._note(f"{rel}: symlink that resolves nowhere (a loop or a dangling link), not followed")
            return None
        if real != self.root and self.root not in real.parents:
            self._note(f"{rel}: symlink leaves the trace, not followed")
            return None
        return real

    def _note(self, msg: str) -> None:
        if msg not in self._skipped:
            self._skipped.append(msg)

    def list_dir(self, rel: str) -> list[Entry]:
        rel = rel.strip("/")
        base = self._inside(rel)
        if base is None or not base.is_dir():
            return []
        if base == self.root / rel:
            self._dirs_inside.add(rel)
        out = []
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._note(f"{rel}: cannot be listed ({exc.strerror}), not read")
            return []
        for e in entries:
            if e.is_symlink():
                real = self._inside(f"{rel}/{e.name}" if rel else e.name)
                if real is None:
                    continue
                is_dir, is_file = real.is_dir(), real.is_file()
            else:
                is_dir, is_file = e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)
            if is_dir or is_file:
                out.append(Entry(e.name, is_dir))
        return out

    def walk(self, rel: str) -> Iterator[str]:
        # iterative and depth-capped: a 1100-deep tree is neither a RecursionError nor a slow walk
        stack, seen = [(rel, 0)], 0
        out: list[str] = []
        while stack:
            folder, depth = stack.pop()
            for entry in self.list_dir(folder):
                seen += 1
                if seen > MAX_WALK_ENTRIES:
                    self._note(f"{rel}: more than {MAX_WALK_ENTRIES} entries, the rest not read")
                    return iter(sorted(out))
                sub = f"{folder}/{entry.name}" if folder else entry.name
                if not entry.is_dir:
                    out.append(sub)
                elif entry.name == ".git":
                    continue
                elif depth + 1 >= MAX_WALK_DEPTH:
                    self._note(f"{sub}: deeper than {MAX_WALK_DEPTH} levels below {rel}/, not read")
                else:
                    stack.append((sub, depth + 1))
        return iter(sorted(out))

    def read_bytes(self, rel: str, cap: int = MAX_READ_BYTES) -> bytes | None:
        real = self._inside(rel)
        if real is None:
            return None
        data, problem = read_small_file(real, cap)
        if problem is not None and problem != "absent" and problem != "a directory":
            self._note(f"{rel}: {problem}, not read")
        return data

    def skipped(self) -> list[str]:
        return list(self._skipped)


class GitTreeFiles:
    """Files of one commit's tree, read through an already-open object reader (no process per file)."""

    def __init__(self, tree: dict[str, tuple[str, int]], read_blob: Callable[[str], bytes | None]):
        # tree: path -> (blob hex id, size); symlinks and submodules are left out by the caller
        self._tree = tree
        self._read_blob = read_blob
        self._skipped: list[str] = []

    def list_dir(self, rel: str) -> list[Entry]:
        prefix = f"{rel}/" if rel else ""
        names: dict[str, bool] = {}
        for path in self._tree:
            if path.startswith(prefix):
                head, sep, _ = path[len(prefix) :].partition("/")
                names[head] = names.get(head, False) or bool(sep)
        return [Entry(n, d) for n, d in sorted(names.items())]

    def walk(self, rel: str) -> Iterator[str]:
        prefix = f"{rel}/" if rel else ""
        yield from sorted(p for p in self._tree if p.startswith(prefix))

    def read_bytes(self, rel: str, cap: int = MAX_READ_BYTES) -> bytes | None:
        rel = str(PurePosixPath(rel))
        hit = self._tree.get(rel)
        if hit is None:
            return None
        blob, size = hit
        if size > cap:
            self._skipped.append(f"{rel}: {size} bytes, over the {cap}-byte read cap, not read")
            return None
        return self._read_blob(blob)

    def skipped(self) -> list[str]:
        return list(self._skipped)
