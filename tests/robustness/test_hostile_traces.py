"""Hostile traces (#13): each is a real git repository built here; each asserts its exact outcome.

Every case runs the ingest CLI as a user would (`python -m optrace ingest`), with a 30 s timeout (a
hang fails the case), and checks that no traceback reaches the user. Paths outside the trace are
FIFOs or canary files: reading a FIFO would block (timeout), a canary's text must appear nowhere in
the outputs, and a git config key that tries to run a program has it write a marker that must never
appear.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace, make_bundle
from optrace.run.sheet import fingerprint
from tests.robustness.hostile_kit import TIMEOUT, base_commits, fails, git, good, ok, warned
from tests.support import tracekit

# ---- not a trace at all ----------------------------------------------------------------------


def test_not_a_repository(tmp_path):
    (tmp_path / "plain").mkdir()
    fails(tmp_path / "plain", tmp_path, "not a git work tree (no .git)")


def test_missing_path(tmp_path):
    fails(tmp_path / "nope", tmp_path, "trace not found")


def test_empty_repository(tmp_path):
    build_trace(tmp_path / "t", [])
    fails(tmp_path / "t", tmp_path, "the repository has no commits")


def test_shallow_clone_is_refused(tmp_path):
    good(tmp_path / "full")
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{tmp_path / 'full'}", "shallow")
    fails(tmp_path / "shallow", tmp_path, "is a shallow clone (.git/shallow): its history is truncated")


def test_dotgit_symlink_is_not_followed(tmp_path):
    good(tmp_path / "real")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").symlink_to(tmp_path / "real" / ".git")
    fails(tmp_path / "t", tmp_path, "is neither a directory nor a `gitdir:` file")


def test_gitdir_file_pointing_nowhere(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / ".git").write_text("gitdir: /nonexistent/x\n")
    fails(tmp_path / "t", tmp_path, "`.git` (a `gitdir:` file) points outside the trace (/nonexistent/x)")
    (tmp_path / "t" / ".git").write_text("gitdir: .repo/x\n")  # inside the trace, but absent
    fails(tmp_path / "t", tmp_path, "which is not a directory")


def test_head_garbage(tmp_path):
    good(tmp_path / "t")
    (tmp_path / "t" / ".git" / "HEAD").write_text("\x00\x01garbage")
    fails(tmp_path / "t", tmp_path, "not a commit id or a ref")


def test_head_on_unborn_branch(tmp_path):
    good(tmp_path / "t")
    (tmp_path / "t" / ".git" / "HEAD").write_text("ref: refs/heads/never\n")
    fails(
        tmp_path / "t", tmp_path, "HEAD names refs/heads/never, which has no commits, while branch main holds commits"
    )


def test_head_fifo_does_not_block(tmp_path):
    good(tmp_path / "t")
    (tmp_path / "t" / ".git" / "HEAD").unlink()
    os.mkfifo(tmp_path / "t" / ".git" / "HEAD")
    start = time.monotonic()
    assert fingerprint(str(tmp_path / "t"))  # the DAG build's own read of HEAD
    assert time.monotonic() - start < 1
    fails(tmp_path / "t", tmp_path, "HEAD in the git directory is a FIFO")


def test_fifo_in_objects_does_not_block(tmp_path):
    good(tmp_path / "t")
    os.mkfifo(tmp_path / "t" / ".git" / "objects" / "info" / "commit-graph")
    fails(tmp_path / "t", tmp_path, ".git/objects/info/commit-graph is not a regular file")


def test_alternates_pointing_outside_are_refused(tmp_path):
    good(tmp_path / "other")
    good(tmp_path / "t")
    (tmp_path / "t" / ".git" / "objects" / "info" / "alternates").write_text(
        str(tmp_path / "other" / ".git" / "objects")
    )
    fails(tmp_path / "t", tmp_path, "borrows objects from another repository")


def test_missing_objects_is_one_line(tmp_path):
    good(tmp_path / "t")
    for obj in (tmp_path / "t" / ".git" / "objects").rglob("*"):
        if obj.is_file() and obj.parent.name != "info":
            obj.unlink()
    err = fails(tmp_path / "t", tmp_path, "git log failed (a corrupt or incomplete repository)")
    assert len(err) < 400


def test_unknown_hardware(tmp_path):
    build_trace(tmp_path / "kernel_opt_9_x", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0)})])
    fails(tmp_path / "kernel_opt_9_x", tmp_path, "states no GPU")


# ---- history shapes ----------------------------------------------------------------------------


def test_detached_head(tmp_path):
    good(tmp_path / "t")
    sha = git(tmp_path / "t", "rev-parse", "HEAD~1").decode().strip()
    git(tmp_path / "t", "checkout", "-q", "--detach", sha)
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert meta["head_sha"] == sha and "v0" in rows


def test_no_kernel_py(tmp_path):
    build_trace(
        tmp_path / "t",
        [CommitSpec("V0: baseline", {"memory/v0.json": tracekit.memory(0, 40.0), **tracekit.meta_files()})],
    )
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v0"]["kernel_blob"] is None
    warned(meta, "no commit changes kernel.py")


def test_no_memory_dir(tmp_path):
    build_trace(
        tmp_path / "t",
        [
            CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), **tracekit.meta_files()}),
            CommitSpec("v1: committed (+5%)", {"kernel.py": tracekit.kernel(1)}),
        ],
    )
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert [rows[v]["number_note"] for v in ("v0", "v1")] == ["no step record (memory/v<N>.json)"] * 2


def test_empty_commit(tmp_path):
    build_trace(tmp_path / "t", base_commits() + [CommitSpec("v2: committed (+3%)", {})])
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["verdict"] == "none"
    warned(meta, "v2: subject says kept but kernel.py did not change")


def test_merge_commit_branch_is_not_the_trace(tmp_path):
    build_trace(
        tmp_path / "t",
        base_commits()
        + [
            CommitSpec("v2: side kernel", {"kernel.py": tracekit.kernel(7)}, branch="side"),
            CommitSpec(
                "v3: committed (+2%)",
                {"kernel.py": tracekit.kernel(3), "memory/v3.json": tracekit.memory(3, 29.0)},
                merge="side",
            ),
        ],
    )
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert sorted(rows) == ["v0", "v1", "v3"]


def test_duplicate_versions_keep_the_last_commit(tmp_path):
    build_trace(
        tmp_path / "t", base_commits() + [CommitSpec("v1: committed (+26.0%)", {"kernel.py": tracekit.kernel(5)})]
    )
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    head = git(tmp_path / "t", "rev-parse", "HEAD").decode().strip()
    assert sorted(rows) == ["v0", "v1"] and rows["v1"]["sha"] == head


def test_kernel_deleted(tmp_path):
    build_trace(tmp_path / "t", base_commits() + [CommitSpec("v2: committed (+1%)", {"kernel.py": None})])
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["kernel_blob"] is None and rows["v1"]["kernel_blob"]


def test_huge_version_number_in_subject(tmp_path):
    build_trace(
        tmp_path / "t",
        base_commits()
        + [
            CommitSpec("v" + "9" * 4400 + ": committed (+1%)", {"kernel.py": tracekit.kernel(2)}),
            CommitSpec("episode " + "7" * 4400 + ": promote verified long-horizon candidate", {}),
        ],
    )
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert sorted(rows) == ["v0", "v1"]
    assert next(c["why"] for c in meta["non_version_commits"]) == "subject names no version"


def test_non_utf8_commit_subject(tmp_path):
    good(tmp_path / "t")
    tree = git(tmp_path / "t", "rev-parse", "HEAD^{tree}").decode().strip()
    head = git(tmp_path / "t", "rev-parse", "HEAD").decode().strip()
    raw = (
        f"tree {tree}\nparent {head}\nauthor a <a@b> 1767300000 +0000\ncommitter a <a@b> 1767300000 +0000\n\n"
    ).encode() + b"v2: committed (+1%) \xff\xfe caf\xe9\n"
    sha = git(tmp_path / "t", "hash-object", "-t", "commit", "-w", "--stdin", "--literally", stdin=raw).decode().strip()
    git(tmp_path / "t", "update-ref", "refs/heads/main", sha)
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    # read again from its object and decoded by the first encoding that gives text (ingest/encoding.py)
    assert rows["v2"]["subject"] == "v2: committed (+1%) \xff\xfe caf\xe9"
    assert any(f"commit {sha[:12]}: message decoded as cp1252" in w for w in meta["warnings"])


@pytest.mark.parametrize("name", ["kernel opt 5 spaced", "kernel_opt_006_fused_sóftmax_ünïcode"])
def test_paths_with_spaces_and_unicode(tmp_path, name):
    good(tmp_path / name)
    rows, meta, _ = ok(tmp_path / name, tmp_path)
    assert sorted(rows) == ["v0", "v1"] and meta["slug"] and meta["slug"].isascii()


@pytest.mark.parametrize("name", ["a\nb", 'q"uote\\back', "tab\there", "esc\x1b[31m"])
def test_a_trace_directory_named_with_a_newline_quote_or_escape_is_mined(tmp_path, name):
    """Red-team find: the shadow directory's alternates file is one path a line, so a newline in the
    trace's name made git read another path ("bad object HEAD"); the line is C-quoted now."""
    rows, _, _ = ok(good(tmp_path / name), tmp_path)
    assert sorted(rows) == ["v0", "v1"]


