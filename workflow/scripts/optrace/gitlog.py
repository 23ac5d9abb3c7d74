"""A trace's history in a constant number of git processes.

One `git log --first-parent --raw` gives every commit with the files it changed and their new blob ids
(so "did kernel.py change" and "which kernel blob is at this commit" need no per-commit process), and
one persistent `git cat-file --batch` (GitPython's object database) reads the blobs we need. Bundles are
cloned (bare) into a temporary directory first: one more process, still independent of trace length.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import git

from .errors import InputError
from .tracefiles import GitTreeFiles, TraceFiles, WorkTreeFiles

KERNEL_FILE = "kernel.py"
_LOG_FORMAT = "%x1e%H%x1f%P%x1f%aI%x1f%s%x1f%b%x1f"
_ZERO = "0" * 40


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # A, M, D, T (renames are disabled)
    blob: str  # new blob id; all zeros for a deletion


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str | None  # first parent
    date: str
    subject: str
    body: str
    changes: tuple[FileChange, ...] = field(default=())
    kernel_blob: str | None = None  # kernel.py blob at this commit (carried along first parents)

    @property
    def kernel_changed(self) -> bool:
        return any(c.path == KERNEL_FILE for c in self.changes)

    def added(self, path_prefix: str) -> list[str]:
        return [c.path for c in self.changes if c.status == "A" and c.path.startswith(path_prefix)]


def parse_log(raw: bytes, newest_first: bool = True) -> list[Commit]:
    """Parse `git log -z --raw --no-abbrev --format=<_LOG_FORMAT>` output; returns oldest first."""
    commits: list[Commit] = []
    kernel_blob: str | None = None
    chunks = raw.split(b"\x1e")[1:]
    for chunk in reversed(chunks) if newest_first else chunks:
        head, _, raw_part = chunk.rpartition(b"\x1f")
        sha, parents, date, subject, body = head.decode("utf-8", errors="replace").split("\x1f", 4)
        changes = _parse_raw(raw_part)
        for ch in changes:
            if ch.path == KERNEL_FILE:
                kernel_blob = None if ch.status == "D" else ch.blob
        commits.append(
            Commit(
                sha=sha,
                parent=parents.split()[0] if parents.strip() else None,
                date=date,
                subject=subject.strip(),
                body=body.strip(),
                changes=tuple(changes),
                kernel_blob=kernel_blob,
            )
        )
    return commits


def _parse_raw(part: bytes) -> list[FileChange]:
    # `:<mode> <mode> <blob> <blob> <status>\0<path>\0` repeated, after a "\0\n" separator
    fields = [f for f in part.split(b"\x00") if f.strip(b"\n")]
    out = []
    for meta, path in zip(fields[0::2], fields[1::2]):
        meta_s = meta.decode("ascii", errors="replace").strip()
        bits = meta_s.split()
        if len(bits) < 5 or not meta_s.startswith(":"):
            continue
        out.append(FileChange(path.decode("utf-8", errors="replace"), bits[4][0], bits[3]))
    return out


class History:
    """An opened trace repository: its first-parent history and a blob reader."""

    def __init__(self, repo: git.Repo):
        self.repo = repo
        # git's default 96 MB delta-base cache dominated peak memory on long traces; 8 MB costs no time
        repo.git.update_environment(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.deltaBaseCacheLimit",
                                    GIT_CONFIG_VALUE_0="8m")

    def commits(self) -> list[Commit]:
        try:
            raw = self.repo.git.execute(
                ["git", "log", "--first-parent", "--no-renames", "--raw", "--no-abbrev",
                 "-z", f"--format={_LOG_FORMAT}", "HEAD"],
                stdout_as_string=False,
            )
        except git.GitCommandError:  # no commits yet (unborn HEAD)
            return []
        return parse_log(raw)

    def read_blob(self, blob: str) -> bytes:
        # GitCmdObjectDB keeps one `git cat-file --batch` process open for all reads
        return self.repo.odb.stream(bytes.fromhex(blob)).read()

    def head_tree(self) -> dict[str, tuple[str, int]]:
        """HEAD's tree as path -> (blob, size), regular files only (symlinks and submodules skipped)."""
        try:
            raw = self.repo.git.execute(
                ["git", "ls-tree", "-r", "-z", "--long", "HEAD"], stdout_as_string=False
            )
        except git.GitCommandError:  # no commits yet
            return {}
        tree = {}
        for entry in raw.split(b"\x00"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, blob, size = meta.decode().split()
            if kind == "blob" and mode in ("100644", "100755"):
                tree[path.decode("utf-8", errors="replace")] = (blob, int(size))
        return tree


@dataclass
class OpenedTrace:
    name: str  # directory name (or bundle stem): the source of the slug and default label
    history: History
    files: TraceFiles
    is_bundle: bool


@contextlib.contextmanager
def open_trace(path: str | Path, scratch: str | Path | None = None) -> Iterator[OpenedTrace]:
    """Open a trace given as a git work tree or a `.bundle` file. A bundle is cloned (bare) into a
    temporary directory under `scratch` (the job's own output area on a cluster node), removed after."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "trace not found (give a git work tree or a .bundle file)")
    if path.is_file():
        if path.suffix != ".bundle":
            raise InputError(path, "a trace file must be a git bundle ending in .bundle")
        if scratch is not None:
            Path(scratch).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".optrace-bundle-", dir=scratch) as tmp:
            try:
                repo = git.Repo.clone_from(str(path.resolve()), Path(tmp) / "repo", bare=True)
            except git.GitCommandError as exc:
                raise InputError(path, f"not a readable git bundle ({_first_line(exc.stderr)})") from None
            try:
                history = History(repo)
                tree = history.head_tree()
                yield OpenedTrace(path.stem, history, GitTreeFiles(tree, history.read_blob), True)
            finally:
                repo.close()
        return
    if not (path / ".git").exists():
        raise InputError(path, "not a git work tree (no .git); give the trace's repository or a .bundle")
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InputError(path, "not a readable git repository") from None
    try:
        yield OpenedTrace(path.resolve().name, History(repo), WorkTreeFiles(path), False)
    finally:
        repo.close()


def _first_line(text: str | None) -> str:
    text = (text or "").strip().splitlines()
    return text[-1].strip() if text else "git failed"
