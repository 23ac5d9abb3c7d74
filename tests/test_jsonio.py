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
