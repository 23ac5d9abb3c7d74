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
(`runpy`, as `python -m` would) with the job's streams, folder, umask and environment; the helper
relays the worker's exit status. When the client goes away (Ctrl-C, the client killed) the helper
interrupts the worker's process group, and kills it if it is still there after a grace period. A request the server cannot serve exactly as `python -m` would
(another interpreter, another working directory, other PYTHON* variables, another user) is answered
"run it yourself": the client then execs the command, so nothing depends on the server being there.
The server exits when the run ends (`stop`) or when the controller that started it is gone.
"""

from __future__ import annotations

import argparse
import atexit
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
from dataclasses import dataclass
from pathlib import Path

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
KILL_GRACE_S = 2.0  # SIGINT, then SIGKILL, for a job whose client went away


@dataclass(frozen=True)
class Request:
    executable: str
    cwd: bytes
    umask: int
    argv: list[str]
    env: dict[bytes, bytes]


def parse_request(body: bytes) -> Request | None:
    """The client's request (optrace.run.jobclient.request), or None when it is not one."""
    fields = body.split(b"\0")
    if len(fields) < 5 or fields[0] != jobclient.MAGIC:
        return None
    try:
        umask, argc = int(fields[3]), int(fields[4])
    except ValueError:
        return None
    if not (0 <= umask <= 0o777) or not (2 <= argc <= len(fields) - 5):
        return None
    argv = [os.fsdecode(a) for a in fields[5 : 5 + argc]]
    env = {}
    for entry in fields[5 + argc :]:
        key, sep, value = entry.partition(b"=")
        if not sep or not key:
            return None
        env[key] = value
    return Request(os.fsdecode(fields[1]), fields[2], umask, argv, env)


def python_settings(env: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The variables that change what `python` itself does at start-up (PYTHONPATH, PYTHONHASHSEED,
    PYTHONWARNINGS, ...): a job whose differ from the server's is not served."""
    return {k: v for k, v in env.items() if k.startswith(b"PYTHON")}


def refusal(req: Request) -> str | None:
    """Why this server cannot run the request as `python -m` would, or None."""
    if req.executable != sys.executable:
        return "another interpreter"
    if os.fsencode(os.getcwd()) != req.cwd:
        return "another working directory (the module search path starts there)"
    if python_settings(req.env) != python_settings(dict(os.environb)):
        return "other PYTHON* variables"
    if req.argv[0] != "-m":
        return "not a module"
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


def run_worker(req: Request, fds: list[int]) -> None:
    """In the worker (a fresh fork): become `python -m <module> <args>` for the client, then exit."""
    code = 1
    try:
        os.setpgid(0, 0)  # the helper kills the whole job, children included, when the client goes
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it at start-up
        os.chdir(req.cwd)
        os.umask(req.umask)
        os.environb.clear()
        os.environb.update(req.env)
        tempfile.tempdir = None  # found again from the job's TMPDIR
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), line_buffering=False)
        sys.stderr = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)), errors="backslashreplace", line_buffering=True
        )
        sys.argv = [req.argv[1], *req.argv[2:]]
        # `python -m` runs the module's code once, as __main__; the preloaded copy would make runpy warn
        sys.modules.pop(req.argv[1], None)
        try:
            runpy.run_module(req.argv[1], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exit_code(exc.code)
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # printed as `python -m` would, then the job fails
            traceback.print_exc()
            code = 1
        try:
            # what the interpreter does before it exits: wait for non-daemon threads, run atexit
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
        except BaseException:  # the job's status is already decided
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # a closed pipe must not change the job's status
                pass
        os._exit(code)


def exit_code(code: object) -> int:
    """The status `python` exits with for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def serve_one(conn: socket.socket) -> None:
    """In the helper: read one request, run it in a worker, relay its status; kill it if the client goes."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    data, fds = read_request(conn)
    req = None
    if len(data) >= 4 and len(data) == 4 + int.from_bytes(data[:4], "little") and len(fds) == 3:
        req = parse_request(data[4:])
    why = "not a job request" if req is None else refusal(req)
    if req is None or why is not None:
        # the log says why a job ran the ordinary way
        print(f"refused a job ({why}): it runs the ordinary way", file=sys.stderr, flush=True)
        send_status(conn, jobclient.FALLBACK)
        return
    pid = os.fork()
    if pid == 0:
        conn.close()
        run_worker(req, fds)
    for fd in fds:
        os.close(fd)
    send_status(conn, os.waitstatus_to_exitcode(wait_or_kill(conn, pid)))


def wait_or_kill(conn: socket.socket, pid: int) -> int:
    """The worker's wait status; if the client's end closes first, the worker's group is killed."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([conn.fileno(), pidfd], [], [])
        while pidfd not in ready:
            # the client sends nothing after its request: readable means it closed. SIGINT first, as
            # Ctrl-C would: the job's KeyboardInterrupt lets its atomic writers remove their temporaries
            signalled(pid, signal.SIGINT)
            ready, _, _ = select.select([pidfd], [], [], KILL_GRACE_S)
            if not ready:
                signalled(pid, signal.SIGKILL)
                ready = [pidfd]
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)


def signalled(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def serve(listener: socket.socket, controller: int) -> None:
    """Accept jobs until the controller is gone or the listening socket is shut."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's Ctrl-C is for its jobs, not for the server
    signal.signal(signal.SIGTERM, stop_serving)
    accepted = [0]
    try:
        accept_loop(listener, controller, accepted)
    except Stopped:
        pass
    reap_helpers()
    print(f"optrace job server: {accepted[0]} jobs", flush=True)


class Stopped(Exception):
    """SIGTERM from the controller: the run is over."""


def stop_serving(_sig: int, _frame: object) -> None:
    raise Stopped


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
        except OSError:
            continue
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != uid:
            conn.close()  # only this user's jobs (the socket's folder is 0700 too)
            continue
        accepted[0] += 1
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # stopping the server leaves its jobs running
            listener.close()
            code = 0
            try:
                serve_one(conn)
            except BaseException:  # one broken connection never stops the server
                traceback.print_exc()
                code = 1
            os._exit(code)
        conn.close()


def reap_helpers() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
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
        for leftover in (self.folder / "socket", self.folder):
            try:
                leftover.rmdir() if leftover == self.folder else leftover.unlink()
            except OSError:
                pass


def start(log: Path) -> Server | None:
    """Start a server for this controller, or None where a job is better started the ordinary way
    (a socket path too long for AF_UNIX, no pidfd on this platform)."""
    if not hasattr(os, "pidfd_open"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="optrace-jobs-"))  # 0700: only this user can connect
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(folder / "socket"))
        listener.listen(64)
    except OSError:
        listener.close()
        folder.rmdir()
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
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
