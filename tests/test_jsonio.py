"""The atomic writers: a new file beside the target, renamed over it, never a torn or stray file."""

from __future__ import annotations

import os
import stat

import pytest

from optrace import jsonio


def test_a_write_replaces_the_file_whole_with_the_users_mode_and_leaves_nothing_beside_it(tmp_path):
    target = tmp_path / "out" / "meta.json"
    jsonio.write_text_atomic(target, "one\n")
    jsonio.write_lines_atomic(target, ["two", "\n"])
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["meta.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old\n")

    def pieces():
        yield "half"
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        jsonio.write_lines_atomic(target, pieces())
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_every_writer_of_the_project_goes_through_the_one_atomic_writer(tmp_path):
    """A binary writer (parquet, CSV) hands write_atomic a function that fills the temp file; the temp
    file is beside the target (so the rename is atomic) and gone afterwards, written or failed."""
    target = tmp_path / "t.parquet"
    seen = []

    def fill(tmp):
        seen.append(tmp)
        tmp.write_bytes(b"PAR1")

    jsonio.write_atomic(target, fill)
    assert target.read_bytes() == b"PAR1" and seen[0].parent == tmp_path and not seen[0].exists()

    def fail(tmp):
        tmp.write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        jsonio.write_atomic(target, fail)
    assert target.read_bytes() == b"PAR1" and [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_no_module_renames_a_temporary_file_of_its_own():
    """One atomic writer (jsonio.write_atomic): a module that renames its own temp file over a target
    is a second one. distill's hard link is not a writer of that kind (it never replaces a record)."""
    import re

    from optrace import PACKAGE_DIR

    renames = {
        p.relative_to(PACKAGE_DIR).as_posix()
        for p in PACKAGE_DIR.rglob("*.py")
        if re.search(r"os\.replace\(|\.rename\(", p.read_text(encoding="utf-8"))
    }
    assert renames == {"jsonio.py", "distill/distill.py"}


def test_json_is_written_deterministically_and_never_holds_a_non_finite_number(tmp_path):
    doc = {"b": [1.5, float("nan")], "a": {"z": float("inf"), "y": "é"}}
    assert (
        jsonio.dumps(doc) == '{\n  "a": {\n    "y": "é",\n    "z": null\n  },\n  "b": [\n    1.5,\n    null\n  ]\n}\n'
    )
    assert jsonio.dumps_compact(doc) == '{"a":{"y":"é","z":null},"b":[1.5,null]}\n'
    assert jsonio.dumps_compact({"t": (1, float("-inf"))}) == '{"t":[1,null]}\n'
    jsonio.write_jsonl(tmp_path / "r.jsonl", [{"b": 1, "a": float("nan")}, [2]])
    assert (tmp_path / "r.jsonl").read_text() == '{"a": null, "b": 1}\n[2]\n'
    jsonio.write_json(tmp_path / "d.json", {"k": 1})
    assert jsonio.read_json(tmp_path / "d.json") == {"k": 1}


def test_untrusted_json_gives_a_document_or_one_reason(tmp_path):
    assert jsonio.parse_untrusted(b'{"a": 1}') == ({"a": 1}, None)
    assert jsonio.parse_untrusted(b"\xff[1]")[1] is not None  # U+FFFD where the byte was: not JSON
    assert jsonio.parse_untrusted("[1,")[1].startswith("not valid JSON (")
    assert jsonio.parse_untrusted("[" * 100_000)[1] == "JSON nested too deeply to parse"
    assert jsonio.parse_untrusted("1" * 5000)[1].startswith("JSON with an unparseable number")


@pytest.mark.parametrize(
    "data,problem",
    [
        (b"[1,", "not valid JSON (Expecting value: line 1 column 4 (char 3))"),
        (b"\xff", "not valid JSON (not UTF-8: invalid start byte at byte 0)"),
        (b"[" * 100_000, "not valid JSON (nested too deeply to parse)"),
        (b"1" * 5000, "not valid JSON (an unparseable number: Exceeds the limit (4300 digits)"),
    ],
    ids=["malformed", "not-utf8", "deep", "huge-int"],
)
def test_a_stage_reads_bad_json_as_one_line_naming_the_file(tmp_path, data, problem):
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(jsonio.InputError) as exc:
        jsonio.read_json(path)
    assert str(exc.value.where) == str(path) and exc.value.problem.startswith(problem)


def test_a_jsonl_error_names_its_line(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\r{oops}\n')
    with pytest.raises(jsonio.InputError) as exc:
        jsonio.read_jsonl(path)
    assert exc.value.where == f"{path}:4" and exc.value.problem.startswith("not valid JSON (")
    path.write_bytes(b'{"a": 1}\r\n\n{"b": 2}\n')
    assert jsonio.read_jsonl(path) == [{"a": 1}, {"b": 2}]


def test_only_a_small_regular_file_is_opened(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    folder = tmp_path / "dir.json"
    folder.mkdir()
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b" " * 100 + b"]")
    link = tmp_path / "link.json"
    link.symlink_to(big)
    for path, problem in (
        (fifo, "not a regular file; not read"),
        (folder, "not a regular file; not read"),
        (tmp_path / "none.json", "file not found"),
    ):
        with pytest.raises(jsonio.InputError) as exc:
            jsonio.open_regular(path)
        assert exc.value.problem == problem, path
    with pytest.raises(jsonio.InputError) as exc:
        jsonio.open_regular(big, cap=50)
    assert exc.value.problem == "102 bytes, over the 50-byte limit; not read"
    with jsonio.open_regular(big, cap=102) as fh:
        assert len(fh.read()) == 102
    with jsonio.open_regular(link) as fh:
        assert fh.read(1) == b"["
    with pytest.raises(jsonio.InputError) as exc:
        jsonio.open_regular(link, follow_links=False)
    assert exc.value.problem.startswith("cannot be read (")


def test_a_file_of_the_projects_own_is_a_document_or_none(tmp_path):
    path = tmp_path / "memo.json"
    assert jsonio.load_or_none(path) is None
    for data in (b"{", b"\xff\xfe", b"[" * 100_000):
        path.write_bytes(data)
        assert jsonio.load_or_none(path) is None
    path.write_bytes(b'{"ok": true}')
    assert jsonio.load_or_none(path) == {"ok": True} and jsonio.bytes_or_none(path) == b'{"ok": true}'
    os.mkfifo(tmp_path / "f")
    assert jsonio.bytes_or_none(tmp_path / "f") is None
