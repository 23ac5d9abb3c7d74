"""A warm job server for local runs: per-trace jobs start as forks of a process that has already
imported the stage modules, instead of paying interpreter start-up and imports in every job.

A 100-trace sheet is ~600 short jobs; each spent most of its CPU importing the package
(benchmarks/README.md). The controller (the Snakefile's `onstart`) starts one server per run:

    python -m optrace.run.jobserver --fd N --controller PID
                                (N: a listening AF_UNIX socket in a private 0700 folder)

and names its socket in `OPTRACE_JOBSERVER`, which every job's environment inherits. A job's command is
optrace.run.jobclient, which means exactly `python -m <module> <args>`: it hands the server its standard
streams, working directory, umask, environment and arguments and exits with the job's status.

For every connection the server forks a helper, and the helper forks the worker that runs the module
as `python -m` does (`runpy._run_module_as_main`, standard streams built as the interpreter builds
them) with the job's streams, folder, umask and environment; the helper relays the worker's exit
status and the signals the client passes on. When the client goes away the helper interrupts the
worker's process group, and kills it after a grace period; a worker whose helper dies is killed too.
A request the server cannot serve exactly as `python -m` would (another interpreter, working
directory, PYTHON*, locale or TZ variables) is answered "run it yourself": the client then execs the
command, so nothing depends on the server being there. The server exits, removing its socket, when
the run ends (`stop`) or when the controller that started it is gone.

What still differs from `python -m`, on purpose or as no stage can tell: the job runs in its own
process group without a controlling terminal, `sys.orig_argv` is the server's, and the package's
modules are those imported when the server started (the run's code digests are taken then too).
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import gc
import importlib
import io
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optrace.run import jobclient

# What the per-trace jobs run (optrace.run.pertrace); the dataset stage is one aggregate job a run, and
# its pandas/pyarrow would only make every fork heavier.
PRELOAD = (
    "optrace.cli",
    "optrace.run.pertrace",
    "optrace.ingest.ingest",
    "optrace.report.recon",
    "optrace.mine.partition",
    "optrace.mine.packets",
    "optrace.distill.distill",
    "optrace.gates.validate",
)
MAX_REQUEST = 16 << 20  # arguments and environment of one job; a larger request is refused
ACCEPT_POLL_S = 2.0  # how often an idle server checks that its controller is still there
GO_TIMEOUT_S = 60.0  # a client that does not confirm in this long has given up (and runs the job itself)
KILL_GRACE_S = 2.0  # SIGINT, then SIGKILL, for a job whose client went away
# Variables that change what the interpreter does at start-up or what a job sees of its locale and
# time zone: a job whose differ from the server's is not served.
INTERPRETER_VARIABLES = (b"PYTHON", b"LC_", b"LANG", b"TZ")
FOLDER_PREFIX = "optrace-jobs-"  # the socket's private folder, under the temporary directory
PR_SET_PDEATHSIG = 1  # prctl(2)
# What a signal the client passes on does to the job's process group. Ctrl-Z stops the job with
# SIGSTOP: a stop signal a terminal did not send could be discarded.
PASSED_ON: dict[int, int] = {
    signal.SIGINT: signal.SIGINT,
    signal.SIGTERM: signal.SIGTERM,
    signal.SIGHUP: signal.SIGHUP,
    signal.SIGTSTP: signal.SIGSTOP,
    signal.SIGCONT: signal.SIGCONT,
}
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@dataclass(frozen=True)
class Request:
    executable: str
    cwd: bytes
    umask: int
    ignored: frozenset[int]  # signals the client inherited as ignored
    argv: list[str]
    env: dict[bytes, bytes]


def parse_request(body: bytes) -> Request | None:
    """The client's request (optrace.run.jobclient.request), or None when it is not one."""
    fields = body.split(b"\0")
    if len(fields) < 6 or fields[0] != jobclient.MAGIC:
        return None
    try:
        umask, argc = int(fields[3]), int(fields[5])
        ignored = frozenset(int(s) for s in fields[4].split(b",") if s)
    except ValueError:
        return None
    if not (0 <= umask <= 0o777) or not (2 <= argc <= len(fields) - 6):
        return None
    argv = [os.fsdecode(a) for a in fields[6 : 6 + argc]]
    env = {}
    for entry in fields[6 + argc :]:
        key, sep, value = entry.partition(b"=")
        if not sep or not key:
            return None
        env[key] = value
    return Request(os.fsdecode(fields[1]), fields[2], umask, ignored, argv, env)