def test_an_error_naming_a_directory_with_a_newline_stays_one_line(tmp_path):
    (tmp_path / "a\nb").mkdir()
    err = fails(tmp_path / "a\nb", tmp_path, "not a git work tree")
    assert "a\\x0ab" in err


def test_good_bundle(tmp_path):
    good(tmp_path / "t")
    bundle = make_bundle(tmp_path / "t", tmp_path / "kernel_opt_010_b.bundle")
    rows, meta, _ = ok(bundle, tmp_path)
    assert sorted(rows) == ["v0", "v1"] and meta["slug"] == "010-b"
    assert not list((tmp_path / "out").glob(".optrace-*"))  # the private repository is gone


@pytest.mark.parametrize("content", [b"garbage", b"# v2 git bundle\n\x00\x9f\xff junk \x1b[31m\n" + bytes(range(256))])
def test_garbage_bundle_is_one_clean_line(tmp_path, content):
    (tmp_path / "x.bundle").write_bytes(content)
    err = fails(tmp_path / "x.bundle", tmp_path, "not a readable git bundle")
    assert err.isprintable() and len(err) < 400


# ---- kernel.py that is not source --------------------------------------------------------------


def test_kernel_5mb_is_capped(tmp_path):
    big = "x = 1  # filler line of a runaway generated kernel\n" * 110_000  # ~5.5 MB
    build_trace(tmp_path / "t", base_commits() + [CommitSpec("v2: committed (+1%)", {"kernel.py": big})])
    start = time.monotonic()
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert time.monotonic() - start < 10
    assert rows["v2"]["kernel_blob"] is None and rows["v1"]["kernel_blob"]
    warned(meta, "kernel.py of v2 is over the 524288-byte kernel read cap; not used as source")


