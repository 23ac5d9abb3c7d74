"""The job side of the warm job server (optrace.run.jobserver): a job's command, at a fraction of the
cost of starting Python with the package's imports.

    python -S .../optrace/run/jobclient.py -m <module> <args>...

means exactly `python -m <module> <args>...`. When `OPTRACE_JOBSERVER` names the socket of a server of
this run, the client hands the server its standard streams, working directory, umask, environment and
arguments, and the server runs the module in a fork of a process that has already imported the
package; the client exits with the job's status. Anything else (no server, a closed standard stream,
a server of another interpreter or locale, a refused, stalled or broken connection before the job
started) runs the command itself by exec, as if the client had never been there, so a cluster job, a
conda job or a run whose server died behave as before.

The exchange: the request, then the server's READY; the client's GO; then the job's status. The job
starts only after GO, so a client that gave up waiting (and ran the command itself) never has it run
twice. The job starts with the signals the client inherited as ignored ignored (`nohup`, `cmd &`);
while it runs, SIGINT, SIGTERM, SIGHUP, SIGTSTP and SIGCONT sent to the client and not ignored are
passed on to the job, and the client waits for its status, as a shell waits for `python -m`, and ends
as the job did (its exit status, or death by the same signal). If the client dies, the server
interrupts the job, then kills it.

Run as a script under `python -S`: it imports nothing but built-in modules (no site, no package), which
is why it costs little more than the interpreter.
"""

import _signal  # type: ignore[import-not-found]
import _socket
import os
import sys

SOCKET_ENV = "OPTRACE_JOBSERVER"
MAGIC = b"optrace-job-3"
STATUS_BYTES = 4
FALLBACK = 0x7FFFFFFF  # the server's answer "run it yourself": nothing of the job ran
READY = 0x7FFFFFFE  # the server can run the job and waits for GO
GO = b"g"
READY_TIMEOUT_S = 60.0  # a server that does not answer a request in this long is not used
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGTSTP, _signal.SIGCONT)


def ignored_signals() -> list[int]:
    """The signals this process inherited as ignored (exec keeps them so for `python -m`)."""
    found = []
    for sig in range(1, _signal.NSIG):
        try:
            if _signal.getsignal(sig) == _signal.SIG_IGN:
                found.append(sig)
        except (OSError, ValueError):
            pass
    return found


def request(argv: list[str]) -> bytes:
    """What the server needs to run `python <argv>` as this process would: NUL-separated fields
    (no argument, path or environment entry can hold a NUL), length-prefixed."""
    umask = os.umask(0)
    os.umask(umask)
    ignored = ",".join(map(str, ignored_signals())).encode()
    fields = [MAGIC, sys.executable.encode(), os.getcwdb(), str(umask).encode(), ignored, str(len(argv)).encode()]
    fields += [os.fsencode(a) for a in argv]
    fields += [k + b"=" + v for k, v in os.environb.items()]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "little") + body


def receive_status(sock: _socket.socket) -> int | None:
    """One 4-byte answer, None when the connection ended first."""
    answer = b""
    while len(answer) < STATUS_BYTES:
        try:
            chunk = sock.recv(STATUS_BYTES - len(answer))
        except OSError:
            return None
        if not chunk:
            return None
        answer += chunk
    return int.from_bytes(answer, "little", signed=True)


def served(path: str, argv: list[str]) -> int | None:
    """The job's exit status from the server, or None when the server did not run the job."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.settimeout(READY_TIMEOUT_S)
            sock.connect(path)
            data = request(argv)
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
            sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            if sent < len(data):
                sock.sendall(data[sent:])
            if receive_status(sock) != READY:
                return None  # refused, or no answer: nothing ran
            sock.settimeout(None)
            sock.sendall(GO)
        except OSError:
            return None  # the server never had the GO: it ran nothing
        passed_on = [sig for sig in FORWARDED if _signal.getsignal(sig) != _signal.SIG_IGN]
        previous = {sig: _signal.signal(sig, lambda sig, _frame: forward(sock, sig)) for sig in passed_on}
        try:
            status = receive_status(sock)
        finally:
            for sig, handler in previous.items():
                _signal.signal(sig, handler)
    finally:
        sock.close()
    if status is None:
        # the job was started: running it a second time could double its effects, so it fails
        # (Snakemake re-runs it on the next run)
        print("error: optrace job server: the job's status was lost (the server went away)", file=sys.stderr)
        return 1
    if status == FALLBACK:
        return None  # the server could not start the job after all (fork failed): nothing ran
    return status if status >= 0 else die_by(-status)


def die_by(sig: int) -> int:
    """End as the job did, killed by `sig`, so a shell sees what it would have seen of `python -m`."""
    try:
        _signal.signal(sig, _signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL: its action is fixed
    os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default is to be ignored: the status a shell would report


def forward(sock: _socket.socket, sig: int) -> None:
    """A signal for the job: the server sends it to the job's process group. A stop (Ctrl-Z) stops
    the job and then this client, as it would have stopped `python -m`."""
    try:
        sock.send(bytes([sig]))
    except OSError:
        pass  # the server is gone; the status read reports it
    if sig == _signal.SIGTSTP:
        handler = _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # stopped here until SIGCONT
        _signal.signal(sig, handler)


def streams_open() -> bool:
    """Fds 0, 1 and 2 are open (a closed one would be taken by the socket, and python -m would see
    None for it): with any closed the command runs itself."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return False
    return True


def main(argv: list[str]) -> int:
    path = os.environ.get(SOCKET_ENV, "")
    try:
        status = served(path, argv) if path and streams_open() else None
    except KeyboardInterrupt:
        return die_by(_signal.SIGINT)  # Ctrl-C before the job started
    if status is None:
        os.execv(sys.executable, [sys.executable, *argv])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
