"""`optrace bundle` (#29): a trace's untracked profiles/ and memory/ travel with it in one file, and
ingest warns when a bundle lacks files its history names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optrace.errors import InputError
from optrace.ingest.carry import bundle
from optrace.ingest.hardware import HardwareTable
from optrace.ingest.ingest import DEFAULT_NON_TARGET, Overrides, ingest
from tests.support import realistic_traces
from tests.support.paths import SHARED_DATA

TABLE = HardwareTable.load()


def read(trace: Path):
    rows, profiles, meta, _ = ingest(trace, label="t", table=TABLE, over=Overrides(), non_target=DEFAULT_NON_TARGET)
    return rows, profiles, meta


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@x"
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (the realistic trace is built from it)")
    t = realistic_traces.build("fib_rmsnorm", tmp_path_factory.mktemp("b"))
    git(t, "commit", "--allow-empty", "-q", "-m", "notes", "-m", "the v2 capture is in profiles/v2/REPORT.md")
    assert "profiles/v2/REPORT.md" in git(t, "status", "--porcelain", "--untracked-files=all")  # untracked
    return t


def test_a_bundle_carries_the_untracked_profiles_and_ingests_like_the_work_tree(trace, tmp_path):
    before = git(trace, "for-each-ref") + git(trace, "count-objects", "-v") + git(trace, "status", "--porcelain")
    out = tmp_path / "t.bundle"
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "bundle", str(trace), "--out", str(out)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert "untracked file(s) under profiles/ and memory/" in res.stdout and out.is_file()
    # the trace itself is untouched: no ref, no object, no file of the bundle's is written into it
    assert (
        git(trace, "for-each-ref") + git(trace, "count-objects", "-v") + git(trace, "status", "--porcelain") == before
    )
    rows, profiles, _ = read(trace)
    b_rows, b_profiles, b_meta = read(out)
    assert profiles and b_profiles == profiles
    assert [r["geomean_us"] for r in b_rows] == [r["geomean_us"] for r in rows]
    assert not any("the bundle lacks" in w for w in b_meta["warnings"]), b_meta["warnings"]
    # the untracked ref holds exactly the untracked files: nothing tracked is copied
    listed = git(tmp_path, "bundle", "list-heads", str(out))
    assert "refs/heads/main" in listed and "refs/optrace/untracked" in listed


def test_a_plain_git_bundle_without_them_is_warned_about(trace, tmp_path):
    out = tmp_path / "plain.bundle"
    git(trace, "bundle", "create", "-q", str(out), "HEAD", "main")
    _, profiles, meta = read(out)
    assert not profiles
    warned = [w for w in meta["warnings"] if "the bundle lacks" in w]
    assert len(warned) == 1 and "profiles/v2/REPORT.md" in warned[0] and "optrace bundle" in warned[0]


def test_a_bundle_ref_cannot_smuggle_files_outside_profiles_and_memory(trace, tmp_path):
    """A hostile bundle's untracked ref naming kernel.py or a meta file changes nothing ingest reads."""
    from optrace.ingest.git_history import open_trace

    out = tmp_path / "t.bundle"
    bundle(trace, out)
    with open_trace(out) as opened:
        tree = opened.files
        assert all(p.startswith(("profiles/", "memory/")) or p in opened.history.head_tree() for p in tree.walk(""))
    clone = tmp_path / "evil"
    git(tmp_path, "clone", "-q", str(trace), str(clone))
    (clone / "kernel.py").write_text("evil = 1\n")
    git(clone, "checkout", "-q", "--orphan", "x")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "x")
    git(clone, "update-ref", "refs/optrace/untracked", "x")
    git(clone, "checkout", "-q", "main")
    evil = tmp_path / "evil.bundle"
    git(clone, "bundle", "create", "-q", str(evil), "main", "refs/optrace/untracked")
    with open_trace(evil) as opened:
        assert opened.files.read_bytes("kernel.py") == (trace / "kernel.py").read_bytes()


def test_bad_arguments_are_one_line_errors(trace, tmp_path):
    with pytest.raises(InputError, match=r"must end in \.bundle"):
        bundle(trace, tmp_path / "t.tar")
    with pytest.raises(InputError):
        bundle(tmp_path / "absent", tmp_path / "t.bundle")
