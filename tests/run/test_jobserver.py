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
        time.sleep(0.5)  # a cleanup that takes a while: whoever waits for the job waits for it
        open(sys.argv[2] + ".cleaned-up", "w").close()
if sys.argv[1] == "dispositions":
    import signal
    ignored = sorted(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)
                     and signal.getsignal(s) == signal.SIG_IGN)
    print(json.dumps({"ignored": ignored, "int": repr(signal.getsignal(signal.SIGINT)), "pid": os.getpid()}))
    sys.exit(0)
if sys.argv[1] == "unclosed":
    leaked = open(sys.argv[2], "w")
    leaked.write("written, never closed")
    sys.exit(0)
if sys.argv[1] == "streams":
    def shape(name):
        stream = getattr(sys, name)
        return None if stream is None else [stream.encoding, stream.errors, stream.line_buffering,
                                            stream.write_through, stream is getattr(sys, "__" + name + "__")]
    out = {name: shape(name) for name in ("stdin", "stdout", "stderr")}
    out["pid"] = os.getpid()
    out["main"] = sys.modules["__main__"].__dict__.get("shape") is shape
    print(json.dumps(out), file=sys.stderr if sys.stdout is None else sys.stdout)
    sys.exit(0)
data = sys.stdin.read()
umask = os.umask(0)
print(json.dumps({"argv": sys.argv[1:], "name": __name__, "cwd": os.getcwd(), "umask": umask,
                  "foo": os.environ.get("FOO"), "stdin": data, "pid": os.getpid()}))
print("a line on stderr", file=sys.stderr)
if sys.argv[1] == "raise":
    raise ValueError("boom")
if sys.argv[1] == "interrupt":
    raise KeyboardInterrupt
if sys.argv[1] == "message":
    sys.exit("a message")
if sys.argv[1] == "huge":
    sys.exit(2**63)
if sys.argv[1] == "kill":
    sys.stdout.flush()
    os.kill(os.getpid(), 9)
