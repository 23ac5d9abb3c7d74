"""The job side of the warm job server (optrace.run.jobserver): a job's command, at a fraction of the
cost of starting Python with the package's imports.

    python -S .../optrace/run/jobclient.py -m <module> <args>...

means exactly `python -m <module> <args>...`. When `OPTRACE_JOBSERVER` names the socket of a server of
this run, the client hands the server its standard streams, working directory, umask, environment and
arguments, and the server runs the module in a fork of a process that has already imported the
package; the client exits with the job's status. Anything else (no server, a server of another
interpreter, a refused or broken connection) runs the command itself by exec, as if the client had
never been there, so a cluster job, a conda job or a run whose server died behave as before.

Run as a script under `python -S`: it imports nothing but built-in modules (no site, no package), which
is why it costs little more than the interpreter. Killing the client (Snakemake cancelling the job)
closes the connection, and the server then kills the job.
"""

import _socket
import os
import sys

SOCKET_ENV = "OPTRACE_JOBSERVER"
MAGIC = b"optrace-job-1"
FALLBACK = 0x7FFFFFFF  # the server's answer "run it yourself"
STATUS_BYTES = 4


def request(argv: list[str]) -> bytes:
    """What the server needs to run `python <argv>` as this process would: NUL-separated fields
    (no argument, path or environment entry can hold a NUL), length-prefixed."""
    umask = os.umask(0)
    os.umask(umask)
    fields = [MAGIC, sys.executable.encode(), os.getcwdb(), str(umask).encode(), str(len(argv)).encode()]
    fields += [os.fsencode(a) for a in argv]
    fields += [k + b"=" + v for k, v in os.environb.items()]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "little") + body


def served(path: str, argv: list[str]) -> int | None:
    """The job's exit status from the server, or None when the server did not take the job."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(path)
            data = request(argv)
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
            sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            if sent < len(data):
                sock.sendall(data[sent:])
        except OSError:
            return None  # the server never had the whole request: it ran nothing
        answer = b""
        while len(answer) < STATUS_BYTES:
            try:
                chunk = sock.recv(STATUS_BYTES - len(answer))
            except OSError:
                chunk = b""
            if not chunk:
                # the server may have started the job: running it a second time could double its
                # effects, so the job fails (Snakemake re-runs it on the next run)
                print("error: optrace job server: the job's status was lost (the server went away)", file=sys.stderr)
                return 1
            answer += chunk
    finally:
        sock.close()
    status = int.from_bytes(answer, "little", signed=True)
    if status == FALLBACK:
        return None
    return status if status >= 0 else 128 - status  # killed by signal N: 128 + N, as a shell reports it


def main(argv: list[str]) -> int:
    path = os.environ.get(SOCKET_ENV, "")
    try:
        status = served(path, argv) if path else None
    except KeyboardInterrupt:
        return 130  # Ctrl-C: the server interrupts the job when this end closes
    if status is None:
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, *argv])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
