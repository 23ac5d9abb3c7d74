"""Commit messages decoded by their declared or detected encoding, or left out with a warning."""

import contextlib
import io
import json
import subprocess

import pytest

from optrace.cli import main as optrace
from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.ingest.encoding import commit_message, decode, split_commit
from tests.support import tracekit

RESUME = "Résumé: la latence DRAM est masquée, 27.02 µs sur 8×1024×1024."


@pytest.mark.parametrize(
    "raw,expected",
    [
        (RESUME.encode("utf-8"), (RESUME, "utf-8")),
        (RESUME.encode("latin-1"), (RESUME, "cp1252")),  # Latin-1 letters are Windows-1252's too
        ("“fused” 3 € cheaper".encode("cp1252"), ("“fused” 3 € cheaper", "cp1252")),
        (b"a\x81b", None),  # undefined in Windows-1252, a C1 control in Latin-1: not text
        (b"\x00\x01binary\x81\x9d", None),
    ],
)
def test_a_message_decodes_by_the_first_encoding_that_gives_text(raw, expected):
    assert decode(raw) == expected


def test_a_declared_encoding_is_tried_first():
    # KOI8-R bytes are valid Windows-1252 too, but mean something else: the header says which
    raw = "привет".encode("koi8-r")
    assert decode(raw, "KOI8-R") == ("привет", "koi8-r")
    assert decode(raw)[0] != "привет"
    assert decode(RESUME.encode("latin-1"), "no-such-codec") == (RESUME, "cp1252")  # an unknown name is skipped


def test_a_commit_objects_subject_and_body_as_git_log_gives_them():
    raw = (
        b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n"
        b"encoding ISO-8859-1\n\nV5: two tiles\n in flight\n\n" + RESUME.encode("latin-1") + b"\n"
    )
    assert split_commit(raw)[1] == "ISO-8859-1"
    msg = commit_message(raw)
    assert (msg.subject, msg.body, msg.encoding) == ("V5: two tiles in flight", RESUME, "iso8859-1")


def ingest(trace, out):
    with contextlib.redirect_stdout(io.StringIO()):
        assert optrace(["ingest", str(trace), "--out-dir", str(out), "--hardware", "H100"]) == 0
    rows = {json.loads(x)["version"]: json.loads(x) for x in (out / "versions.jsonl").read_text().splitlines()}
    return rows, json.loads((out / "meta.json").read_text())


def commits(body3: bytes, subject3: str = "v3: committed (+3.0%) two tiles in flight"):
    return [
        CommitSpec("V0: baseline", {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 10.0)}),
        CommitSpec(subject3, {"kernel.py": tracekit.kernel(3), "memory/v3.json": tracekit.memory(3, 9.5)}, body=body3),
    ]


def test_an_undeclared_latin1_body_reaches_the_versions_decoded(tmp_path):
    build_trace(tmp_path / "t", commits(RESUME.encode("latin-1")))
    rows, meta = ingest(tmp_path / "t", tmp_path / "out")
    assert rows["v3"]["body"] == RESUME and rows["v3"]["subject"] == "v3: committed (+3.0%) two tiles in flight"
    assert any("message decoded as cp1252 (not UTF-8)" in w for w in meta["warnings"])


def test_an_undecodable_body_is_left_out_with_a_warning(tmp_path):
    build_trace(tmp_path / "t", commits(b"\x81\x9d binary \x8f"))
    rows, meta = ingest(tmp_path / "t", tmp_path / "out")
    assert rows["v3"]["body"] == "" and rows["v3"]["verdict"] == "kept"
    assert any("body left out" in w for w in meta["warnings"])


def test_a_declared_encoding_git_converts_is_read_as_git_gives_it(tmp_path):
    repo = tmp_path / "t"
    build_trace(repo, commits(b"plain"))
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
    (tmp_path / "msg").write_bytes(b"v4: committed (+2.0%) evict-first\n\n" + RESUME.encode("latin-1") + b"\n")
    (repo / "memory" / "v4.json").write_text(tracekit.memory(4, 9.0))
    (repo / "kernel.py").write_text(tracekit.kernel(4))
    git = ["git", "-c", "user.name=A", "-c", "user.email=a@b.invalid", "-c", "i18n.commitEncoding=ISO-8859-1"]
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-F", str(tmp_path / "msg")], cwd=repo, check=True, env=env)
    rows, meta = ingest(repo, tmp_path / "out")
    assert rows["v4"]["body"] == RESUME
    assert not any("decoded as" in w for w in meta["warnings"])  # git re-encoded it: nothing to redo


def test_a_utf8_message_that_holds_a_replacement_character_is_kept_as_written(tmp_path):
    # U+FFFD written on purpose looks like a lossy reading; its object says it was UTF-8 all along
    body = "the \ufffd in the log is the tool's own output"
    build_trace(tmp_path / "t", commits(body.encode("utf-8")))
    rows, meta = ingest(tmp_path / "t", tmp_path / "out")
    assert rows["v3"]["body"] == body
    assert not any("decoded as" in w or "left out" in w for w in meta["warnings"])


@pytest.mark.parametrize(
    "raw",
    [
        "性能が改善した".encode("shift_jis"),  # lead bytes 0x80-0x9f: not Windows-1252, C1 controls as Latin-1
        "fused".encode("utf-16"),  # NUL bytes: no person's text
    ],
)
def test_an_encoding_none_of_the_three_reads_is_left_out_never_misread(raw):
    assert decode(raw) is None
