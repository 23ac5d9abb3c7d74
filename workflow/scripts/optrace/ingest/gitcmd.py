"""The one layer that talks to git: GitPython's command wrapper and its persistent object reader,
bound to a private shadow git directory and run in an environment that is exactly ours.

git never sees a trace's own git directory (optrace.ingest.git_history builds the shadow), so the
trace's config, hooks and attributes are never read. On top of that every command ignores system and
global config, has HOME in the shadow and overrides every config key that names a program. GitPython
starts git with this process's environment plus what it is given and cannot drop a variable, so each
command goes through `env -i`: git sees `git_environment()` and nothing else (no GIT_* a user, an outer
hook or a CI job set).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optrace.errors import InputError

# What GitPython's import-time `git version` runs with instead of the user's git variables.
_IMPORT_ENV = {
    "GIT_PYTHON_REFRESH": "quiet",  # a missing git is left to ShadowGit's one line, not an ImportError
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_GLOBAL": os.devnull,  # `git version` reads ~/.gitconfig: an include of a FIFO blocks it
}


def _set_git_variables_aside() -> dict[str, str]:
    """GitPython's import runs `git version` with this process's environment (a GIT_TRACE naming a FIFO
    would block it, GIT_PYTHON_GIT_EXECUTABLE would choose the program) and raises ImportError, a
    traceback before any error handling, when git is missing. So every GIT_* variable is set aside for
    the import and put back after (no command here sees them: ShadowGit gives git an environment of
    its own), GIT_PYTHON_GIT_EXECUTABLE is dropped for good (the `git` on PATH is the one run)."""
    aside = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GIT_")}
    aside.pop("GIT_PYTHON_GIT_EXECUTABLE", None)
    os.environ.update(_IMPORT_ENV)
    return aside


def _put_git_variables_back(aside: dict[str, str]) -> None:
    for k in _IMPORT_ENV:
        del os.environ[k]
    os.environ.update(aside)


_aside = _set_git_variables_aside()
import git  # noqa: E402 (imported with the variables set aside, above)
from git.db import GitCmdObjectDB  # noqa: E402
from git.util import hex_to_bin  # noqa: E402

_put_git_variables_back(_aside)

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
MAX_GITERR_CHARS = 200
NO_SPACE = "No space left on device"  # strerror(ENOSPC), as git prints it under LC_ALL=C
_DRAIN_CHUNK = 1 << 20


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


def clean_git_error(where: Path | str, stderr: bytes | str | None, what: str) -> InputError:
    """git's last stderr line, printable ASCII only and capped (a garbage bundle's error ends in junk)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else (stderr or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if any(NO_SPACE in ln for ln in lines):  # the disk filled up: not the trace's fault, whatever `what` says
        what, lines = "git could not write: no space left on the device", [ln for ln in lines if NO_SPACE in ln]
    last = "".join(c if " " <= c <= "~" else "?" for c in (lines[-1] if lines else "git failed"))
    return InputError(where, f"{what} ({last[:MAX_GITERR_CHARS]})")


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise InputError(name, f"`{name}` is not on PATH; optrace reads traces with git")
    return found


class ShadowGit(git.Git):
    """GitPython's command wrapper on one shadow git directory: `self.log(...)`, `self.bundle(...)`.
    The executable is `env`, and the persistent options start with `-i <our environment> git`."""

    GIT_PYTHON_GIT_EXECUTABLE = shutil.which("env") or "/usr/bin/env"

    def __init__(self, shadow: Path):
        super().__init__(shadow)
        self.shadow = shadow
        env = {**git_environment(shadow), "GIT_DIR": str(shadow)}
        config = [a for key, value in SAFE_CONFIG for a in ("-c", f"{key}={value}")]
        self._persistent_git_options = [
            "-i",
            *(f"{k}={v}" for k, v in env.items()),
            _program("git"),
            "--no-pager",
            "--no-replace-objects",
            *config,
        ]


class GitRun:
    """One git command whose output a thread collects, so the caller can work while git does (a
    trace's whole history is one `git log`, the largest share of ingest's wall time)."""

    def __init__(self, where: Path, g: ShadowGit, command: str, *args: str, what: str):
        self.where, self.what = where, what
        try:
            self.proc: Any = getattr(g, command)(*args, as_process=True)  # Git.AutoInterrupt
        except git.GitCommandNotFound:
            raise InputError(where, f"{what}: git could not be started") from None
        self._result: tuple[bytes, bytes] = (b"", b"")
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        self._result = self.proc.proc.communicate()

    def output(self) -> bytes:
        """git's stdout once it has exited; a failure or a timeout is an InputError."""
        self._thread.join(GIT_TIMEOUT_S)
        if self._thread.is_alive():
            self.stop()
            raise InputError(self.where, f"{self.what}: git did not finish in {GIT_TIMEOUT_S} s")
        (out, err), self._result = self._result, (b"", b"")  # the caller's copy is the only one
        if self.proc.proc.returncode != 0:
            raise clean_git_error(self.where, err, self.what)
        return out

    def stop(self) -> None:
        """End git if it still runs (the caller failed before it needed the output)."""
        if self.proc.proc.poll() is None:
            self.proc.proc.kill()
        self._thread.join()


def run_git(where: Path, g: ShadowGit, command: str, *args: str, what: str) -> bytes:
    return GitRun(where, g, command, *args, what=what).output()


class ObjectReader:
    """GitPython's persistent object reader (GitCmdObjectDB: one `git cat-file --batch`) with a size
    cap: a blob over the cap is drained in chunks, never held whole. `read_many` asks for a whole list
    at once on that same process, so git looks the next blob up while this one is used."""

    def __init__(self, where: Path, g: ShadowGit):
        self.where, self.git = where, g
        self.db = GitCmdObjectDB(str(g.shadow / "objects"), g)
        self._stderr_drained: object = None  # the cat-file process whose stderr is being discarded

    def header(self, oid: str) -> tuple[str, int] | None:
        """(type, size) of an object, its data drained; None when the repository lacks it."""
        try:
            stream = self._stream(oid)
        except _Missing:
            return None
        self._drain(stream)
        return stream.type.decode("ascii", "replace") if isinstance(stream.type, bytes) else stream.type, stream.size

    def read(self, blob: str, cap: int | None = None) -> bytes | None:
        """The blob's bytes, or None when it is larger than `cap`; a missing object is an InputError."""
        try:
            stream = self._stream(blob)
        except _Missing:
            raise InputError(self.where, f"object {blob[:12]} is missing from the repository") from None
        return self._data(blob, stream.size, stream, cap)

    def _data(self, blob: str, size: int, stream: Any, cap: int | None) -> bytes | None:
        if cap is not None and size > cap:
            self._drain(stream)
            return None
        try:
            data = bytes(stream.read())
        except OSError:
            raise self._stopped(blob) from None
        if len(data) != size:  # git ended mid-object: a short read is not the blob
            raise self._stopped(blob)
        return data

    def read_many(self, blobs: list[str], cap: int | None = None) -> Iterator[tuple[str, bytes | None]]:
        """(blob, read(blob, cap)) for each blob in order. The first is read as `read` reads (which
        starts GitPython's persistent cat-file); the others are written to that process at once by a
        thread and their answers read in order. A reader stopped early (an error, a caller that stops
        iterating) ends the process: its unread answers must not answer later reads."""
        if not blobs:
            return
        yield blobs[0], self.read(blobs[0], cap)
        rest, cmd = blobs[1:], self.git.cat_file_all
        if not rest or cmd is None:
            return

        def ask() -> None:
            with contextlib.suppress(OSError, ValueError):  # git stopped: the answers below say so
                cmd.proc.stdin.write(b"".join(b.encode("ascii") + b"\n" for b in rest))
                cmd.proc.stdin.flush()

        writer = threading.Thread(target=ask, daemon=True)
        writer.start()
        answered = 0
        try:
            for blob in rest:
                yield blob, self._answer(cmd, blob, cap)
                answered += 1
        finally:
            if answered < len(rest):
                self.git.clear_cache()  # ends git; GitPython starts a fresh one for the next read
            writer.join()

    def _answer(self, cmd: Any, blob: str, cap: int | None) -> bytes | None:
        """One answer of the batch protocol: `<oid> <type> <size>` then the data, or `<oid> missing`."""
        try:
            header = cmd.proc.stdout.readline().split()
        except (OSError, ValueError):
            raise self._stopped(blob) from None
        if len(header) == 2 and header[1] == b"missing":
            raise InputError(self.where, f"object {blob[:12]} is missing from the repository")
        if len(header) != 3 or not header[2].isdigit():
            raise self._stopped(blob)
        size = int(header[2])
        return self._data(blob, size, git.Git.CatFileContentStream(size, cmd.proc.stdout), cap)

    def _stream(self, oid: str) -> Any:  # gitdb's OStream over GitPython's CatFileContentStream
        if self.git.cat_file_all is not None and self.git.cat_file_all.proc.poll() is not None:
            raise self._stopped(oid)
        try:
            stream = self.db.stream(hex_to_bin(oid))
        except ValueError as exc:  # GitPython: "<oid> missing", or an empty answer from a git that died
            if "could not be resolved" in str(exc):
                raise _Missing from None
            raise self._stopped(oid) from None
        except OSError:  # a broken pipe to a git that stopped
            raise self._stopped(oid) from None
        finally:
            self._drain_stderr()
        return stream

    def _drain_stderr(self) -> None:
        """GitPython gives the persistent cat-file a stderr pipe nobody reads: one message per corrupt
        object would fill it and block git (and this reader) for good, so a thread discards it."""
        cmd = self.git.cat_file_all
        if cmd is None or cmd.proc is None or cmd.proc.stderr is None or self._stderr_drained is cmd.proc:
            return
        self._stderr_drained = cmd.proc  # a restarted cat-file is a new process: its stderr is drained too
        threading.Thread(target=_discard, args=(cmd.proc.stderr,), daemon=True).start()

    def _drain(self, stream: Any) -> None:
        try:
            while stream.read(_DRAIN_CHUNK):
                pass
        except OSError:
            pass

    def _stopped(self, oid: str) -> InputError:
        return InputError(self.where, f"git cat-file stopped while reading object {oid[:12]}")

    def close(self) -> None:
        self.git.clear_cache()  # ends the persistent cat-file


class _Missing(Exception):
    pass


def _discard(stream: Any) -> None:
    try:
        while stream.read(_DRAIN_CHUNK):
            pass
    except (OSError, ValueError):  # closed when the reader ends
        pass
