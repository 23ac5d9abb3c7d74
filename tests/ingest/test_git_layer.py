"""GitPython is the one layer that talks to git (#27), and every git process it starts sees exactly the
environment and configuration we give it (#13's safety, kept).

A `git` shim first on PATH records each call's argv and environment, then runs the real git: what the
trace's ingest starts is observed from outside, not taken from the code's word.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from optrace.ingest.gitcmd import SAFE_CONFIG, git_environment
from tests.robustness.hostile_kit import good
from tests.support.paths import PACKAGE_DIR

SHELL_ADDS = {"PWD", "SHLVL", "_", "OLDPWD"}  # what /bin/sh puts into the shim's own environment


def record_git_calls(tmp_path, argv, env=None) -> list[tuple[list[str], dict[str, str]]]:
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "calls"
    log.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (shim / "git").write_text(
        f'#!/bin/sh\nn=$(mktemp -p {log})\nprintf "%s\\0" "$@" > "$n.argv"\nenv -0 > "$n.env"\nexec {real} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    base = os.environ if env is None else env
    subprocess.run(
        [sys.executable, "-m", "optrace", *map(str, argv)],
        check=True,
        capture_output=True,
        env={**base, "PATH": f"{shim}:{base['PATH']}"},
        timeout=60,
    )
    calls = []
    for argv_file in sorted(log.glob("*.argv")):
        args = argv_file.read_bytes().split(b"\0")[:-1]
        pairs = Path(str(argv_file)[: -len(".argv")] + ".env").read_bytes().split(b"\0")[:-1]
        environ = dict(p.decode().split("=", 1) for p in pairs)
        calls.append(([a.decode() for a in args], {k: v for k, v in environ.items() if k not in SHELL_ADDS}))
    return calls


def test_every_git_the_trace_gets_runs_with_our_environment_and_config_only(tmp_path):
    trace = good(tmp_path / "t")
    hostile = {**os.environ, "GIT_DIR": "/elsewhere", "GIT_CONFIG_PARAMETERS": "'core.pager=evil'", "EDITOR": "evil"}
    calls = record_git_calls(tmp_path, ["ingest", trace, "--out-dir", tmp_path / "o"], env=hostile)
    on_trace = [(argv, env) for argv, env in calls if argv != ["version"]]
    assert {next(a for a in argv if a in ("log", "cat-file", "ls-tree")) for argv, _ in on_trace} >= {"log", "cat-file"}
    for argv, env in on_trace:
        shadow = env["GIT_DIR"]
        assert set(env) == set(git_environment(shadow)) | {"GIT_DIR"}, sorted(set(env) ^ set(git_environment(shadow)))
        assert env["HOME"] == shadow and ".optrace-git-" in shadow and "/elsewhere" not in shadow
        assert argv[:2] == ["--no-pager", "--no-replace-objects"]
        given = {argv[i + 1] for i, a in enumerate(argv) if a == "-c"}
        assert given >= {f"{k}={v}" for k, v in SAFE_CONFIG}


def test_gitpythons_import_probe_sees_none_of_the_users_git_variables(tmp_path):
    trace = good(tmp_path / "t")
    env = {**os.environ, "GIT_TRACE": "/dev/null", "GIT_CONFIG_GLOBAL": "/elsewhere/config"}
    calls = record_git_calls(tmp_path, ["ingest", trace, "--out-dir", tmp_path / "o"], env=env)
    probes = [e for argv, e in calls if argv == ["version"]]
    assert probes  # GitPython's own start-up check
    for e in probes:
        assert "GIT_TRACE" not in e and e["GIT_CONFIG_GLOBAL"] == os.devnull and e["GIT_CONFIG_NOSYSTEM"] == "1"


def test_a_bundle_is_unpacked_by_the_same_layer(tmp_path):
    from optrace.example.repo_builder import make_bundle

    bundle = make_bundle(good(tmp_path / "t"), tmp_path / "kernel_opt_120_b.bundle")
    calls = record_git_calls(tmp_path, ["ingest", bundle, "--out-dir", tmp_path / "o"])
    unbundle = [argv for argv, _ in calls if "bundle" in argv]
    assert len(unbundle) == 1 and unbundle[0][-2:] == ["unbundle", str(bundle.resolve())]


def _starts_processes(path: Path) -> set[str]:
    """Names of process-starting or GitPython imports in a module: subprocess, os.system/exec*, git."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in ("subprocess", "git")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("subprocess", "git"):
            found.add(node.module)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("system", "popen", "execv", "execvp", "spawnv")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            found.add(f"os.{node.attr}")
    return found


def test_only_the_git_layer_imports_gitpython_and_no_reader_of_traces_starts_git_itself():
    """optrace.ingest.gitcmd is the one module that talks to git; the other modules that start
    processes run an agent's command (distill) or build our own example repository (repo_builder)."""
    starters = {
        p.relative_to(PACKAGE_DIR).as_posix(): found
        for p in PACKAGE_DIR.rglob("*.py")
        if (found := _starts_processes(p))
    }
    gitpython = sorted(m for m, found in starters.items() if any(f.split(".")[0] == "git" for f in found))
    assert gitpython == ["ingest/gitcmd.py"]
    assert "subprocess" not in starters["ingest/gitcmd.py"]  # its processes are GitPython's
    readers = [m for m in starters if m.startswith(("ingest/", "mine/", "scrub/", "gates/", "run/", "report/"))]
    assert sorted(readers) == ["ingest/gitcmd.py"], starters