sys.exit(int(sys.argv[1]))
"""


def start_server(tmp_path, monkeypatch):
    """A server started from a folder holding the probe module (the module search path starts there)."""
    (tmp_path / "probe.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    srv = jobserver.start(tmp_path / "server.log")
    if srv is None:
        pytest.skip("no pidfd or AF_UNIX here: runs never start a server either")
    return srv


@pytest.fixture
def server(tmp_path, monkeypatch):
    srv = start_server(tmp_path, monkeypatch)
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
        (["kill"], -signal.SIGKILL, "a line on stderr"),  # the client dies by the job's signal
        (["interrupt"], -signal.SIGINT, "KeyboardInterrupt"),
        (["huge"], 255, "a line on stderr"),
    ],
)
def test_exit_statuses_are_those_of_python(server, args, status, on_stderr):
    pid, code, served, err = run(client_argv(*args), server.address)
    _, direct_code, _, direct_err = run([sys.executable, "-m", "probe", *args], None)
    assert served["pid"] != pid
    assert code == direct_code == status and on_stderr in err and on_stderr in direct_err
    assert "jobserver.py" not in err  # the server's own frames are not the job's traceback
    if "Traceback" in err:
        assert err == direct_err


def test_without_a_server_the_client_runs_the_command_itself(server, tmp_path):
    for address in (None, str(tmp_path / "no-such-socket")):
        pid, code, report, _ = run(client_argv("4"), address)
        assert (code, report["pid"], report["argv"]) == (4, pid, ["4"])  # exec'd in place


@pytest.mark.parametrize(
    "difference",
    ["PYTHONPATH", "PYTHONHASHSEED", "LC_ALL", "TZ", "cwd", "interpreter"],
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
        env[difference] = {"LC_ALL": "C", "TZ": "America/New_York"}.get(difference, "123")
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
    srv = start_server(tmp_path, monkeypatch)
    srv.stop()
    assert srv.process.returncode is not None and not srv.folder.exists()
    # a controller killed outright: its server notices within a few seconds and exits
    controller = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path; from optrace.run import jobserver; "
            "s = jobserver.start(Path('server.log')); print(s.process.pid, s.folder, flush=True); "
            "os.kill(os.getpid(), 9)",
        ],
        capture_output=True,
        text=True,
    )
    pid, folder = controller.stdout.split()
    assert Path(folder).name.startswith(jobserver.FOLDER_PREFIX)
    assert wait_until(lambda: gone(int(pid)), timeout=20), "the server outlived its controller"
    assert not Path(folder).exists()  # it removed its socket and folder on its way out


def test_no_server_where_the_socket_path_is_too_long(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    assert jobserver.start(tmp_path / "server.log") is None  # jobs then start the ordinary way
    assert list(deep.iterdir()) == [] and not (tmp_path / "server.log").exists()


@pytest.mark.parametrize("unbuffered", [False, True])
def test_standard_streams_are_made_as_the_interpreter_makes_them(tmp_path, monkeypatch, unbuffered):
    if unbuffered:
        monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    else:
        monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    srv = start_server(tmp_path, monkeypatch)
    try:
        pid, code, served, _ = run(client_argv("streams"), srv.address)
    finally:
        srv.stop()
    _, _, direct, _ = run([sys.executable, "-m", "probe", "streams"], None)
    assert code == 0 and served["pid"] != pid
    assert served["stdout"][3] is unbuffered  # write_through
    assert {k: v for k, v in served.items() if k != "pid"} == {k: v for k, v in direct.items() if k != "pid"}


@pytest.mark.parametrize("closed", ["0", "1", "2"])
def test_a_closed_standard_stream_runs_the_command_itself(server, closed):
    argv = ["bash", "-c", f'exec "$@" {closed}>&-', "bash", *client_argv("streams")]
    env = {**os.environ, jobclient.SOCKET_ENV: server.address}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    lines = (proc.stdout + proc.stderr).strip()
    report = json.loads(lines) if closed != "2" else None
    direct = subprocess.run(
        ["bash", "-c", f'exec "$@" {closed}>&-', "bash", sys.executable, "-m", "probe", "streams"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == direct.returncode == 0
    if report is not None:  # exec'd in place (no fork of the server), with the stream as python -m sees it
        assert report["stdin" if closed == "0" else "stdout"] is None
        assert {k: v for k, v in report.items() if k != "pid"} == {
            k: v for k, v in json.loads((direct.stdout + direct.stderr).strip()).items() if k != "pid"
        }


def test_a_signal_to_the_client_reaches_the_job_and_the_client_waits_for_it(server, tmp_path):
    pidfile = tmp_path / "job.pid"
    env = {**os.environ, jobclient.SOCKET_ENV: server.address}
    client = subprocess.Popen(client_argv("sleep", str(pidfile)), env=env, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text())
    client.send_signal(signal.SIGINT)
    _, err = client.communicate(timeout=30)
    # the job's cleanup (0.5 s) was over before the client returned, as with python -m under a shell
    assert (tmp_path / "job.pid.cleaned-up").exists()
    assert client.returncode == -signal.SIGINT and "KeyboardInterrupt" in err  # died by it, as python -m


@pytest.mark.parametrize("answer", [b"", b"\x01"])
def test_a_server_that_goes_away_before_the_job_starts_runs_nothing(tmp_path, monkeypatch, answer):
    """Closed before READY (or after a partial answer): the client runs the command itself, once."""
    (tmp_path / "probe.py").write_text(PROBE)
    monkeypatch.chdir(tmp_path)
    address = str(tmp_path / "fake.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as fake:
        fake.bind(address)
        fake.listen(1)
        client = subprocess.Popen(
            client_argv("6"), env={**os.environ, jobclient.SOCKET_ENV: address}, stdout=subprocess.PIPE, text=True
        )
        conn, _ = fake.accept()
        conn.recv(1 << 20)
        conn.sendall(answer)
        conn.close()
        out, _ = client.communicate(timeout=30)
    assert client.returncode == 6 and json.loads(out)["pid"] == client.pid


def test_a_job_whose_helper_dies_is_killed_and_reported_failed(server, tmp_path):
    pidfile = tmp_path / "job.pid"
    env = {**os.environ, jobclient.SOCKET_ENV: server.address}
    client = subprocess.Popen(client_argv("stubborn", str(pidfile)), env=env, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text())
    job_pid = int(pidfile.read_text())
    helper = int(Path(f"/proc/{job_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(helper, signal.SIGKILL)
    _, err = client.communicate(timeout=30)
    assert client.returncode == 1 and "status was lost" in err
    assert wait_until(lambda: gone(job_pid)), "the job outlived the helper that relays its status"


def test_a_terminal_stdout_is_line_buffered_as_python_makes_it(tmp_path, monkeypatch):
    import pty

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # buffered, so line buffering shows
    server = start_server(tmp_path, monkeypatch)

    def on_a_terminal(argv):
        leader, follower = pty.openpty()
        try:
            proc = subprocess.Popen(
                argv,
                env={**os.environ, jobclient.SOCKET_ENV: server.address},
                stdout=follower,
                stdin=subprocess.DEVNULL,
            )
            proc.wait(timeout=60)
            os.close(follower)
            follower = -1
            out = b""
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # EIO: the terminal's other end is closed and drained
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            os.close(leader)
            if follower >= 0:
                os.close(follower)
        return proc, json.loads(out.decode().strip())

    try:
        client, served = on_a_terminal(client_argv("streams"))
    finally:
        server.stop()
    _, direct = on_a_terminal([sys.executable, "-m", "probe", "streams"])
    assert served["pid"] != client.pid and served["stdout"][2] is True  # line_buffering
    assert {k: v for k, v in served.items() if k != "pid"} == {k: v for k, v in direct.items() if k != "pid"}


def state(pid):
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_signals_the_shell_ignores_stay_ignored_and_are_not_passed_on(server, tmp_path):
    shell = ["bash", "-c", 'trap "" HUP INT; exec "$@"', "bash"]
    env = {**os.environ, jobclient.SOCKET_ENV: server.address}
    served = subprocess.run([*shell, *client_argv("dispositions")], env=env, capture_output=True, text=True)
    direct = subprocess.run([*shell, sys.executable, "-m", "probe", "dispositions"], capture_output=True, text=True)
    served_report, direct_report = json.loads(served.stdout), json.loads(direct.stdout)
    del served_report["pid"], direct_report["pid"]
    assert served_report == direct_report and signal.SIGHUP in served_report["ignored"]
    assert "refused" not in (tmp_path / "server.log").read_text()  # it was served
    # `nohup`: a hang-up sent to the client does not reach the job
    pidfile = tmp_path / "job.pid"
    client = subprocess.Popen([*shell, *client_argv("stubborn", str(pidfile))], env=env)
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text())
    job_pid = int(pidfile.read_text())
    client.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert not gone(job_pid)
    client.kill()
    client.wait()
    assert wait_until(lambda: gone(job_pid))


def test_ctrl_z_stops_the_job_and_fg_resumes_it(server, tmp_path):
    pidfile = tmp_path / "job.pid"
    client = subprocess.Popen(
        client_argv("sleep", str(pidfile)), env={**os.environ, jobclient.SOCKET_ENV: server.address}
    )
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text())
    job_pid = int(pidfile.read_text())
    client.send_signal(signal.SIGTSTP)
    assert wait_until(lambda: state(job_pid) == "T" and state(client.pid) == "T")
    client.send_signal(signal.SIGCONT)
    assert wait_until(lambda: state(job_pid) == "S" and state(client.pid) == "S")
    client.kill()
    client.wait()
    assert wait_until(lambda: gone(job_pid))


def test_a_signal_sent_with_go_reaches_the_job(server):
    """The race of a signal passed on before the worker has its process group and handlers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.address)
        body = jobclient.request(["-m", "probe", "sleep", os.devnull + "-not-written"])
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        sock.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        assert int.from_bytes(sock.recv(4), "little", signed=True) == jobclient.READY
        sock.sendall(jobclient.GO + bytes([signal.SIGINT]))
        sock.settimeout(30)
        status = int.from_bytes(sock.recv(4), "little", signed=True)
    assert status == -signal.SIGINT


