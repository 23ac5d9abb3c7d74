"""Hostile environments (#28): a home that is a file or read-only, a cache key that is a FIFO or shared,
a full or read-only results disk, git missing, the user's GIT_* variables. Each gives a working run or
one line naming the real cause; none a traceback, none a hang.

Read-only and full file systems are real mounts (a tmpfs in a private mount namespace, `unshare -m`);
where the machine does not allow that, those cases skip.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from tests.robustness.hostile_kit import CANARY, TIMEOUT, good, ingest, ok
from tests.support import tracekit
from tests.support.workflow import copy_workflow


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    res = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt"], capture_output=True, timeout=10
    )
    return res.returncode == 0


CAN_MOUNT = _can_mount()
needs_mount = pytest.mark.skipif(not CAN_MOUNT, reason="no private mount namespace here (unshare -m, mount)")


def in_mount(folder: Path, options: str, command: list[str], *, fill: bool = False, cwd=None, env=None, timeout=60):
    """Run `command` with a fresh tmpfs mounted (`options`) on `folder`, in a private mount namespace;
    `fill`: fill it up first (a full disk)."""
    folder.mkdir(parents=True, exist_ok=True)
    filler = f"head -c 100000000 /dev/zero > {folder}/filler 2>/dev/null; " if fill else ""
    script = f'mount -t tmpfs -o {options} none "{folder}" && {filler}exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *command],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def key_probe(env) -> subprocess.CompletedProcess:
    """cache_secret() in a process of its own, as validate calls it; bounded, so a block fails the case."""
    code = "from optrace.secret import cache_secret, _PROCESS_KEY; print(cache_secret() == _PROCESS_KEY)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=TIMEOUT
    )


# ---- the validation-cache key ---------------------------------------------------------------------


def test_a_cache_key_that_is_a_fifo_does_not_block_and_says_why(tmp_path):
    os.mkfifo(tmp_path / "key")
    res = key_probe({"OPTRACE_CACHE_KEY": str(tmp_path / "key")})
    assert res.stdout.strip() == "True" and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "is not a regular file (a FIFO" in res.stderr


def test_a_cache_key_others_can_read_is_not_trusted(tmp_path):
    key = tmp_path / "key"
    key.write_bytes(b"k" * 64)
    key.chmod(0o644)
    res = key_probe({"OPTRACE_CACHE_KEY": str(key)})
    assert res.stdout.strip() == "True" and "can be read or written by another user" in res.stderr
    key.chmod(0o600)
    res = key_probe({"OPTRACE_CACHE_KEY": str(key)})
    assert res.stdout.strip() == "False" and res.stderr == ""  # the same file, private: trusted


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_cache_key_of_another_user_is_not_trusted(tmp_path):
    key = tmp_path / "key"
    key.write_bytes(b"k" * 64)
    key.chmod(0o600)
    os.chown(key, 65534, 65534)
    res = key_probe({"OPTRACE_CACHE_KEY": str(key)})
    assert res.stdout.strip() == "True" and "another user" in res.stderr


def test_a_cache_key_that_is_a_symlink_is_not_followed(tmp_path):
    (tmp_path / "real").write_bytes(b"k" * 64)
    (tmp_path / "real").chmod(0o600)
    (tmp_path / "key").symlink_to(tmp_path / "real")
    res = key_probe({"OPTRACE_CACHE_KEY": str(tmp_path / "key")})
    assert res.stdout.strip() == "True" and "cannot be opened" in res.stderr


def test_a_short_cache_key_is_not_used(tmp_path):
    key = tmp_path / "key"
    key.write_bytes(b"short")
    key.chmod(0o600)
    res = key_probe({"OPTRACE_CACHE_KEY": str(key)})
    assert res.stdout.strip() == "True" and "holds fewer than 32 bytes" in res.stderr


def test_a_new_cache_key_is_private_and_whole(tmp_path):
    key = tmp_path / "deep" / "er" / "key"
    res = key_probe({"OPTRACE_CACHE_KEY": str(key)})
    assert res.stdout.strip() == "False" and res.stderr == ""
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 64
    assert [p.name for p in key.parent.iterdir()] == ["key"]  # the private temp file is gone


def test_a_home_that_is_a_file_gives_a_per_process_key_with_a_note(tmp_path):
    (tmp_path / "home").write_text("not a directory")
    res = key_probe({"HOME": str(tmp_path / "home"), "OPTRACE_CACHE_KEY": ""})
    assert res.stdout.strip() == "True" and "Traceback" not in res.stderr
    assert "validation-cache.key cannot be opened (Not a directory)" in res.stderr


@pytest.mark.parametrize("home", ["", "results"])
def test_an_empty_or_relative_home_keeps_no_key_at_the_root_or_in_the_working_directory(tmp_path, home):
    """Red-team find: HOME= wrote /.cache/optrace/validation-cache.key, HOME=results a key inside the
    results tree (where the agent whose records are judged could read it and forge cache entries)."""
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "from optrace.secret import cache_secret, _PROCESS_KEY; print(cache_secret() == _PROCESS_KEY)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": home, "OPTRACE_CACHE_KEY": ""},
        timeout=TIMEOUT,
    )
    assert res.stdout.strip() == "True" and "is not an absolute path" in res.stderr, res.stderr
    assert not any(tmp_path.rglob("*.key"))


def test_a_relative_cache_key_path_is_not_kept(tmp_path):
    res = key_probe({"OPTRACE_CACHE_KEY": "results/k.key"})
    assert res.stdout.strip() == "True" and "OPTRACE_CACHE_KEY is not an absolute path" in res.stderr


@needs_mount
def test_a_read_only_home_gives_a_per_process_key_with_a_note(tmp_path):
    code = "from optrace.secret import cache_secret, _PROCESS_KEY; print(cache_secret() == _PROCESS_KEY)"
    res = in_mount(
        tmp_path / "home",
        "ro,size=64k",
        [sys.executable, "-c", code],
        env={**os.environ, "HOME": str(tmp_path / "home"), "OPTRACE_CACHE_KEY": ""},
    )
    assert res.stdout.strip() == "True", res.stderr
    assert "cannot be created (Read-only file system)" in res.stderr


# ---- snakemake under a bad home ------------------------------------------------------------------------


@pytest.mark.workflow
def test_a_home_that_is_a_file_runs_the_workflow(tmp_path):
    """Snakemake's own source cache used to go to ~/.cache and stop every run with a traceback before
    any job; profiles/default keeps it in the run's temporary directory."""
    wd = copy_workflow(tmp_path / "wf")
    (tmp_path / "home").write_text("not a directory")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("OPTRACE_CACHE_KEY", None)
    env.pop("XDG_CACHE_HOME", None)
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2"], cwd=wd, capture_output=True, text=True, env=env, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    assert "records validated" in res.stdout and "0 failed validation" in res.stdout