def interpreter_settings(env: dict[bytes, bytes]) -> dict[bytes, bytes]:
    return {k: v for k, v in env.items() if k.startswith(INTERPRETER_VARIABLES)}


def process_settings(pid: int | str) -> tuple[object, ...]:
    """What a process hands on to what it runs besides its environment: resource limits (ulimit),
    niceness, the CPUs it may run on."""
    limits = Path(f"/proc/{pid}/limits").read_text()
    who = os.getpid() if pid == "self" else int(pid)
    return limits, os.getpriority(os.PRIO_PROCESS, who), os.sched_getaffinity(who)


def refusal(req: Request, client: int) -> str | None:
    """Why this server cannot run the request as `python -m` would, or None."""
    if req.executable != sys.executable:
        return "another interpreter"
    if os.fsencode(os.getcwd()) != req.cwd:
        return "another working directory (the module search path starts there)"
    if interpreter_settings(req.env) != interpreter_settings(dict(os.environb)):
        return "other PYTHON*, locale or TZ variables"
    if req.argv[0] != "-m":
        return "not a module"
    try:
        if process_settings(client) != process_settings("self"):
            return "other resource limits, niceness or CPUs"
    except OSError:
        return "the client's limits could not be read"
    return None


def read_request(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The request's bytes and the file descriptors sent with it (the client's fds 0, 1, 2)."""
    fds: list[int] = []
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "little"):
        chunk, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds += list(struct.unpack(f"{usable // 4}i", payload[:usable]))
        if not chunk:
            break
        data += chunk
        if len(data) >= 4 and int.from_bytes(data[:4], "little") > MAX_REQUEST:
            break
    return data, fds


def send_status(conn: socket.socket, status: int) -> None:
    try:
        conn.sendall(status.to_bytes(jobclient.STATUS_BYTES, "little", signed=True))
    except OSError:
        pass  # the client is gone; nobody is waiting for the status


def log(line: str) -> None:
    """One line of the server's log, in one write (helpers write to it concurrently)."""
    os.write(2, (line + "\n").encode(errors="backslashreplace"))


def std_stream(fd: int, like: io.TextIOWrapper) -> io.TextIOWrapper:
    """The stream the interpreter would make for fd 0, 1 or 2: the encoding, error handler and
    unbuffered mode (-u, PYTHONUNBUFFERED) of the server's own, which the same locale and PYTHON*
    variables decided; line buffering by isatty."""
    reading = fd == 0
    unbuffered = like.write_through and not reading
    raw = io.FileIO(fd, "r" if reading else "w", closefd=False)
    buffer: Any = raw
    if not unbuffered:
        buffer = io.BufferedReader(raw) if reading else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(
        buffer,
        encoding=like.encoding,
        errors=like.errors,
        newline="\n",
        line_buffering=not like.write_through and (fd == 2 or os.isatty(fd)),
        write_through=like.write_through,
    )
    try:
        raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    except AttributeError:
        pass
    return stream


def exit_code(code: object) -> int:
    """The status `python` exits with for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if -(1 << 63) <= code < (1 << 63) else 255
    print(code, file=sys.stderr)
    return 1


def job_traceback(exc: BaseException) -> None:
    """Report an uncaught exception through sys.excepthook, without the server's own frames (what
    is left is what `python -m` prints: runpy's, then the job's)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)  # the hook prints the exception's own


