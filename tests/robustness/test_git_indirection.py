"""Hostile traces, round two (#28): a trace cannot make us read another repository.

Every git directory a trace names (`.git` as a `gitdir:` file, `commondir`, refs, objects) must lie
inside the trace; the one indirection followed is a genuine linked work tree of a repository inside
the trace (its git directory's `gitdir` file points back at this `.git`, git's own rule). Each case is
a real repository built here; the repository outside holds a canary in its commit subjects and kernel,
which must reach no output and no message.
"""

from __future__ import annotations

import os
import shutil

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.run.configcheck import trace_problem
from tests.robustness.hostile_kit import CANARY, base_commits, fails, git, good, ingest, ok
from tests.support import tracekit

OUTSIDE = "points outside the trace"


@pytest.fixture
def other(tmp_path):
    """A repository outside every trace, its history a canary: mining it would publish it."""
    repo = tmp_path / "elsewhere" / "private"
    build_trace(
        repo,
        [
            CommitSpec(
                f"V0: baseline {CANARY}",
                {"kernel.py": f"# {CANARY}\n" + tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 9.0)},
            ),
            CommitSpec(f"v1: committed (+50%) {CANARY}", {"kernel.py": f"# {CANARY} v1\n" + tracekit.kernel(1)}),
        ],
    )
    return repo


def refused(trace, tmp_path, problem, planned=True):
    """The refusal, with nothing of the other repository in it; planning (`optrace sheet`) gives the
    same one, but for the walk over every object file (`planned=False`), which only ingest takes."""
    err = fails(trace, tmp_path, problem)
    assert CANARY not in err
    if planned:
        assert problem in (trace_problem(str(trace)) or "")
    return err


def no_canary_anywhere(tmp_path, res_text=""):
    assert CANARY not in res_text
    for path in (tmp_path / "out").rglob("*") if (tmp_path / "out").exists() else ():
        assert not path.is_file() or CANARY not in path.read_text(errors="replace"), path


# ---- `.git` as a `gitdir:` file -------------------------------------------------------------------


def test_gitdir_file_with_an_absolute_path_to_another_repository_is_refused(tmp_path, other):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_text(f"gitdir: {other / '.git'}\n")
    err = refused(tmp_path / "t", tmp_path, OUTSIDE)
    assert str(other / ".git") in err  # names where it points, so the user sees what was asked


def test_gitdir_file_with_a_relative_path_out_of_the_trace_is_refused(tmp_path, other):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_text("gitdir: ../elsewhere/private/.git\n")
    refused(tmp_path / "t", tmp_path, OUTSIDE)


def test_gitdir_file_through_a_symlink_inside_the_trace_is_refused(tmp_path, other):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "vendored").symlink_to(other)
    (tmp_path / "t" / ".git").write_text("gitdir: vendored/.git\n")
    refused(tmp_path / "t", tmp_path, OUTSIDE)


def test_gitdir_file_in_crlf_and_without_a_newline_reads_the_same(tmp_path, other):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_bytes(f"gitdir: {other / '.git'}\r\n".encode())
    refused(tmp_path / "t", tmp_path, OUTSIDE)
    (tmp_path / "t" / ".git").write_bytes(f"gitdir: {other / '.git'}".encode())
    refused(tmp_path / "t", tmp_path, OUTSIDE)


@pytest.mark.parametrize("tail", [b"\x00 \n", b"\ngitdir: inner.git\n"], ids=["nul", "second-line"])
def test_a_gitdir_line_holding_a_nul_or_a_second_line_is_refused_in_one_line(tmp_path, other, tail):
    """Red-team find: a NUL reached `Path.resolve` (a ValueError traceback), a second line was taken
    into the path and broke the error in two."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_bytes(f"gitdir: {other / '.git'}".encode() + tail)
    refused(tmp_path / "t", tmp_path, "`.git` names a path holding a control character")


def test_a_commondir_holding_a_nul_is_refused_in_one_line(tmp_path):
    trace = good(tmp_path / "t")
    (trace / ".git" / "commondir").write_bytes(b".\x00/../elsewhere\n")
    refused(trace, tmp_path, "`commondir` names a path holding a control character")


def test_a_linked_worktree_of_an_outside_repository_is_refused_even_when_it_points_back(tmp_path, other):
    """A real `git worktree add` of the other repository: its back-pointer is genuine, but the history
    is not the trace's own."""
    git(other, "worktree", "add", "-q", "--detach", str(tmp_path / "t"))
    assert (tmp_path / "t" / ".git").is_file()
    refused(tmp_path / "t", tmp_path, OUTSIDE)


def _worktree_inside(tmp_path):
    """A trace that is a linked work tree of a repository kept inside it (`<trace>/.main`)."""
    stage = tmp_path / "stage"
    main = good(stage / "main")
    trace = tmp_path / "kernel_opt_090_linked"
    git(main, "worktree", "add", "-q", "--detach", str(trace))
    shutil.move(str(main), str(trace / ".main"))
    admin = trace / ".main" / ".git" / "worktrees" / trace.name
    (trace / ".git").write_text(f"gitdir: {admin}\n")  # as `git worktree repair` would write it
    return trace, admin