def test_binary_kernel(tmp_path):
    build_trace(
        tmp_path / "t",
        base_commits() + [CommitSpec("v2: committed (+1%)", {"kernel.py": b"\x7fELF\x00\x01\x02" * 100})],
    )
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["kernel_blob"] is None
    warned(meta, "kernel.py of v2 is binary (holds NUL bytes); not used as source")


def _commit_entry(repo, mode, target_sha, subject):
    """Commit HEAD's tree with kernel.py replaced by an entry of `mode` (symlink or gitlink)."""
    lines = [ln for ln in git(repo, "ls-tree", "HEAD").decode().splitlines() if not ln.endswith("\tkernel.py")]
    kind = "commit" if mode == "160000" else "blob"
    tree = (
        git(repo, "mktree", stdin=("\n".join(lines + [f"{mode} {kind} {target_sha}\tkernel.py"]) + "\n").encode())
        .decode()
        .strip()
    )
    sha = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", subject).decode().strip()
    git(repo, "update-ref", "refs/heads/main", sha)


def test_symlink_kernel_is_not_source(tmp_path):
    good(tmp_path / "t")
    target = git(tmp_path / "t", "hash-object", "-w", "--stdin", stdin=b"/etc/passwd").decode().strip()
    _commit_entry(tmp_path / "t", "120000", target, "v2: committed (+1%)")
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["kernel_blob"] is None and rows["v2"]["kernel_changed"]
    warned(meta, "kernel.py of v2 is a symlink; not source")


def test_gitlink_kernel_is_not_source(tmp_path):
    good(tmp_path / "t")
    _commit_entry(tmp_path / "t", "160000", "1" * 40, "v2: committed (+1%)")
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["kernel_blob"] is None
    warned(meta, "kernel.py of v2 is a submodule (gitlink); not source")


