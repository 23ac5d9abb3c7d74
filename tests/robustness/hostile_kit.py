"""What every hostile-trace test shares: run the ingest CLI as a user would, with a hang bound, and check
that no traceback and nothing from outside the trace reaches the user or the outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from optrace.example.repo_builder import CommitSpec, build_trace
from tests.support import tracekit

CANARY = "SECRET-CANARY-7f3a"
TIMEOUT = 30


def git(repo, *args, stdin=None):
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.invalid",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.invalid",
    }
    return subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, env=env, check=True).stdout


def ingest(trace, tmp_path, *extra, env=None):
    """(exit code, stdout, stderr, outputs: {name: text}) of one ingest run."""
    out = tmp_path / "out"
    start = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(trace), "--out-dir", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
    )
    assert time.monotonic() - start < TIMEOUT
    assert "Traceback" not in res.stderr + res.stdout, res.stderr[-2000:]
    files = {p.name: p.read_text() for p in out.glob("*") if p.is_file()} if out.is_dir() else {}
    for name, text in files.items():
        assert CANARY not in text, name
        assert "NaN" not in text and "Infinity" not in text, name
    return res.returncode, res.stdout, res.stderr, files


def ok(trace, tmp_path, *extra, env=None):
    rc, out, err, files = ingest(trace, tmp_path, *extra, env=env)
    assert rc == 0, err
    rows = [json.loads(line) for line in files["versions.jsonl"].splitlines()]
    return {r["version"]: r for r in rows}, json.loads(files["meta.json"]), out


def fails(trace, tmp_path, problem, *extra):
    rc, _out, err, files = ingest(trace, tmp_path, *extra)
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert problem in err, err
    assert "meta.json" not in files
    return err.strip()


def base_commits(kernel0=None):
    return [
        CommitSpec(
            "V0: baseline",
            {
                "kernel.py": kernel0 or tracekit.kernel(0),
                "memory/v0.json": tracekit.memory(0, 40.0),
                **tracekit.meta_files(),
            },
        ),
        CommitSpec(
            "v1: committed (+25.0%)", {"kernel.py": tracekit.kernel(1), "memory/v1.json": tracekit.memory(1, 30.0)}
        ),
    ]


def good(dest, untracked=None):
    build_trace(dest, base_commits(), untracked)
    return dest


def warned(meta, text):
    assert any(text in w for w in meta["warnings"]), meta["warnings"]