def test_other_resource_limits_run_the_ordinary_way(server, tmp_path):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = min(soft, 512) - 1
    proc = subprocess.Popen(
        client_argv("0"),
        env={**os.environ, jobclient.SOCKET_ENV: server.address},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (lower, hard)),
    )
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out)["pid"] == proc.pid  # refused, then exec'd in place
    assert "refused a job (other resource limits, niceness or CPUs)" in (tmp_path / "server.log").read_text()


def test_exit_is_the_interpreters_a_failed_flush_and_unclosed_files(server, tmp_path):
    env = {**os.environ, jobclient.SOCKET_ENV: server.address}
    with open("/dev/full", "w") as full:
        served = subprocess.run(client_argv("0"), env=env, stdout=full, stderr=subprocess.PIPE, text=True)
        direct = subprocess.run([sys.executable, "-m", "probe", "0"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert served.returncode == direct.returncode != 0  # a full disk under `> log` is no success
    assert ("No space left on device" in served.stderr) == ("No space left on device" in direct.stderr)
    for how in ("served", "direct"):
        target = tmp_path / f"{how}.txt"
        argv = (
            client_argv("unclosed", str(target))
            if how == "served"
            else [sys.executable, "-m", "probe", "unclosed", str(target)]
        )
        assert subprocess.run(argv, env=env).returncode == 0
        assert target.read_text() == "written, never closed"


def test_a_server_out_of_descriptors_stops_and_jobs_run_the_ordinary_way(server, tmp_path):
    import resource

    run(client_argv("0"), server.address)  # the server is up and serving
    in_use = {int(fd) for fd in os.listdir(f"/proc/{server.process.pid}/fd")}
    lowest_free = min(set(range(len(in_use) + 1)) - in_use)
    resource.prlimit(server.process.pid, resource.RLIMIT_NOFILE, (lowest_free, lowest_free))  # accept fails
    start = time.monotonic()
    pid, code, report, _ = run(client_argv("7"), server.address)
    assert (code, report["pid"]) == (7, pid) and time.monotonic() - start < 20
    assert wait_until(lambda: server.process.poll() is not None)
    assert "stops: cannot accept a job" in (tmp_path / "server.log").read_text()