# ---- memory/ ------------------------------------------------------------------------------------

BROKEN_MEMORY = {
    "truncated": (b'{"performance": {"latency_us_geomean": 3', "not valid JSON"),
    "empty": (b"", "not valid JSON"),
    "list": (b"[1, 2]", "not a JSON object"),
    "string": (b'"v2"', "not a JSON object"),
    "nested": (b"[" * 200_000 + b"]" * 200_000, "JSON nested too deeply to parse"),
    "nested_objects": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "JSON nested too deeply to parse"),
    "huge_int": (b'{"performance": {"latency_us_geomean": ' + b"9" * 4400 + b"}}", "JSON with an unparseable number"),
    "non_utf8": (b'{"performance": {"latency_us_geomean": 5.0}, "x": "\xff\xfe"}', None),
    "trailing_garbage": (b'{"performance": {}} }}}', "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_MEMORY))
def test_broken_memory_json(tmp_path, case):
    data, warning = BROKEN_MEMORY[case]
    good(tmp_path / "t", {"memory/v2.json": data})
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v1"]["geomean_us"] == 30.0  # the good versions are untouched
    if warning:
        warned(meta, f"memory/v2.json: {warning}")
        assert "v2" not in rows or rows["v2"]["geomean_us"] is None
    else:
        assert rows["v2"]["geomean_us"] == 5.0


@pytest.mark.parametrize(
    "value,note",
    [
        ("NaN", "is not a positive number"),
        ("Infinity", "is not a positive number"),
        ("-Infinity", "is not a positive number"),
        ("-3.0", "is not a positive number"),
        ("0", "is not a positive number"),
        ('"fast"', "is not a positive number"),
        ("1e999", "is not a positive number"),
        ("9" * 400, "is not a positive number"),
    ],
)
def test_non_finite_and_huge_numbers(tmp_path, value, note):
    doc = (
        f'{{"performance": {{"latency_us_geomean": {value}, "latency_us_by_shape": {{"a": NaN, "b": 1e999}}}}, '
        f'"correctness": {{"max_abs_err": Infinity, "max_rel_err": {value}}}}}'
    )
    good(tmp_path / "t", {"memory/v2.json": doc})
    rows, _, _ = ok(tmp_path / "t", tmp_path)  # `ingest` asserts no NaN/Infinity in any output
    assert rows["v2"]["geomean_us"] is None and note in rows["v2"]["number_note"]
    assert rows["v2"]["correctness"]["max_abs_err"] is None and rows["v2"]["by_shape_us"] == {}


def test_v03_and_v3_canonical_wins_and_warns(tmp_path):
    good(tmp_path / "t", {"memory/v03.json": tracekit.memory(3, 99.0), "memory/v3.json": tracekit.memory(3, 28.0)})
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v3"]["geomean_us"] == 28.0
    warned(meta, "memory/v03.json: another spelling of v3; memory/v3.json is used")


def test_only_v03_is_v3(tmp_path):
    good(tmp_path / "t", {"memory/v03.json": tracekit.memory(3, 27.0), "memory/v003.json": tracekit.memory(3, 99.0)})
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v3"]["geomean_us"] == 27.0
    warned(meta, "memory/v003.json: another spelling of v3; memory/v03.json is used")


def test_oversized_memory_file_is_not_read(tmp_path):
    good(tmp_path / "t")
    with open(tmp_path / "t" / "memory" / "v2.json", "wb") as fh:
        fh.truncate(17 * 1024 * 1024)  # sparse: instant to make, over the 16 MiB cap
    _rows, meta, _ = ok(tmp_path / "t", tmp_path)
    warned(meta, "memory/v2.json: 17825792 bytes, over the 16777216-byte read cap")


def test_memory_entry_that_is_a_directory(tmp_path):
    good(tmp_path / "t")
    (tmp_path / "t" / "memory" / "v2.json").mkdir()
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert "v2" not in rows


def test_carried_from_huge_version(tmp_path):
    good(
        tmp_path / "t",
        {"memory/v2.json": tracekit.memory(2, 20.0, performance={"carried_from_version": "v" + "1" * 5000})},
    )
    rows, _, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v2"]["geomean_us"] == 20.0 and rows["v2"]["carried_from"] is None


# ---- symlinks, loops, FIFOs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "link,target",
    [
        ("memory/v2.json", "secret.json"),
        ("memory/v3.json", "fifo"),
        ("definition.json", "fifo"),
        ("solution.json", "secret.json"),
        ("README.md", "fifo"),
        ("profiles/v1", "."),
        ("memory/v4.json", "/etc/passwd"),
    ],
)
def test_symlinks_pointing_out_are_not_followed(tmp_path, outside, link, target):
    good(tmp_path / "t")
    path = tmp_path / "t" / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(target if target.startswith("/") else outside / target)
    _rows, meta, _ = ok(tmp_path / "t", tmp_path, "--hardware", "H100")
    warned(meta, f"{link}: symlink leaves the trace, not followed")