def test_a_genuine_linked_worktree_of_a_repository_inside_the_trace_is_mined(tmp_path):
    trace, admin = _worktree_inside(tmp_path)
    assert (admin / "gitdir").read_text().strip() == str(trace / ".git")  # git's back-pointer
    rows, meta, _ = ok(trace, tmp_path)
    assert sorted(rows) == ["v0", "v1"] and meta["head_sha"] == git(trace, "rev-parse", "HEAD").decode().strip()
    assert trace_problem(str(trace)) is None


def test_a_linked_worktree_whose_back_pointer_names_another_worktree_is_refused(tmp_path):
    trace, admin = _worktree_inside(tmp_path)
    (admin / "gitdir").write_text(str(tmp_path / "somewhere-else" / ".git") + "\n")
    refused(trace, tmp_path, "is not a linked work tree of this trace")


def test_a_gitdir_file_naming_a_plain_repository_inside_the_trace_is_refused(tmp_path):
    """A full repository nested in the trace is not a linked work tree of it (no back-pointer)."""
    trace = tmp_path / "t"
    good(trace / "nested")
    (trace / ".git").write_text("gitdir: nested/.git\n")
    refused(trace, tmp_path, "is not a linked work tree of this trace")


def test_a_gitdir_file_naming_the_trace_itself_is_refused(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_text("gitdir: .\n")
    refused(tmp_path / "t", tmp_path, "is not a linked work tree of this trace")


def test_an_oversized_or_special_dotgit_file_is_refused_without_reading_it(tmp_path):
    (tmp_path / "t").mkdir()
    with open(tmp_path / "t" / ".git", "wb") as fh:
        fh.truncate(2 * 1024 * 1024)
    refused(tmp_path / "t", tmp_path, ".git in the git directory is 2097152 bytes, over the 65536-byte read cap")
    (tmp_path / "t" / ".git").unlink()
    os.mkfifo(tmp_path / "t" / ".git")
    refused(tmp_path / "t", tmp_path, "is neither a directory nor a `gitdir:` file")


# ---- commondir, refs and objects --------------------------------------------------------------------


def test_commondir_naming_another_repository_is_refused(tmp_path, other):
    trace = good(tmp_path / "t")
    (trace / ".git" / "commondir").write_text(f"{other / '.git'}\n")
    refused(trace, tmp_path, "`commondir` of its git directory points outside the trace")
    (trace / ".git" / "commondir").write_text("../../elsewhere/private/.git\n")
    refused(trace, tmp_path, "`commondir` of its git directory points outside the trace")


def test_commondir_as_a_fifo_does_not_block(tmp_path):
    trace = good(tmp_path / "t")
    os.mkfifo(trace / ".git" / "commondir")
    refused(trace, tmp_path, "commondir in the git directory is a FIFO")


def test_commondir_naming_a_folder_without_objects_is_refused(tmp_path):
    trace = good(tmp_path / "t")
    (trace / "empty").mkdir()
    (trace / ".git" / "commondir").write_text("../empty\n")
    refused(trace, tmp_path, "which holds no objects")


def test_objects_directory_as_a_symlink_to_another_repository_is_refused(tmp_path, other):
    trace = good(tmp_path / "t")
    shutil.rmtree(trace / ".git" / "objects")
    (trace / ".git" / "objects").symlink_to(other / ".git" / "objects")
    refused(trace, tmp_path, "has no objects directory (or it is a symlink)")


def test_a_pack_symlinked_from_another_repository_is_refused(tmp_path, other):
    git(other, "gc", "-q")
    trace = good(tmp_path / "t")
    pack = next((other / ".git" / "objects" / "pack").glob("*.pack"))
    (trace / ".git" / "objects" / "pack" / pack.name).symlink_to(pack)
    refused(trace, tmp_path, f".git/objects/pack/{pack.name} is not a regular file", planned=False)


def test_http_alternates_is_refused_as_borrowing(tmp_path):
    """The `http-alternates` refusal (a surviving mutant of #27): git would fetch objects from the URL
    it names; the trace must carry its own."""
    trace = good(tmp_path / "t")
    (trace / ".git" / "objects" / "info" / "http-alternates").write_text("https://example.invalid/other.git/objects\n")
    refused(trace, tmp_path, "borrows objects from another repository (.git/objects/info/http-alternates)")


def test_refs_folder_symlinked_to_another_repository_is_not_read(tmp_path, other):
    trace = good(tmp_path / "t")
    shutil.rmtree(trace / ".git" / "refs" / "heads")
    (trace / ".git" / "refs" / "heads").symlink_to(other / ".git" / "refs" / "heads")
    refused(trace, tmp_path, "refs/heads/main in the git directory is reached through a symlink out of it")


def test_head_and_packed_refs_as_symlinks_out_are_refused(tmp_path, other):
    trace = good(tmp_path / "t")
    git(trace, "pack-refs", "--all")
    (trace / ".git" / "packed-refs").unlink()
    (trace / ".git" / "packed-refs").symlink_to(other / ".git" / "HEAD")
    refused(trace, tmp_path, "packed-refs in the git directory is a symlink")
    (trace / ".git" / "HEAD").unlink()
    (trace / ".git" / "HEAD").symlink_to(other / ".git" / "HEAD")
    refused(trace, tmp_path, "HEAD in the git directory is a symlink")


def test_a_trace_named_through_a_symlink_is_the_repository_it_names(tmp_path):
    """The user's own path may be a symlink: what counts is the repository it resolves to."""
    good(tmp_path / "real")
    (tmp_path / "kernel_opt_091_link").symlink_to(tmp_path / "real")
    rows, _, _ = ok(tmp_path / "kernel_opt_091_link", tmp_path)
    assert sorted(rows) == ["v0", "v1"]


# ---- what HEAD names --------------------------------------------------------------------------------


def test_unborn_head_with_branches_holding_commits_names_them(tmp_path):
    trace = good(tmp_path / "t")
    git(trace, "branch", "-q", "trace-run")
    (trace / ".git" / "HEAD").write_text("ref: refs/heads/master\n")  # `git init` on an old default
    err = fails(trace, tmp_path, "HEAD names refs/heads/master, which has no commits, while branches main, trace-run")
    assert "git checkout <branch>" in err and "no commits\n" not in err


def test_unborn_head_with_many_branches_names_five_and_counts_the_rest(tmp_path):
    trace = good(tmp_path / "t")
    for i in range(7):
        git(trace, "branch", "-q", f"b{i}")
    git(trace, "pack-refs", "--all")  # packed branches count as well as loose ones
    (trace / ".git" / "HEAD").write_text("ref: refs/heads/zz-none\n")
    fails(trace, tmp_path, "while branches b0, b1, b2, b3, b4 and 3 more hold commits")


def test_an_empty_repository_still_says_it_has_no_commits(tmp_path):
    build_trace(tmp_path / "t", [])
    fails(tmp_path / "t", tmp_path, "the repository has no commits")


@pytest.mark.parametrize("kind", ["blob", "tree"])
def test_head_naming_a_blob_or_a_tree_says_so(tmp_path, kind):
    trace = good(tmp_path / "t")
    sha = git(trace, "rev-parse", "HEAD:kernel.py" if kind == "blob" else "HEAD^{tree}").decode().strip()
    (trace / ".git" / "HEAD").write_text(sha + "\n")
    fails(trace, tmp_path, f"HEAD names {sha[:12]}, a {kind}, not a commit")


def test_a_branch_naming_a_blob_says_so(tmp_path):
    trace = good(tmp_path / "t")
    sha = git(trace, "rev-parse", "HEAD:kernel.py").decode().strip()
    (trace / ".git" / "refs" / "heads" / "main").write_text(sha + "\n")
    fails(trace, tmp_path, f"HEAD names {sha[:12]}, a blob, not a commit")


def test_head_naming_a_missing_commit_is_one_line(tmp_path):
    trace = good(tmp_path / "t")
    (trace / ".git" / "HEAD").write_text("1" * 40 + "\n")
    err = fails(trace, tmp_path, "git log failed (a corrupt or incomplete repository)")
    assert err.isprintable()


def test_a_branch_holding_garbage_names_the_branch(tmp_path):
    trace = good(tmp_path / "t")
    (trace / ".git" / "refs" / "heads" / "main").write_text("not a sha\n")
    fails(trace, tmp_path, "refs/heads/main holds 'not a sha', not a commit id or a ref")


def test_a_sha256_repository_is_refused_with_its_format_named(tmp_path):
    trace = tmp_path / "t"
    trace.mkdir()
    git(trace, "init", "-q", "--object-format=sha256")
    (trace / "kernel.py").write_text(tracekit.kernel(0))
    git(trace, "add", "kernel.py")
    git(trace, "commit", "-q", "-m", "V0: baseline")
    refused(trace, tmp_path, "uses git's sha256 object format; optrace reads sha1 repositories")


def test_nothing_of_the_other_repository_reaches_stdout_or_outputs(tmp_path, other):
    """The sum of the cases above, run once more with the outputs inspected."""
    trace = good(tmp_path / "t", {"memory/v2.json": tracekit.memory(2, 20.0)})
    shutil.rmtree(trace / ".git")
    (trace / ".git").write_text(f"gitdir: {other / '.git'}\n")
    rc, out, err, files = ingest(trace, tmp_path)
    assert rc == 2 and files == {}
    no_canary_anywhere(tmp_path, out + err)


def test_base_commits_still_mine_after_all_this(tmp_path):
    """Control: the same builders give a trace that is mined (the refusals above are the cases')."""
    build_trace(tmp_path / "t", base_commits())
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert sorted(rows) == ["v0", "v1"]
