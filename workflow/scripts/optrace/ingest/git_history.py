"""A trace's history in a constant number of git processes, with the trace unable to run anything.

One `git log --first-parent --raw` gives every commit with the files it changed and their new blob ids
(so "did kernel.py change" and "which kernel blob is at this commit" need no per-commit process), and
one persistent `git cat-file --batch` reads the blobs we need. Bundles are unbundled into a private
repository first: one more process, still independent of trace length.

Traces are hostile, `.git/` included. git never sees the trace's own git directory: every
command runs in a private "shadow" git directory (our HEAD, our config) whose object store is the
trace's `objects/`, so the trace's `.git/config` (fsmonitor, pager, gpg programs, textconv, filters,
includes, hooks, ...) is never read at all. On top of that, `git_command` -- the only place that spawns
git -- ignores system and global config, sets HOME to the shadow directory, and overrides every config
key that names a program. Before git runs, the trace's git files are checked with lstat: a FIFO or
device never reaches an open() (it would block), a shallow clone or borrowed objects (alternates) are
refused with a one-line error, and what git itself would read blindly is proven to be regular files.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, overload

from optrace.errors import InputError
from optrace.ingest.trace_files import GitTreeFiles, TraceFiles, WorkTreeFiles, read_small_file

KERNEL_FILE = "kernel.py"
_LOG_FORMAT = "%x1e%H%x1f%P%x1f%aI%x1f%s%x1f%b%x1f"
_ZERO = "0" * 40
REGULAR_MODES = ("100644", "100755")  # a symlink (120000) or gitlink (160000) kernel.py is not source

# Config keys that name a program (or make git run one), each set at command scope, which outranks
# any file git could still read. The shadow directory already keeps the trace's own config away.
_NO_PROGRAM = os.devnull  # exec() of /dev/null fails: a key pointing here can start nothing
SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.sshCommand", _NO_PROGRAM),
    ("core.askPass", _NO_PROGRAM),
    ("core.editor", _NO_PROGRAM),
    ("core.gitProxy", _NO_PROGRAM),
    ("core.alternateRefsCommand", _NO_PROGRAM),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    ("core.untrackedCache", "false"),
    ("gpg.program", _NO_PROGRAM),
    ("gpg.openpgp.program", _NO_PROGRAM),
    ("gpg.ssh.program", _NO_PROGRAM),
    ("gpg.x509.program", _NO_PROGRAM),
    ("gpg.ssh.defaultKeyCommand", _NO_PROGRAM),
    ("log.showSignature", "false"),
    ("credential.helper", ""),
    ("sequence.editor", _NO_PROGRAM),
    ("diff.external", _NO_PROGRAM),
    ("pager.log", "false"),
    ("pager.cat-file", "false"),
    ("protocol.allow", "never"),
    ("uploadpack.packObjectsHook", _NO_PROGRAM),
    ("transfer.fsckObjects", "false"),
    ("fetch.fsckObjects", "false"),
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
    ("include.path", os.devnull),
    # git's default 96 MB delta-base cache dominated peak memory on long traces; 8 MB costs no time
    ("core.deltaBaseCacheLimit", "8m"),
)
# Environment variables passed through to git; everything else (GIT_DIR, GIT_CONFIG_PARAMETERS, an
# askpass, a pager, an SSH command a user or an outer hook set) is dropped.
_PASS_ENV = ("PATH", "TMPDIR", "SYSTEMROOT")
GIT_TIMEOUT_S = 600  # a safety net only: nothing the checks let through blocks
MAX_GIT_FILE_BYTES = 64 * 1024  # HEAD, a loose ref, `.git` (gitdir:), commondir, config
MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024
MAX_GIT_ENTRIES = 2_000_000  # entries under objects/ checked before git may open them
MAX_GITERR_CHARS = 200
_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def git_environment(home: str | Path) -> dict[str, str]:
    """The whole environment of every git process: no system or global config, a neutral HOME."""
    env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_ASKPASS": _NO_PROGRAM,
            "SSH_ASKPASS": _NO_PROGRAM,
            "GIT_EDITOR": _NO_PROGRAM,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_ALLOW_PROTOCOL": "",
            "LC_ALL": "C",
            "LANG": "C",
        }
    )
    return env


def git_command(gitdir: Path, *args: str) -> tuple[list[str], dict[str, str], str]:
    """(argv, env, cwd) of one git command on a shadow git directory: the one place git is spawned."""
    config = [a for key, value in SAFE_CONFIG for a in ("-c", f"{key}={value}")]
    env = git_environment(gitdir)
    env["GIT_DIR"] = str(gitdir)
    return ["git", "--no-pager", "--no-replace-objects", *config, *args], env, str(gitdir)


def clean_git_error(where: Path, stderr: bytes | str | None, what: str) -> InputError:
    """git's last stderr line, printable ASCII only and capped (a garbage bundle's error ends in junk)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else (stderr or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    last = "".join(c if " " <= c <= "~" else "?" for c in (lines[-1] if lines else "git failed"))
    return InputError(where, f"{what} ({last[:MAX_GITERR_CHARS]})")


class GitRun:
    """One git command whose output a thread collects, so the caller can work while git does (a
    trace's whole history is one `git log`, the largest share of ingest's wall time)."""

    def __init__(self, where: Path, gitdir: Path, *args: str, what: str):
        argv, env, cwd = git_command(gitdir, *args)
        self.where, self.what = where, what
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._result: tuple[bytes, bytes] = (b"", b"")
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        self._result = self.proc.communicate()

    def output(self) -> bytes:
        """git's stdout once it has exited; a failure or a timeout is an InputError."""
        self._thread.join(GIT_TIMEOUT_S)
        if self._thread.is_alive():
            self.stop()
            raise InputError(self.where, f"{self.what}: git did not finish in {GIT_TIMEOUT_S} s")
        (out, err), self._result = self._result, (b"", b"")  # the caller's copy is the only one
        if self.proc.returncode != 0:
            raise clean_git_error(self.where, err, self.what)
        return out

    def stop(self) -> None:
        """End git if it still runs (the caller failed before it needed the output)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._thread.join()


def run_git(where: Path, gitdir: Path, *args: str, what: str) -> bytes:
    return GitRun(where, gitdir, *args, what=what).output()


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # A, M, D, T (renames are disabled)
    blob: str  # new blob id; all zeros for a deletion
    mode: str = "100644"  # new mode; 120000 symlink, 160000 gitlink


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str | None  # first parent
    date: str
    subject: str
    body: str
    changes: tuple[FileChange, ...] = field(default=())
    kernel_blob: str | None = (
        None  # kernel.py blob at this commit (carried along first parents); None if not a regular file
    )
    kernel_mode: str | None = None  # kernel.py's mode at this commit

    @property
    def kernel_changed(self) -> bool:
        return any(c.path == KERNEL_FILE for c in self.changes)

    def added(self, path_prefix: str) -> list[str]:
        return [c.path for c in self.changes if c.status == "A" and c.path.startswith(path_prefix)]


def parse_log(raw: bytes, newest_first: bool = True) -> list[Commit]:
    """Parse `git log -z --raw --no-abbrev --format=<_LOG_FORMAT>` output; returns oldest first."""
    commits: list[Commit] = []
    kernel_blob: str | None = None
    kernel_mode: str | None = None
    chunks = raw.split(b"\x1e")[1:]
    if not newest_first:
        chunks.reverse()
    while chunks:  # popped, so each commit's text is freed as soon as it is parsed
        chunk = chunks.pop()
        head, _, raw_part = chunk.rpartition(b"\x1f")
        sha, parents, date, subject, body = head.decode("utf-8", errors="replace").split("\x1f", 4)
        changes = _parse_raw(raw_part)
        for ch in changes:
            if ch.path == KERNEL_FILE:
                kernel_mode = None if ch.status == "D" else ch.mode
                kernel_blob = ch.blob if kernel_mode in REGULAR_MODES else None
        commits.append(
            Commit(
                sha=sha,
                parent=parents.split()[0] if parents.strip() else None,
                date=date,
                subject=subject.strip(),
                body=body.strip(),
                changes=tuple(changes),
                kernel_blob=kernel_blob,
                kernel_mode=kernel_mode,
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
        out.append(FileChange(path.decode("utf-8", errors="replace"), bits[4][0], bits[3], bits[1]))
    return out


# ---- the trace's git directory, checked before git may read it ---------------------------------


@dataclass(frozen=True)
class GitDir:
    """Where a trace's git data lives: its git dir (HEAD, refs) and the common dir (objects, packed refs)."""

    gitdir: Path
    common: Path


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


@overload
def _git_file(where: Path, path: Path, cap: int = ..., *, required: Literal[True]) -> str: ...
@overload
def _git_file(where: Path, path: Path, cap: int = ..., required: bool = ...) -> str | None: ...
def _git_file(where: Path, path: Path, cap: int = MAX_GIT_FILE_BYTES, required: bool = False) -> str | None:
    """A small git file's text, or None when absent; a FIFO, device, symlink or oversized file is refused."""
    data, problem = read_small_file(path, cap)
    if problem == "absent" and not required:
        return None
    if problem is not None:
        raise InputError(where, f"{path.name} in the git directory is {problem}; not a usable repository")
    assert data is not None  # read_small_file gives bytes or a problem
    return data.decode("utf-8", "replace")


def locate_gitdir(trace: Path) -> GitDir:
    """The trace's git directory, from `.git` (a directory, or a `gitdir:` file of a linked work tree)."""
    dotgit = trace / ".git"
    st = _lstat(dotgit)
    if st is None:
        raise InputError(trace, "not a git work tree (no .git); give the trace's repository or a .bundle")
    if stat.S_ISDIR(st.st_mode):
        gitdir = dotgit
    elif stat.S_ISREG(st.st_mode):
        text = _git_file(trace, dotgit, required=True)
        if not text.startswith("gitdir:"):
            raise InputError(dotgit, "is a file without a `gitdir:` line; not a git work tree")
        gitdir = (trace / text[len("gitdir:") :].strip()).resolve()
        if not gitdir.is_dir():
            raise InputError(dotgit, f"points to {gitdir}, which is not a directory")
    else:
        raise InputError(
            dotgit, "is neither a directory nor a `gitdir:` file (a symlink or special file); not followed"
        )
    common_text = _git_file(trace, gitdir / "commondir")
    common = (gitdir / common_text.strip()).resolve() if common_text else gitdir
    return GitDir(gitdir, common)


def check_gitdir(where: Path, gd: GitDir) -> None:
    """Refuse what would block git, hide history, or make it read objects outside the trace."""
    if _lstat(gd.common / "shallow") is not None or _lstat(gd.gitdir / "shallow") is not None:
        raise InputError(
            where,
            "is a shallow clone (.git/shallow): its history is truncated; "
            "run `git fetch --unshallow` in the trace, or give a full clone or a bundle",
        )
    for alt in (gd.common / "objects" / "info" / "alternates", gd.common / "objects" / "info" / "http-alternates"):
        if _lstat(alt) is not None:
            raise InputError(
                where,
                f"borrows objects from another repository ({alt.relative_to(gd.common.parent)}); "
                "run `git repack -a -d` and remove that file, or give a bundle",
            )
    objects = gd.common / "objects"
    st = _lstat(objects)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise InputError(where, "has no objects directory (or it is a symlink); not a usable repository")
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


def resolve_head(where: Path, gd: GitDir) -> str | None:
    """HEAD's commit sha, read without git and without a blocking open; None when HEAD is unborn."""
    head = _git_file(where, gd.gitdir / "HEAD", required=True).strip()
    for _ in range(5):  # symbolic refs may chain; a loop is not followed forever
        if not head.startswith("ref:"):
            if not _SHA_RE.match(head):
                raise InputError(where, f"HEAD holds {head[:60]!r}, not a commit id or a ref")
            return head
        ref = head[4:].strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            raise InputError(where, f"HEAD names {ref[:60]!r}, not a ref under refs/")
        found = None
        for base in dict.fromkeys((gd.gitdir, gd.common)):
            loose = _git_file(where, base / ref)
            if loose is not None:
                found = loose.strip()
                break
            packed = _git_file(where, base / "packed-refs", MAX_PACKED_REFS_BYTES)
            for line in (packed or "").splitlines():
                if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                    found = line.split()[0]
                    break
            if found:
                break
        if found is None:
            return None
        head = found
    raise InputError(where, "HEAD's symbolic refs loop")


def _object_format(where: Path, gd: GitDir) -> str:
    config = _git_file(where, gd.common / "config") or ""
    return "sha256" if re.search(r"^\s*objectformat\s*=\s*sha256\s*$", config, re.I | re.M) else "sha1"


def make_shadow(shadow: Path, objects: Path, head: str | None, object_format: str = "sha1") -> Path:
    """A private git directory whose HEAD and config are ours and whose objects are the trace's."""
    (shadow / "refs").mkdir(parents=True)
    (shadow / "objects" / "info").mkdir(parents=True)
    (shadow / "HEAD").write_text((head or "ref: refs/heads/unborn") + "\n")
    config = "[core]\n\tbare = true\n\trepositoryformatversion = 0\n"
    if object_format == "sha256":
        config = "[core]\n\tbare = true\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n"
    (shadow / "config").write_text(config)
    if objects != shadow / "objects":
        # the trace's object store, read in place; git reads alternates only from there (refused above)
        (shadow / "objects" / "info" / "alternates").write_text(str(objects) + "\n")
    return shadow


class BlobReader:
    """One persistent `git cat-file --batch`; a blob over the cap is drained, not returned."""

    def __init__(self, where: Path, gitdir: Path):
        argv, env, cwd = git_command(gitdir, "cat-file", "--batch")
        self.where = where
        self.stopped = False
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both are pipes
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def read(self, blob: str, cap: int | None = None) -> bytes | None:
        """The blob's bytes, or None when it is larger than `cap`; a missing object is an InputError."""
        try:
            self.stdin.write(blob.encode("ascii") + b"\n")
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise InputError(self.where, f"git cat-file stopped while reading object {blob[:12]}") from None
        return self._answer(blob, cap)

    def read_many(self, blobs: list[str], cap: int | None = None) -> Iterator[tuple[str, bytes | None]]:
        """(blob, read(blob, cap)) for each blob in order; the requests are written by a thread, so git
        looks up the next blob while the caller works on this one (no round trip per blob)."""

        def ask() -> None:
            with contextlib.suppress(OSError):  # git stopped: the reads below say so
                self.stdin.write(b"".join(b.encode("ascii") + b"\n" for b in blobs))
                self.stdin.flush()

        writer = threading.Thread(target=ask, daemon=True)
        writer.start()
        answered = 0
        try:
            for blob in blobs:
                yield blob, self._answer(blob, cap)
                answered += 1
        finally:
            if answered < len(blobs):  # stopped early: unread answers would answer later reads, so end git
                self.stopped = True
                self.proc.kill()
            writer.join()

    def _answer(self, blob: str, cap: int | None) -> bytes | None:
        try:
            if self.stopped:
                raise OSError
            header = self.stdout.readline().decode("ascii", "replace").split()
        except OSError:
            raise InputError(self.where, f"git cat-file stopped while reading object {blob[:12]}") from None
        if len(header) != 3:
            raise InputError(self.where, f"object {blob[:12]} is missing from the repository")
        size = int(header[2])
        if cap is not None and size > cap:
            left = size + 1
            while left:
                left -= len(self.stdout.read(min(left, 1 << 20)) or b"\0" * left)
            return None
        data = self.stdout.read(size + 1)
        return data[:-1]

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class History:
    """An opened trace repository (through its shadow directory): first-parent history and a blob reader."""

    def __init__(self, where: Path, shadow: Path, head: str | None):
        self.where, self.shadow, self.head = where, shadow, head
        self._blobs: BlobReader | None = None
        self._log: GitRun | None = None

    def start_log(self) -> None:
        """Start the first-parent `git log` in the background; `commits()` waits for it."""
        if self.head is not None and self._log is None:
            self._log = GitRun(
                self.where,
                self.shadow,
                "log",
                "--first-parent",
                "--no-renames",
                "--raw",
                "--no-abbrev",
                "--no-show-signature",
                "--no-ext-diff",
                "--no-textconv",
                "--no-mailmap",
                "-z",
                f"--format={_LOG_FORMAT}",
                "HEAD",
                what="git log failed (a corrupt or incomplete repository)",
            )

    def commits(self) -> list[Commit]:
        if self.head is None:  # no commits yet (unborn HEAD)
            return []
        self.start_log()
        assert self._log is not None  # started just above: HEAD names a commit
        return parse_log(self._log.output())

    def read_blob(self, blob: str, cap: int | None = None) -> bytes | None:
        return self._reader().read(blob, cap)

    def read_blobs(self, blobs: list[str], cap: int | None = None) -> Iterator[tuple[str, bytes | None]]:
        return self._reader().read_many(blobs, cap)

    def _reader(self) -> BlobReader:
        if self._blobs is None:
            self._blobs = BlobReader(self.where, self.shadow)
        return self._blobs

    def head_tree(self) -> dict[str, tuple[str, int]]:
        """HEAD's tree as path -> (blob, size), regular files only (symlinks and submodules skipped)."""
        if self.head is None:
            return {}
        raw = run_git(self.where, self.shadow, "ls-tree", "-r", "-z", "--long", "HEAD", what="git ls-tree failed")
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


BUNDLE_HEADERS = (b"# v2 git bundle\n", b"# v3 git bundle\n")


def _unbundle(path: Path, shadow: Path) -> str | None:
    """Objects of a bundle into a fresh private repository; returns the sha HEAD should name."""
    header, problem = read_small_file(path, 1 << 40, head=len(BUNDLE_HEADERS[0]))
    if problem is not None:
        raise InputError(path, f"is {problem}; a trace file must be a git bundle")
    if header not in BUNDLE_HEADERS:
        raise InputError(
            path, "not a readable git bundle (it does not start with '# v2 git bundle' or '# v3 git bundle')"
        )
    make_shadow(shadow, shadow / "objects", None)
    out = run_git(
        path,
        shadow,
        "bundle",
        "unbundle",
        str(path.resolve()),
        what="not a readable git bundle (an incremental bundle needs its prerequisite commits)",
    )
    refs: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        sha, _, ref = line.strip().partition(" ")
        if _SHA_RE.match(sha):
            refs.setdefault(ref.strip(), sha)
    for ref in ("HEAD", "refs/heads/main", "refs/heads/master"):
        if ref in refs:
            return refs[ref]
    return next(iter(refs.values()), None)


@contextlib.contextmanager
def open_trace(path: str | Path, scratch: str | Path | None = None) -> Iterator[OpenedTrace]:
    """Open a trace given as a git work tree or a `.bundle` file. git runs in a private shadow git
    directory under `scratch` (the job's own output area on a cluster node), removed afterwards."""
    path = Path(path)
    st = _lstat(path)
    if st is None:
        raise InputError(path, "trace not found (give a git work tree or a .bundle file)")
    if stat.S_ISLNK(st.st_mode):
        path = path.resolve()  # the user named it; what counts is what it points to
        st = _lstat(path)
    if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise InputError(path, "is neither a directory nor a .bundle file")
    bundle = stat.S_ISREG(st.st_mode)
    if bundle and scratch is not None:  # a bundle's objects are unpacked: large, so in the job's own area
        Path(scratch).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".optrace-git-", dir=scratch if bundle else None) as tmp:
        shadow = Path(tmp).resolve() / "git"  # absolute: git runs with its cwd inside it
        if bundle:
            if path.suffix != ".bundle":
                raise InputError(path, "a trace file must be a git bundle ending in .bundle")
            head = _unbundle(path, shadow)
            (shadow / "HEAD").write_text((head or "ref: refs/heads/unborn") + "\n")
            history = History(path, shadow, head)
            try:
                yield OpenedTrace(path.stem, history, GitTreeFiles(history.head_tree(), history.read_blob))
            finally:
                history.close()
            return
        gd = locate_gitdir(path)
        check_gitdir(path, gd)
        head = resolve_head(path, gd)
        make_shadow(shadow, (gd.common / "objects").resolve(), head, _object_format(path, gd))
        history = History(path, shadow, head)
        try:
            yield OpenedTrace(path.resolve().name, history, WorkTreeFiles(path))
        finally:
            history.close()