def inherit_signals(ignored: frozenset[int]) -> None:
    """The dispositions `python -m` would start with: what the client inherited as ignored stays
    ignored (as exec keeps it), everything else default, SIGINT raising KeyboardInterrupt unless
    ignored (SIGPIPE and SIGXFSZ the interpreter ignores itself, so the client reports them)."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        handler: Any = signal.SIG_IGN if sig in ignored else signal.SIG_DFL
        if sig == signal.SIGINT and sig not in ignored:
            handler = signal.default_int_handler
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError, RuntimeError):
            pass  # a signal this platform reserves


def flush_standard_streams() -> bool:
    """Flush stdout and stderr as the interpreter does on exit; False when one failed (the
    interpreter then says so and exits 120: a full disk under `> log` is not a success)."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception as exc:
            ok = False
            try:
                os.write(2, f"Exception ignored in: {stream!r}\n{type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
    return ok


def finalize(code: int) -> int:
    """The interpreter's exit, after the job's code: non-daemon threads, atexit, the standard streams,
    the job's module-level objects (files, temporary files) finalized; the status it would exit with."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:  # the job's status is already decided
        pass
    flushed = flush_standard_streams()
    main = sys.modules.get("__main__")
    if main is not None:
        main.__dict__.clear()  # as finalization clears modules: what only the job's code held is closed
    gc.collect()
    flushed = flush_standard_streams() and flushed
    return code if flushed else 120


def run_worker(req: Request, fds: list[int], helper: int, mask: set[int]) -> None:
    """In the worker (a fresh fork): become `python -m <module> <args>` for the client, then exit.
    The signals the client passes on are blocked until the job's dispositions are in place."""
    code, by_signal = 1, 0
    try:
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the helper relays the status: without it, stop
        if os.getppid() != helper:
            os._exit(1)  # the helper died before the line above: nobody would relay the status
        os.setpgid(0, 0)  # the helper signals the whole job, children included
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        inherit_signals(req.ignored)
        os.chdir(req.cwd)
        os.umask(req.umask)
        os.environb.clear()
        os.environb.update(req.env)
        tempfile.tempdir = None  # found again from the job's TMPDIR
        like = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
        sys.stdin, sys.stdout, sys.stderr = (std_stream(fd, like[fd]) for fd in (0, 1, 2))  # type: ignore[arg-type]
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
        module = req.argv[1]
        sys.argv = [module, *req.argv[2:]]
        # `python -m` runs the module's code once, as __main__, in a __main__ module that stays
        sys.modules.pop(module, None)
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a signal passed on meanwhile arrives now
            runpy._run_module_as_main(module)  # type: ignore[attr-defined]
            code = 0
        except SystemExit as exc:
            code = exit_code(exc.code)
        except KeyboardInterrupt as exc:
            job_traceback(exc)
            by_signal = signal.SIGINT  # as the interpreter ends on an uncaught KeyboardInterrupt
        except BaseException as exc:  # printed as `python -m` would, then the job fails
            job_traceback(exc)
            code = 1
        code = finalize(code)
    except BaseException:  # the worker could not become the job: say why on the job's stderr
        traceback.print_exc()
        flush_standard_streams()
    finally:
        if by_signal:
            signal.signal(by_signal, signal.SIG_DFL)
            os.kill(os.getpid(), by_signal)
        os._exit(code)


def serve_one(conn: socket.socket, client: int) -> None:
    """In the helper: read one request, start its worker once the client confirms, relay its signals
    and status; interrupt, then kill, the job if the client goes away."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    data, fds = read_request(conn)
    req = None
    whole = len(data) >= 4 and len(data) == 4 + int.from_bytes(data[:4], "little")
    if whole and len(fds) == 3:
        req = parse_request(data[4:])
    why = ("not a job request" if whole else "an incomplete request") if req is None else refusal(req, client)
    if req is None or why is not None:
        log(f"refused a job ({why}): it runs the ordinary way")  # the log says why
        send_status(conn, jobclient.FALLBACK)
        return
    send_status(conn, jobclient.READY)
    ready, _, _ = select.select([conn], [], [], GO_TIMEOUT_S)
    if not ready or conn.recv(len(jobclient.GO)) != jobclient.GO:
        return  # the client gave up, and runs the job itself
    helper = os.getpid()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON.keys())
    try:
        pid = os.fork()
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        log(f"could not start a job ({exc}): it runs the ordinary way")
        send_status(conn, jobclient.FALLBACK)
        return
    if pid == 0:
        conn.close()
        run_worker(req, fds, helper, mask)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        os.setpgid(pid, pid)  # here too, so a signal passed on at once finds the job's group
    except OSError:
        pass  # the worker did it first, or is gone
    for fd in fds:
        os.close(fd)
    send_status(conn, os.waitstatus_to_exitcode(relay(conn, pid)))


def relay(conn: socket.socket, pid: int) -> int:
    """The worker's wait status. Signals the client passes on (one byte each) go to the worker's
    process group; if the client's end closes first, the group is interrupted, then killed."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([conn.fileno(), pidfd], [], [])
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
            try:
                sent = conn.recv(64)
            except OSError:
                sent = b""
            if sent:
                for sig in sent:
                    if sig in PASSED_ON:
                        signalled(pid, PASSED_ON[sig])
                continue
            # the client is gone: as Ctrl-C would, so the job's atomic writers remove their temporaries
            signalled(pid, signal.SIGINT)
            if not select.select([pidfd], [], [], KILL_GRACE_S)[0]:
                signalled(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)


def signalled(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


class Stopped(Exception):
    """SIGTERM from the controller: the run is over."""


def stop_serving(_sig: int, _frame: object) -> None:
    raise Stopped


def serve(listener: socket.socket, controller: int) -> None:
    """Accept jobs until the controller is gone or stops the server; then remove the socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's Ctrl-C is for its jobs, not for the server
    signal.signal(signal.SIGTERM, stop_serving)
    accepted = [0]
    address = Path(listener.getsockname())
    try:
        accept_loop(listener, controller, accepted)
    except Stopped:
        pass
    finally:
        remove_socket(address)
    reap_helpers()
    log(f"optrace job server: {accepted[0]} jobs")


def accept_loop(listener: socket.socket, controller: int, accepted: list[int]) -> None:
    uid = os.getuid()
    while os.getppid() == controller:
        # helpers are reaped here, not by the kernel, so the jobs' CPU time reaches the controller's
        # rusage like that of any child (the benchmarks read it)
        reap_helpers()
        ready, _, _ = select.select([listener], [], [], ACCEPT_POLL_S)
        if not ready:
            continue
        try:
            conn, _ = listener.accept()
        except (InterruptedError, ConnectionAbortedError):
            continue
        except OSError as exc:
            # out of file descriptors or memory: the pending connection would make this loop spin,
            # and its client wait. Stopping closes the socket: every client runs its job itself.
            log(f"optrace job server stops: cannot accept a job ({exc})")
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        client, peer_uid, _gid = struct.unpack("3i", creds)
        if peer_uid != uid:
            conn.close()  # only this user's jobs (the socket's folder is 0700 too)
            continue
        try:
            pid = os.fork()
        except OSError as exc:
            log(f"could not serve a job ({exc}): it runs the ordinary way")
            conn.close()  # closed before READY: the client runs the job itself
            continue
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # stopping the server leaves its jobs running
            listener.close()
            code = 0
            try:
                serve_one(conn, client)
            except BaseException as exc:  # one broken connection never stops the server
                log(f"a job's connection failed: {type(exc).__name__}: {exc}")
                code = 1
            os._exit(code)
        accepted[0] += 1
        conn.close()


def reap_helpers() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def remove_socket(address: Path) -> None:
    """The socket and its private folder (made by start)."""
    try:
        address.unlink()
        if address.parent.name.startswith(FOLDER_PREFIX):
            address.parent.rmdir()
    except OSError:
        pass


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace.run.jobserver", description=__doc__)
    ap.add_argument("--fd", type=int, required=True, help="the listening socket, inherited from the controller")
    ap.add_argument("--controller", type=int, required=True, help="the pid of the run's controller")
    args = ap.parse_args(argv)
    listener = socket.socket(fileno=args.fd)
    for module in PRELOAD:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()  # imported objects stay shared with the forks (no copy-on-write from the collector)
    serve(listener, args.controller)
    return 0


@dataclass
class Server:
    """The controller's handle on a running server."""

    process: subprocess.Popen
    folder: Path

    @property
    def address(self) -> str:
        return str(self.folder / "socket")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        remove_socket(Path(self.address))  # a server killed outright leaves it


def start(log_path: Path) -> Server | None:
    """Start a server for this controller, or None where a job is better started the ordinary way
    (a socket path too long for AF_UNIX, no pidfd on this platform)."""
    if not hasattr(os, "pidfd_open"):
        return None
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))  # 0700: only this user can connect
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(folder / "socket"))
        listener.listen(64)
    except OSError:
        listener.close()
        folder.rmdir()
        return None
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as out:  # this run's server only
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "optrace.run.jobserver",
                "--fd",
                str(listener.fileno()),
                "--controller",
                str(os.getpid()),  # a controller gone before the server is up is noticed too
            ],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # Ctrl-C reaches the jobs (through their clients), not the server
        )
    listener.close()
    return Server(process, folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