@pytest.mark.workflow
@needs_mount
def test_a_read_only_home_plans_and_runs_the_workflow(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("OPTRACE_CACHE_KEY", None)
    env.pop("XDG_CACHE_HOME", None)
    res = in_mount(
        tmp_path / "home", "ro,size=64k", [sys.executable, "-m", "snakemake", "-c2"], cwd=wd, env=env, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr and "records validated" in res.stdout


# ---- results on a full or read-only disk ------------------------------------------------------------


@needs_mount
def test_ingest_onto_a_full_disk_names_the_output_and_no_space(tmp_path):
    trace = good(tmp_path / "t")
    out = tmp_path / "full" / "out"
    res = in_mount(
        tmp_path / "full",
        "size=256k",
        [sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", str(out)],
        fill=True,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "no space left on the device; free space and re-run" in res.stderr
    assert str(out) in res.stderr


@needs_mount
def test_ingest_onto_a_read_only_disk_says_read_only(tmp_path):
    trace = good(tmp_path / "t")
    res = in_mount(
        tmp_path / "ro",
        "ro,size=64k",
        [sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", str(tmp_path / "ro" / "out")],
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "the file system is read-only" in res.stderr and res.stderr.count("\n") == 1


@pytest.mark.workflow
@needs_mount
def test_a_run_on_a_full_disk_says_no_space_in_its_summary(tmp_path):
    """Jobs on a full disk cannot even write their logs (the issue's empty packets log): the summary,
    printed to the terminal, names the cause."""
    wd = copy_workflow(tmp_path / "wf")
    res = in_mount(
        wd / "results",
        "size=512k",
        [sys.executable, "-m", "snakemake", "-c2", "--keep-going"],
        fill=True,
        cwd=wd,
        timeout=600,
    )
    assert res.returncode != 0  # a job failed: this run must not look like a success
    assert "Run summary" in res.stdout, res.stdout[-2000:] + res.stderr[-4000:]
    summary = res.stdout[res.stdout.index("Run summary") :]
    assert "no space left on the device holding results/staging" in summary
    assert "free space and re-run" in summary


# ---- git and the user's GIT_* variables --------------------------------------------------------------


def test_git_missing_from_path_is_one_line(tmp_path):
    trace = good(tmp_path / "t")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "env").symlink_to(shutil.which("env"))
    rc, _out, err, _files = ingest(trace, tmp_path, env={**os.environ, "PATH": str(bin_dir)})
    assert rc == 2 and err == "error: git: `git` is not on PATH; optrace reads traces with git\n"


def test_the_users_git_variables_name_another_repository_in_vain(tmp_path, outside):
    other = tmp_path / "other"
    build_trace(other, [CommitSpec(f"V0: baseline {CANARY}", {"kernel.py": f"# {CANARY}\n"})])
    trace = good(tmp_path / "t")
    marker, script = tmp_path / "RAN", tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho ran >> {marker}\nexec git "$@"\n')
    script.chmod(0o755)
    env = {
        **os.environ,
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_COMMON_DIR": str(other / ".git"),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(other / ".git" / "objects"),
        "GIT_INDEX_FILE": str(outside / "fifo"),
        "GIT_NAMESPACE": "elsewhere",
        "GIT_REPLACE_REF_BASE": "refs/heads/",
        "GIT_PYTHON_GIT_EXECUTABLE": str(script),
        "GIT_SSH_COMMAND": str(script),
        "GIT_TRACE": str(outside / "fifo"),
    }
    rows, meta, out = ok(trace, tmp_path, env=env)
    assert sorted(rows) == ["v0", "v1"] and CANARY not in out
    assert (
        meta["head_sha"]
        == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=trace, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    assert not marker.exists()


def test_a_users_gitconfig_that_includes_a_fifo_blocks_nothing(tmp_path, outside):
    """GitPython's import runs `git version`, which reads ~/.gitconfig: it must not see this one."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[include]\n\tpath = {outside / 'fifo'}\n")
    rows, _, _ = ok(good(tmp_path / "t"), tmp_path, env={**os.environ, "HOME": str(home)})
    assert sorted(rows) == ["v0", "v1"]


def test_another_locale_keeps_git_errors_in_the_words_we_read(tmp_path):
    trace = good(tmp_path / "t")
    for obj in (trace / ".git" / "objects").rglob("*"):
        if obj.is_file() and obj.parent.name != "info":
            obj.unlink()
    rc, _out, err, _ = ingest(trace, tmp_path, env={**os.environ, "LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de"})
    assert rc == 2 and "git log failed (a corrupt or incomplete repository)" in err


def test_a_bad_tmpdir_falls_back_to_a_usable_one(tmp_path):
    trace = good(tmp_path / "t")
    os.mkfifo(tmp_path / "tmp-fifo")
    for tmpdir in (tmp_path / "absent", tmp_path / "tmp-fifo"):
        rows, _, _ = ok(trace, tmp_path, env={**os.environ, "TMPDIR": str(tmpdir)})
        assert sorted(rows) == ["v0", "v1"]
        shutil.rmtree(tmp_path / "out")


def test_no_home_at_all(tmp_path):
    trace = good(tmp_path / "t")
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    rows, _, _ = ok(trace, tmp_path, env=env)
    assert sorted(rows) == ["v0", "v1"]


def test_output_piped_into_head_is_not_a_traceback(tmp_path):
    traces = [good(tmp_path / f"kernel_opt_{i:03d}_t") for i in range(2)]
    sheet = tmp_path / "traces.tsv"
    sheet.write_text("label\tpath\n" + "".join(f"k_{i}\t{traces[i % 2]}\n" for i in range(4000)))
    res = subprocess.run(
        f"{sys.executable} -m optrace sheet {sheet} | head -1", shell=True, capture_output=True, text=True, timeout=60
    )
    assert res.stdout.startswith("k-0\tk_0\t") and "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr


def test_the_kernel_of_a_trace_is_still_read_through_the_shadow(tmp_path):
    """Control for the cases above: the same environment games with a plain trace mine its kernel."""
    build_trace(
        tmp_path / "t", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), **tracekit.meta_files()})]
    )
    rows, _, _ = ok(tmp_path / "t", tmp_path, env={**os.environ, "GIT_DIR": "/nonexistent"})
    assert rows["v0"]["kernel_blob"]