def test_memory_dir_symlinked_out(tmp_path, outside):
    build_trace(
        tmp_path / "t", [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), **tracekit.meta_files()})]
    )
    (tmp_path / "t" / "memory").symlink_to(outside)
    _rows, meta, _ = ok(tmp_path / "t", tmp_path)
    warned(meta, "memory: symlink leaves the trace, not followed")


@pytest.mark.parametrize("layout", ["self", "pair", "dir"])
def test_symlink_loops(tmp_path, layout):
    good(tmp_path / "t")
    mem = tmp_path / "t" / "memory"
    if layout == "self":
        (mem / "v2.json").symlink_to(mem / "v2.json")
    elif layout == "pair":
        (mem / "v2.json").symlink_to(mem / "v3.json")
        (mem / "v3.json").symlink_to(mem / "v2.json")
    else:
        (tmp_path / "t" / "profiles").mkdir()
        (tmp_path / "t" / "profiles" / "v1").symlink_to(tmp_path / "t" / "profiles" / "v1")
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v1"]["geomean_us"] == 30.0
    warned(meta, "symlink that resolves nowhere (a loop or a dangling link), not followed")


@pytest.mark.parametrize("rel", ["memory/v2.json", "definition.json", "profiles/v1/summary.txt", "autotune/ci/a.csv"])
def test_fifos_in_the_work_tree_do_not_block(tmp_path, rel):
    good(tmp_path / "t")
    path = tmp_path / "t" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    assert fingerprint(str(tmp_path / "t"))
    rows, _meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v1"]["geomean_us"] == 30.0


