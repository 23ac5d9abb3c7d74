"""Hostile bundles (#28): each unusable `.bundle` gets its own one-line cause, read from its header
before git touches it, and the ref a trace is mined from is never guessed.

Bundles are made by real git here, then cut, padded, re-headed or replaced as each case needs.
"""

from __future__ import annotations

import os
import time

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace, make_bundle
from optrace.run.configcheck import trace_problem
from optrace.run.sheet import fingerprint
from tests.robustness.hostile_kit import base_commits, fails, git, good, ok
from tests.support import tracekit


def seven_versions(dest):
    commits = base_commits() + [
        CommitSpec(f"v{n}: committed (+{n}.0%)", {"kernel.py": tracekit.kernel(n), "memory/v2.json": "{}"})
        for n in range(2, 7)
    ]
    build_trace(dest, commits)
    return dest


def bundle_of(repo, dest, *refs):
    git(repo, "bundle", "create", "-q", str(dest), *refs)
    return dest


def refused(path, tmp_path, problem):
    """Ingest's one line, and planning's (`optrace sheet`) same cause, before any git process."""
    err = fails(path, tmp_path, problem)
    assert err.isprintable() and len(err) < 600
    assert problem in (trace_problem(str(path)) or ""), trace_problem(str(path))
    return err


@pytest.fixture
def attic_and_trace(tmp_path):
    """A repository with a junk branch `attic` (2 versions) and the real `trace` (7), and no main."""
    repo = seven_versions(tmp_path / "repo")
    git(repo, "branch", "-q", "-m", "main", "trace")
    git(repo, "checkout", "-q", "--orphan", "attic")
    git(repo, "rm", "-rq", "--cached", ".")
    (repo / "kernel.py").write_text(tracekit.kernel(9))
    git(repo, "add", "kernel.py")
    git(repo, "commit", "-q", "-m", "V0: baseline")
    git(repo, "commit", "-q", "--allow-empty", "-m", "v1: committed (+1%)")
    return repo


# ---- which ref is the trace ---------------------------------------------------------------------


def test_several_heads_and_no_head_or_main_is_refused_naming_them(tmp_path, attic_and_trace):
    bundle = bundle_of(attic_and_trace, tmp_path / "kernel_opt_080_two.bundle", "refs/heads/attic", "refs/heads/trace")
    assert b"refs/heads/attic\n" in bundle.read_bytes()[:400]  # listed first: the old code mined it
    err = refused(bundle, tmp_path, "is a git bundle of 2 refs (refs/heads/attic, refs/heads/trace) and no HEAD")
    assert "HEAD --branches" in err  # how to make one that says which ref is the trace


def test_several_heads_with_main_among_them_mine_main_wherever_it_is_listed(tmp_path, attic_and_trace):
    git(attic_and_trace, "branch", "-q", "main", "trace")
    bundle = bundle_of(attic_and_trace, tmp_path / "kernel_opt_081_main.bundle", "refs/heads/attic", "refs/heads/main")
    rows, _, _ = ok(bundle, tmp_path, "--hardware", "H100")
    assert sorted(rows) == [f"v{n}" for n in range(7)]


def test_a_bundle_with_head_mines_what_head_names(tmp_path, attic_and_trace):
    git(attic_and_trace, "checkout", "-qf", "trace")
    bundle = bundle_of(attic_and_trace, tmp_path / "kernel_opt_082_head.bundle", "HEAD", "refs/heads/attic")
    rows, _, _ = ok(bundle, tmp_path, "--hardware", "H100")
    assert len(rows) == 7


def test_a_bundle_of_one_ref_mines_that_ref(tmp_path, attic_and_trace):
    bundle = bundle_of(attic_and_trace, tmp_path / "kernel_opt_083_one.bundle", "refs/heads/trace")
    rows, _, _ = ok(bundle, tmp_path, "--hardware", "H100")
    assert len(rows) == 7


