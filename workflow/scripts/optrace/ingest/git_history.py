"""A trace opened for reading: its history in a constant number of git processes, none able to run
anything the trace names.

git works in a private "shadow" git directory (our HEAD, our config) whose object store is the trace's
`objects/` (optrace.ingest.gitdir checks the trace's git directory first), so the trace's `.git/config`
(fsmonitor, pager, gpg programs, textconv, filters, includes, hooks, ...) is never read. A bundle is
unpacked into the shadow directory itself (optrace.ingest.bundle). Every git process is started by
optrace.ingest.gitcmd: one `git log` for the history, one persistent `cat-file --batch` for blobs.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.bundle import bundle_head, read_header
from optrace.ingest.gitcmd import GitRun, ObjectReader, ShadowGit, run_git
from optrace.ingest.gitdir import (
    Head,
    check_gitdir,
    locate_gitdir,
    object_format,
    resolve_head,
    unborn_head_error,
)
from optrace.ingest.gitlog import KERNEL_FILE, LOG_ARGS, REGULAR_MODES, Commit, parse_log
from optrace.ingest.trace_files import GitTreeFiles, TraceFiles, WorkTreeFiles
from optrace.ingest.tracepath import SHA256_REFUSAL, classify

MAX_TAG_DEPTH = 5  # tags of tags are followed this far
MAX_TAG_BYTES = 64 * 1024

__all__ = ["KERNEL_FILE", "REGULAR_MODES", "Commit", "History", "OpenedTrace", "open_trace"]


def make_shadow(shadow: Path, objects: Path | None, head: str | None) -> Path:
    """A private git directory whose HEAD and config are ours and whose objects are the trace's
    (`objects`, read in place through alternates) or, for a bundle, its own (`objects` None)."""
    (shadow / "refs").mkdir(parents=True)
    (shadow / "objects" / "info").mkdir(parents=True)
    (shadow / "HEAD").write_text((head or "ref: refs/heads/unborn") + "\n")
    (shadow / "config").write_text("[core]\n\tbare = true\n\trepositoryformatversion = 0\n")
    if objects is not None:
        # the trace's object store; git reads alternates only from there (refused by check_gitdir)
        (shadow / "objects" / "info" / "alternates").write_bytes(alternates_line(objects))
    return shadow


_C_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\t"): "\\t"}


def alternates_line(objects: Path) -> bytes:
    """`objects` as one alternates line: C-quoted (git unquotes a line that starts with `"`), so a trace
    directory whose name holds a newline or a quote is still the one git reads."""
    raw = str(objects)
    if not any(ch in raw for ch in '"\\') and raw.isprintable():
        return raw.encode("utf-8", "surrogateescape") + b"\n"
    out = "".join(
        _C_ESCAPES.get(ord(ch), f"\\{ord(ch):03o}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch) for ch in raw
    )
    return b'"' + out.encode("utf-8", "surrogateescape") + b'"\n'


class History:
    """An opened trace repository (through its shadow directory): first-parent history and a blob reader."""

    def __init__(self, where: Path, shadow: Path, head: str | None):
        self.where, self.shadow, self.head = where, shadow, head
        self.git = ShadowGit(shadow)
        self._blobs: ObjectReader | None = None
        self._log: GitRun | None = None

    def start_log(self) -> None:
        """Start the first-parent `git log` in the background; `commits()` waits for it."""
        if self.head is not None and self._log is None:
            self._log = GitRun(
                self.where,
                self.git,
                "log",
                *LOG_ARGS,
                "HEAD",
                what="git log failed (a corrupt or incomplete repository)",
            )

    def commits(self) -> list[Commit]:
        if self.head is None:  # no commits yet (unborn HEAD)
            return []
        self.start_log()
        assert self._log is not None  # started just above: HEAD names a commit
        commits = parse_log(self._log.output())
        if not commits:  # git logs nothing for a HEAD that names a blob or a tree
            self.require_commit()
        return commits

    def require_commit(self) -> None:
        """A one-line InputError unless HEAD names a commit (directly or through annotated tags)."""
        assert self.head is not None  # an unborn HEAD is refused before a History is made
        oid = self.head
        for _ in range(MAX_TAG_DEPTH):
            kind = (self._reader().header(oid) or ("missing object", 0))[0]
            if kind != "tag":
                break
            tag = self.read_blob(oid, MAX_TAG_BYTES) or b""  # `object <oid>` is a tag's first line
            oid = tag.split(b"\n", 1)[0].removeprefix(b"object ").decode("ascii", "replace").strip()
        if kind != "commit":
            raise InputError(self.where, f"HEAD names {self.head[:12]}, a {kind}, not a commit; no history to read")

    def read_blob(self, blob: str, cap: int | None = None) -> bytes | None:
        return self._reader().read(blob, cap)

    def read_blobs(self, blobs: list[str], cap: int | None = None) -> Iterator[tuple[str, bytes | None]]:
        return self._reader().read_many(blobs, cap)

    def _reader(self) -> ObjectReader:
        if self._blobs is None:
            self._blobs = ObjectReader(self.where, self.git)
        return self._blobs

    def head_tree(self, rev: str = "HEAD") -> dict[str, tuple[str, int]]:
        """HEAD's (or rev's) tree as path -> (blob, size), regular files only (symlinks and submodules skipped)."""
        if self.head is None:
            return {}
        raw = run_git(self.where, self.git, "ls_tree", "-r", "-z", "--long", rev, what="git ls-tree failed")
        tree = {}
        for entry in raw.split(b"\x00"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, blob, size = meta.decode("ascii", "replace").split()
            if kind == "blob" and mode in REGULAR_MODES:
                tree[path.decode("utf-8", errors="replace")] = (blob, int(size))
        return tree

    def close(self) -> None:
        if self._log is not None:
            self._log.stop()
        if self._blobs is not None:
            self._blobs.close()


@dataclass
class OpenedTrace:
    name: str  # directory name (or bundle stem): the source of the slug and default label
    history: History
    files: TraceFiles
    carries_untracked: bool | None = None  # a bundle: whether `optrace bundle` carried untracked files


# Where `optrace bundle` (ingest/carry.py) carries a trace's untracked profiles/ and memory/ files.
UNTRACKED_REF = "refs/optrace/untracked"
CARRIED_PREFIXES = ("profiles/", "memory/")


def bundle_tree(history: History, refs: dict[str, str]) -> dict[str, tuple[str, int]]:
    """HEAD's tree, and the untracked profiles/ and memory/ files `optrace bundle` put on UNTRACKED_REF
    (a tracked file always wins; nothing outside those folders is taken from that ref)."""
    tree = history.head_tree()
    if UNTRACKED_REF in refs:
        extra = history.head_tree(refs[UNTRACKED_REF])
        tree.update({p: v for p, v in extra.items() if p.startswith(CARRIED_PREFIXES) and p not in tree})
    return tree


@contextlib.contextmanager
def open_trace(path: str | Path, scratch: str | Path | None = None) -> Iterator[OpenedTrace]:
    """Open a trace given as a git work tree or a `.bundle` file. git runs in a private shadow git
    directory under `scratch` (the job's own output area on a cluster node), removed afterwards."""
    path, bundle = classify(Path(path))
    if bundle and scratch is not None:  # a bundle's objects are unpacked: large, so in the job's own area
        Path(scratch).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".optrace-git-", dir=scratch if bundle else None) as tmp:
        shadow = Path(tmp).resolve() / "git"  # absolute: git runs with its cwd inside it
        if bundle:
            header = read_header(path)  # checked before git reads the file
            head_sha = bundle_head(path)
            make_shadow(shadow, None, None)  # HEAD is set once its commit is there (git checks it)
            history = History(path, shadow, head_sha)
            try:
                what = "is a git bundle whose pack is truncated or corrupt"
                run_git(path, history.git, "bundle", "unbundle", str(path.resolve()), what=what)
                (shadow / "HEAD").write_text(head_sha + "\n")
                history.require_commit()  # before its tree is listed
                files = GitTreeFiles(bundle_tree(history, header.refs), history.read_blob)
                yield OpenedTrace(path.stem, history, files, carries_untracked=UNTRACKED_REF in header.refs)
            finally:
                history.close()
            return
        gd = locate_gitdir(path)
        if object_format(path, gd) != "sha1":
            raise InputError(path, SHA256_REFUSAL)
        check_gitdir(path, gd)
        head: Head = resolve_head(path, gd)
        if head.sha is None:
            raise unborn_head_error(path, gd, head)
        make_shadow(shadow, (gd.common / "objects").resolve(), head.sha)
        history = History(path, shadow, head.sha)
        try:
            yield OpenedTrace(path.resolve().name, history, WorkTreeFiles(path))
        finally:
            history.close()