def test_1100_deep_profiles(tmp_path):
    good(tmp_path / "t")
    os.makedirs(tmp_path / "t" / "profiles" / "episode_1", exist_ok=True)
    fd = os.open(tmp_path / "t" / "profiles" / "episode_1", os.O_RDONLY)
    try:  # build the chain relative to a directory fd: its full path is past PATH_MAX
        for _ in range(1100):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open("summary.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as fh:
            fh.write("Kernel: deep\n")
    finally:
        os.close(fd)
    try:
        start = time.monotonic()
        assert fingerprint(str(tmp_path / "t"))
        assert time.monotonic() - start < 2
        _rows, meta, _ = ok(tmp_path / "t", tmp_path)
        warned(meta, "deeper than 12 levels below profiles/episode_1")
    finally:  # pytest's own tmp cleanup recurses and would fail on this tree in every later session
        subprocess.run(["rm", "-rf", str(tmp_path / "t" / "profiles")], check=True)


def test_readme_of_blank_lines_is_linear(tmp_path):
    good(tmp_path / "t", {"README.md": " \n" * 130_000})
    start = time.monotonic()
    ok(tmp_path / "t", tmp_path)
    assert time.monotonic() - start < 10


def test_deeply_nested_definition_and_autotune(tmp_path):
    good(
        tmp_path / "t",
        {
            "definition.json": "[" * 100_000 + "]" * 100_000,
            "autotune/ci/x.meta.jsonl": "[" * 100_000 + "]" * 100_000 + "\n",
        },
    )
    _rows, meta, _ = ok(tmp_path / "t", tmp_path, "--hardware", "H100")
    warned(meta, "definition.json: JSON nested too deeply to parse; ignored")


def test_huge_int_in_workload(tmp_path):
    good(tmp_path / "t", {"workload.jsonl": '{"uuid": "a", "axes": {"n": ' + "7" * 4400 + "}}\n"})
    _rows, meta, _ = ok(tmp_path / "t", tmp_path)
    warned(meta, "workload.jsonl: 1 line(s) not valid JSON; ignored")


# ---- the trace's own git config tries to run a program -----------------------------------------

PROGRAM_KEYS = [
    "core.fsmonitor",
    "core.pager",
    "pager.log",
    "diff.external",
    "diff.evil.textconv",
    "filter.evil.smudge",
    "filter.evil.clean",
    "filter.evil.process",
    "credential.helper",
    "core.sshCommand",
    "core.askPass",
    "core.editor",
    "sequence.editor",
    "gpg.program",
    "gpg.ssh.program",
    "gpg.x509.program",
    "core.alternateRefsCommand",
    "uploadpack.packObjectsHook",
    "core.hooksPath",
    "core.gitProxy",
]


def _signed_head(repo):
    """Re-create HEAD as a commit carrying a (fake) signature, so signature display would call gpg."""
    raw = git(repo, "cat-file", "commit", "HEAD")
    head, _, msg = raw.partition(b"\n\n")
    sig = b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n"
    sha = (
        git(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=head + b"\n" + sig + b"\n" + msg)
        .decode()
        .strip()
    )
    git(repo, "update-ref", "refs/heads/main", sha)


def gitconfig_entry(key: str, value: str) -> str:
    """`a.b.c = v` as config-file text: `[a "b"]` then `c = v`."""
    section, _, name = key.rpartition(".")
    head, _, sub = section.partition(".")
    return (f'[{head} "{sub}"]' if sub else f"[{head}]") + f"\n\t{name} = {value}\n"


@pytest.mark.parametrize("key", PROGRAM_KEYS)
def test_git_config_cannot_run_a_program(tmp_path, key):
    marker = tmp_path / "RAN"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho {key} >> {marker}\ncat\n")
    script.chmod(0o755)
    repo = tmp_path / "t"
    build_trace(
        repo,
        base_commits()
        + [
            CommitSpec(
                "v2: committed (+1%)", {"kernel.py": tracekit.kernel(2), ".gitattributes": "* diff=evil filter=evil\n"}
            )
        ],
    )
    _signed_head(repo)
    # the bundle is made (by our own trusted git) before the config turns hostile; the bundle path is
    # then read with the same hostile environment around it
    bundle = make_bundle(repo, tmp_path / "kernel_opt_011_evil.bundle")
    value = str(tmp_path / "hooks") if key == "core.hooksPath" else str(script)
    if key == "core.hooksPath":
        (tmp_path / "hooks").mkdir()
        for hook in ("post-checkout", "pre-auto-gc", "reference-transaction", "post-index-change"):
            (tmp_path / "hooks" / hook).symlink_to(script)
    git(repo, "config", key, value if key != "credential.helper" else f"!{script}")
    for extra in (
        "log.showSignature=true",
        "gpg.format=" + ("ssh" if "ssh" in key else "x509" if "x509" in key else "openpgp"),
        "core.untrackedCache=true",
        "include.path=" + str(tmp_path / "outside-include"),
    ):
        k, _, v = extra.partition("=")
        git(repo, "config", k, v)
    os.mkfifo(tmp_path / "outside-include")  # reading the include would block: nothing outside is read
    # the user's own environment is hostile too: a global config and -c parameters with the same key
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(gitconfig_entry(key, str(script)))
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_PARAMETERS": f"'{key}={script}'",
        "GIT_PAGER": str(script),
        "GIT_EXTERNAL_DIFF": str(script),
    }
    rows, _meta, _ = ok(repo, tmp_path, env=env)
    assert sorted(rows) == ["v0", "v1", "v2"]
    (tmp_path / "out").rename(tmp_path / "out-worktree")
    rows_b, _, _ = ok(bundle, tmp_path, env=env)
    assert sorted(rows_b) == sorted(rows)
    assert not marker.exists(), marker.read_text()


def test_the_config_attack_is_real_without_the_shadow_directory(tmp_path):
    """Injection check for the cases above: plain git in the trace does run the trace's programs."""
    marker, script = tmp_path / "RAN", tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(0o755)
    repo = good(tmp_path / "t")
    _signed_head(repo)
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "gpg.program", str(script))
    git(repo, "log", "-1")
    assert marker.exists()


# ---- the sheet: trace names and paths (before any job runs) -----------------------------------------