@pytest.mark.parametrize("annotated", [False, True])
def test_a_bundle_whose_only_ref_names_a_blob_says_so(tmp_path, annotated):
    repo = good(tmp_path / "repo")
    blob = git(repo, "rev-parse", "HEAD:kernel.py").decode().strip()
    git(repo, "tag", *(["-a", "-m", "kernel"] if annotated else []), "kernel-only", blob)
    bundle = bundle_of(repo, tmp_path / "kernel_opt_084_blob.bundle", "refs/tags/kernel-only")
    head = git(repo, "rev-parse", "kernel-only").decode().strip()  # the tag object, when annotated
    fails(bundle, tmp_path, f"HEAD names {head[:12]}, a blob, not a commit")


def test_a_bundle_whose_only_ref_is_an_annotated_tag_of_the_trace_mines_it(tmp_path):
    repo = good(tmp_path / "repo")
    git(repo, "tag", "-a", "-m", "the run", "run-1")
    rows, _, _ = ok(bundle_of(repo, tmp_path / "kernel_opt_084_tag.bundle", "refs/tags/run-1"), tmp_path)
    assert sorted(rows) == ["v0", "v1"]


# ---- the header -----------------------------------------------------------------------------------


def _real_bundle(tmp_path, name="kernel_opt_085_x.bundle"):
    return make_bundle(good(tmp_path / "repo"), tmp_path / name)


