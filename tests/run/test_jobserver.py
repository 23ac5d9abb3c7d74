"""The warm job server (optrace.run.jobserver) and its client: a served job behaves exactly as
`python -m <module>` would, anything the server cannot serve exactly runs the ordinary way, and a job
whose client goes away is killed. Real processes and a real socket throughout."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optrace.run import jobclient, jobserver

PROBE = """
import json, os, sys
if sys.argv[1] in ("sleep", "stubborn"):
    import signal, time
    if sys.argv[1] == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    with open(sys.argv[2], "w") as fh:
        fh.write(str(os.getpid()))
    try:
        time.sleep(120)
    finally:
        open(sys.argv[2] + ".cleaned-up", "w").close()
data = sys.stdin.read()
umask = os.umask(0)
print(json.dumps({"argv": sys.argv[1:], "name": __name__, "cwd": os.getcwd(), "umask": umask,
                  "foo": os.environ.get("FOO"), "stdin": data, "pid": os.getpid()}))
print("a line on stderr", file=sys.stderr)
if sys.argv[1] == "raise":
    raise ValueError("boom")
if sys.argv[1] == "message":
    sys.exit("a message")
if sys.argv[1] == "kill":
    sys.stdout.flush()
    os.kill(os.getpid(), signal_number := 9)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A server started from a folder holding the probe module (the module search path starts there)."""
    (tmp_path / "probe.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    srv = jobserver.start(tmp_path / "server.log")
    if srv is None:
        pytest.skip("no pidfd or AF_UNIX here: runs never start a server either")
    yield srv
    srv.stop()


def client_argv(*args):
    return [sys.executable, "-S", jobclient.__file__, "-m", "probe", *args]


def run(argv, address, *, cwd=None, umask=None, **env):
    full_env = {k: v for k, v in os.environ.items() if k != jobclient.SOCKET_ENV}
    if address:
        full_env[jobclient.SOCKET_ENV] = address
    full_env.update(env)
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=full_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        umask=-1 if umask is None else umask,
    )
    out, err = proc.communicate("from stdin", timeout=60)
    report = json.loads(out) if out.strip() else None
    return proc.pid, proc.returncode, report, err


def test_a_served_job_is_the_module_run_as_python_m(server, tmp_path):
    pid, code, served, err = run(client_argv("3", "two words"), server.address, umask=0o027, FOO="bar")
    _, direct_code, direct, direct_err = run(
        [sys.executable, "-m", "probe", "3", "two words"], None, umask=0o027, FOO="bar"
    )
    assert served["pid"] != pid  # a fork of the server ran it, not the client
    assert code == direct_code == 3
    assert {k: v for k, v in served.items() if k != "pid"} == {k: v for k, v in direct.items() if k != "pid"}
    assert served == {
        "argv": ["3", "two words"],
        "name": "__main__",
        "cwd": str(tmp_path),
        "umask": 0o027,
        "foo": "bar",
        "stdin": "from stdin",
        "pid": served["pid"],
    }
    assert err == direct_err == "a line on stderr\n"


@pytest.mark.parametrize(
    ("args", "status", "on_stderr"),
    [
        (["0"], 0, "a line on stderr"),
        (["raise"], 1, "ValueError: boom"),
        (["message"], 1, "a message"),
        (["kill"], 128 + signal.SIGKILL, "a line on stderr"),
    ],
)
def test_exit_statuses_are_those_of_python(server, args, status, on_stderr):
    pid, code, served, err = run(client_argv(*args), server.address)
    _, direct_code, _, direct_err = run([sys.executable, "-m", "probe", *args], None)
    assert served["pid"] != pid
    assert code == status and on_stderr in err
    assert direct_code in (status, -signal.SIGKILL) and on_stderr in direct_err


def test_without_a_server_the_client_runs_the_command_itself(server, tmp_path):
    for address in (None, str(tmp_path / "no-such-socket")):
        pid, code, report, _ = run(client_argv("4"), address)
        assert (code, report["pid"], report["argv"]) == (4, pid, ["4"])  # exec'd in place


@pytest.mark.parametrize(
    "difference",
    ["PYTHONPATH", "PYTHONHASHSEED", "cwd", "interpreter"],
)
def test_what_the_server_cannot_run_exactly_runs_the_ordinary_way(server, tmp_path, difference):
    env, cwd, argv = {}, None, client_argv("5")
    if difference == "cwd":
        other = tmp_path / "other"
        other.mkdir()
        (other / "probe.py").write_text(PROBE)
        cwd = other
    elif difference == "interpreter":
        argv = [str(Path(sys.executable).resolve()), *argv[1:]]
        if argv[0] == sys.executable:
            pytest.skip("sys.executable is not a link here")
    else:
        env[difference] = "123"
    pid, code, report, _ = run(argv, server.address, cwd=cwd, **env)
    assert (code, report["pid"]) == (5, pid)  # refused, then exec'd in place
    assert report["cwd"] == str(cwd or tmp_path)
    assert "refused a job (" in (tmp_path / "server.log").read_text()


def test_a_malformed_request_is_refused_and_the_server_goes_on(server, tmp_path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.address)
        body = b"not-a-request\0" * 3
        sock.sendall(len(body).to_bytes(4, "little") + body)
        answer = sock.recv(4)
    assert int.from_bytes(answer, "little", signed=True) == jobclient.FALLBACK
    assert "refused a job (not a job request)" in (tmp_path / "server.log").read_text()
    pid, code, report, _ = run(client_argv("0"), server.address)
    assert code == 0 and report["pid"] != pid


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("job", ["sleep", "stubborn"])
def test_killing_the_client_interrupts_the_job_then_kills_it(server, tmp_path, job):
    pidfile = tmp_path / "job.pid"
    env = {k: v for k, v in os.environ.items() if k != jobclient.SOCKET_ENV}
    client = subprocess.Popen(client_argv(job, str(pidfile)), env={**env, jobclient.SOCKET_ENV: server.address})
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text())
    job_pid = int(pidfile.read_text())
    assert job_pid != client.pid and not gone(job_pid)
    client.kill()
    client.wait()
    assert wait_until(lambda: gone(job_pid)), "the job outlived its client"
    # interrupted as by Ctrl-C, so its cleanup ran; one that ignores SIGINT is killed after a grace period
    assert (tmp_path / "job.pid.cleaned-up").exists() == (job == "sleep")


def test_the_server_stops_with_the_run_and_when_its_controller_dies(tmp_path, monkeypatch):
    (tmp_path / "probe.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    srv = jobserver.start(tmp_path / "server.log")
    if srv is None:
        pytest.skip("no pidfd or AF_UNIX here")
    srv.stop()
    assert srv.process.returncode is not None and not srv.folder.exists()
    # a controller killed outright: its server notices within a few seconds and exits
    controller = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path; from optrace.run import jobserver; "
            "s = jobserver.start(Path('server.log')); print(s.process.pid, flush=True); os.kill(os.getpid(), 9)",
        ],
        capture_output=True,
        text=True,
    )
    orphan = int(controller.stdout.split()[0])
    assert wait_until(lambda: gone(orphan), timeout=20), "the server outlived its controller"


def test_no_server_where_the_socket_path_is_too_long(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    assert jobserver.start(tmp_path / "server.log") is None  # jobs then start the ordinary way
    assert list(deep.iterdir()) == [] and not (tmp_path / "server.log").exists()