def test_denylisted_trace_name_is_slugged_from_label_or_hash(tmp_path):
    from optrace.run.sheet import entry_for_path, read_sheet, select_traces

    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_050_fine\t{tmp_path}/kernel_opt_050_AcmeCorpx\nAcmeCorp_run\t{tmp_path}/x\n"
    )
    by_label, by_hash = read_sheet(sheet, ("acmecorp",))
    assert by_label.slug == "050-fine" and "named by its sheet label" in by_label.note
    assert by_hash.slug.startswith("trace-") and "acmecorp" not in by_hash.label.lower() and "hash" in by_hash.note
    single = entry_for_path(f"{tmp_path}/kernel_opt_051_getACMECORPGrid", denylist=("acmecorp",))
    assert single.slug.startswith("trace-") and "acmecorp" not in single.slug
    good(tmp_path / "kernel_opt_052_acmecorp")
    (tmp_path / "deny.txt").write_text("acmecorp\n")
    (e,) = select_traces(
        {"trace": str(tmp_path / "kernel_opt_052_acmecorp"), "denylist_env": "MY_DENY"},
        "x",
        "x",
        environ={"MY_DENY": str(tmp_path / "deny.txt")},
    )
    assert "acmecorp" not in (e.slug + e.label).lower()


def test_ingest_operator_never_takes_a_denylisted_directory_name(tmp_path):
    build_trace(
        tmp_path / "kernel_opt_053_acmecorp_gemm",
        [CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 9.0)})],
    )
    (tmp_path / "deny.txt").write_text("AcmeCorp\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(tmp_path / "deny.txt")}
    _rows, meta, _ = ok(
        tmp_path / "kernel_opt_053_acmecorp_gemm",
        tmp_path,
        "--hardware",
        "H100",
        "--label",
        "kernel_opt_053_gemm",
        env=env,
    )
    assert "acmecorp" not in json.dumps(meta).lower() and meta["operator_name"] == "kernel_opt_053_gemm"


def _sheet_cli(sheet):
    return subprocess.run(
        [sys.executable, "-m", "optrace", "sheet", str(sheet)], capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.mark.parametrize(
    "make,problem",
    [
        (lambda p: None, "trace not found (give a git work tree or a .bundle file)"),
        (lambda p: p.mkdir(), "not a git work tree (no .git); give the trace's repository or a .bundle"),
        (lambda p: p.write_text("x"), "a trace file must be a git bundle ending in .bundle"),
    ],
)
def test_optrace_sheet_exits_nonzero_on_a_bad_path(tmp_path, make, problem):
    good(tmp_path / "kernel_opt_060_ok")
    make(tmp_path / "bad")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(
        f"label\tpath\nkernel_opt_060_ok\t{tmp_path}/kernel_opt_060_ok\nkernel_opt_061_bad\t{tmp_path}/bad\n"
    )
    res = _sheet_cli(sheet)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr == f"error: {sheet}:3: trace path {tmp_path}/bad: {problem}\n"
    assert "060-ok\tkernel_opt_060_ok" in res.stdout


def test_optrace_sheet_ok_exits_zero(tmp_path):
    good(tmp_path / "kernel_opt_062_ok")
    sheet = tmp_path / "traces.tsv"
    sheet.write_text(f"label\tpath\nkernel_opt_062_ok\t{tmp_path}/kernel_opt_062_ok\n")
    res = _sheet_cli(sheet)
    assert res.returncode == 0 and res.stdout.rstrip("\n").split("\t")[3] == "ok"


def test_missing_sheet_path_ends_planning_in_one_line(tmp_path):
    from optrace.errors import InputError
    from optrace.run.sheet import select_traces

    sheet = tmp_path / "traces.tsv"
    sheet.write_text(f"label\tpath\nkernel_opt_063_gone\t{tmp_path}/gone\n")
    with pytest.raises(InputError) as exc:
        select_traces({"traces": str(sheet)}, "x", "x", environ={})
    assert str(exc.value) == f"{sheet}:2: trace path {tmp_path}/gone does not exist"


def test_bundle_with_a_relative_out_dir(tmp_path):
    """The workflow passes relative paths (results/work/<slug>): the private git dir must still resolve."""
    good(tmp_path / "t")
    bundle = make_bundle(tmp_path / "t", tmp_path / "kernel_opt_012_rel.bundle")
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", bundle.name, "--out-dir", "rel/out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 0, res.stderr
    assert len((tmp_path / "rel/out/versions.jsonl").read_text().splitlines()) == 2