def test_a_header_cut_short_is_a_truncated_bundle(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    cut = tmp_path / "kernel_opt_086_cut.bundle"
    cut.write_bytes(data[: data.index(b"\n", 20) + 1])  # the signature and one ref line
    refused(cut, tmp_path, "is a truncated git bundle: its header ends before the blank line that closes it")


def test_a_pack_cut_short_names_the_pack_not_a_prerequisite(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    cut = tmp_path / "kernel_opt_087_cut.bundle"
    cut.write_bytes(data[: data.index(b"PACK") + 40])
    err = fails(cut, tmp_path, "is a git bundle whose pack is truncated or corrupt")
    assert "prerequisite" not in err
    assert trace_problem(str(cut)) is None  # the header is sound: only git, at ingest, can tell


def test_garbage_after_a_valid_header_is_named(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    header = data[: data.index(b"\n\n") + 2]
    bad = tmp_path / "kernel_opt_088_junk.bundle"
    bad.write_bytes(header + b"this is not a pack\n" * 10)
    refused(bad, tmp_path, "its header is followed by 190 bytes that are not a pack (no `PACK` signature)")
    bad.write_bytes(header)
    refused(bad, tmp_path, "its header is followed by nothing")


def test_a_garbage_header_line_is_named_by_its_number(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    first = data.index(b"\n") + 1
    bad = tmp_path / "kernel_opt_089_line.bundle"
    bad.write_bytes(data[:first] + b"\x00\x9f\xff junk \x1b[31m\n" + data[first:])
    refused(bad, tmp_path, "header line 2 is neither a ref nor a prerequisite")


def _reheaded(tmp_path, repo, name, header: bytes):
    """A real bundle of `repo`, its pack under another header."""
    data = make_bundle(repo, tmp_path / "whole.bundle").read_bytes()
    path = tmp_path / f"{name}.bundle"
    path.write_bytes(header + b"\n" + data[data.index(b"\n\n") + 2 :])
    return path


def test_a_ref_listed_twice_for_two_commits_is_refused_not_the_first_mined(tmp_path):
    """Red-team find: `refs/heads/main` listed for v0 and again for v1 was mined from the first (1 version)."""
    repo = good(tmp_path / "repo")
    head, first = (git(repo, "rev-parse", r).decode().strip() for r in ("HEAD", "HEAD~1"))
    lines = f"# v2 git bundle\n{first} refs/heads/main\n{head} refs/heads/main\n".encode()
    refused(_reheaded(tmp_path, repo, "twice", lines), tmp_path, "lists refs/heads/main twice, for two commits")


def test_a_v3_capability_git_does_not_know_is_named_not_called_a_corrupt_pack(tmp_path):
    repo = good(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    lines = f"# v3 git bundle\n@object-format=sha1\n@frobnicate=1\n{head} refs/heads/main\n".encode()
    refused(_reheaded(tmp_path, repo, "cap", lines), tmp_path, "a capability git does not know (@frobnicate)")


def test_a_header_converted_to_crlf_says_so(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    end = data.index(b"\n\n") + 2
    bad = tmp_path / "kernel_opt_090_crlf.bundle"
    bad.write_bytes(data[:end].replace(b"\n", b"\r\n") + data[end:])
    refused(bad, tmp_path, "line ends were converted to CR LF")


def test_a_header_listing_no_refs_has_nothing_to_mine(tmp_path):
    data = _real_bundle(tmp_path).read_bytes()
    bad = tmp_path / "kernel_opt_091_none.bundle"
    bad.write_bytes(b"# v2 git bundle\n\n" + data[data.index(b"PACK") :])
    refused(bad, tmp_path, "is a git bundle that lists no refs")


def test_an_incremental_bundle_is_named_incremental(tmp_path):
    repo = good(tmp_path / "repo")
    bundle = bundle_of(repo, tmp_path / "kernel_opt_092_incr.bundle", "HEAD~1..main")
    refused(bundle, tmp_path, "is an incremental git bundle: it needs 1 prerequisite commit(s)")


def test_a_partial_bundle_is_named_partial(tmp_path):
    repo = good(tmp_path / "repo")
    bundle = bundle_of(repo, tmp_path / "kernel_opt_093_part.bundle", "--filter=blob:none", "--all")
    assert b"@filter=blob:none" in bundle.read_bytes()[:200]
    refused(bundle, tmp_path, "is a partial git bundle (@filter=blob:none)")


def test_a_valid_sha256_bundle_is_named_sha256_not_incremental(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256", "-b", "main")
    (repo / "kernel.py").write_text(tracekit.kernel(0))
    git(repo, "add", "kernel.py")
    git(repo, "commit", "-q", "-m", "V0: baseline")
    bundle = bundle_of(repo, tmp_path / "kernel_opt_094_sha256.bundle", "--all")
    assert bundle.read_bytes().startswith(b"# v3 git bundle\n@object-format=sha256\n")  # a valid v3 bundle
    err = refused(bundle, tmp_path, "is a sha256 git bundle (@object-format=sha256)")
    assert "prerequisite" not in err


# ---- what the path is -------------------------------------------------------------------------------


def test_a_fifo_named_bundle_is_named_a_fifo_and_never_opened(tmp_path):
    os.mkfifo(tmp_path / "kernel_opt_095_pipe.bundle")
    start = time.monotonic()
    assert fingerprint(str(tmp_path / "kernel_opt_095_pipe.bundle"))
    assert time.monotonic() - start < 2
    refused(tmp_path / "kernel_opt_095_pipe.bundle", tmp_path, "is a FIFO, not a git work tree or a .bundle file")


def test_a_symlink_to_a_fifo_named_bundle_is_named_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "kernel_opt_096_link.bundle").symlink_to(tmp_path / "pipe")
    refused(tmp_path / "kernel_opt_096_link.bundle", tmp_path, "is a FIFO, not a git work tree or a .bundle file")


def test_an_empty_bundle_file_is_not_a_bundle(tmp_path):
    (tmp_path / "kernel_opt_097_empty.bundle").write_bytes(b"")
    refused(tmp_path / "kernel_opt_097_empty.bundle", tmp_path, "does not start with '# v2 git bundle'")


def test_a_work_tree_whose_name_ends_in_bundle_is_a_work_tree(tmp_path):
    good(tmp_path / "kernel_opt_098_dir.bundle")
    rows, _, _ = ok(tmp_path / "kernel_opt_098_dir.bundle", tmp_path)
    assert sorted(rows) == ["v0", "v1"]


def test_a_dangling_symlink_named_bundle_is_not_found(tmp_path):
    (tmp_path / "kernel_opt_099_gone.bundle").symlink_to(tmp_path / "nowhere.bundle")
    refused(tmp_path / "kernel_opt_099_gone.bundle", tmp_path, "trace not found")
