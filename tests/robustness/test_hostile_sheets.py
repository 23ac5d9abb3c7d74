"""Hostile trace sheets (#28): a sheet is read as a spreadsheet writes it (a byte-order mark, CR LF, a
quoted field holding a tab), only `\\n` ends a row, a path is taken as written, and every refusal names
the sheet's own line and the real cause. Labels reach command lines as values, never as options.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from optrace.errors import InputError
from optrace.run.sheet import read_sheet, select_traces
from tests.robustness.hostile_kit import TIMEOUT, good
from tests.support.workflow import copy_workflow


def sheet_of(tmp_path, text: str | bytes):
    path = tmp_path / "traces.tsv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def refusal(path) -> InputError:
    with pytest.raises(InputError) as exc:
        read_sheet(path)
    return exc.value


def test_a_spreadsheets_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    sheet = sheet_of(tmp_path, "\ufefflabel\tpath\nkernel_opt_001_a\t/t/a\n".encode())
    (e,) = read_sheet(sheet)
    assert (e.label, e.path) == ("kernel_opt_001_a", "/t/a")


def test_crlf_line_ends_are_line_ends(tmp_path):
    sheet = sheet_of(tmp_path, "label\tpath\r\nkernel_opt_001_a\t/t/a\r\nkernel_opt_002_b\t/t/b\r\n")
    assert [e.path for e in read_sheet(sheet)] == ["/t/a", "/t/b"]


def test_a_quoted_path_may_hold_a_tab(tmp_path):
    sheet = sheet_of(tmp_path, 'label\tpath\nkernel_opt_001_a\t"/t/with\ttab"\n')
    (e,) = read_sheet(sheet)
    assert e.path == "/t/with\ttab"


def test_an_unquoted_tab_in_a_path_says_so_not_which_columns(tmp_path):
    sheet = sheet_of(tmp_path, "label\tpath\nkernel_opt_001_a\t/t/with\ttab\n")
    err = refusal(sheet)
    assert err.where == f"{sheet}:2"
    assert err.problem == '3 tab-separated fields for 2 columns: a tab inside a path or label must be quoted ("...")'


@pytest.mark.parametrize("char,name", [("\u2028", "U+2028 (LINE SEPARATOR)"), ("\x85", "U+0085 (a control character)")])
def test_a_label_holding_a_line_break_character_is_named_as_such(tmp_path, char, name):
    """str.splitlines() broke such a row in two ("row 2 needs a label and a path"); only \\n ends a row."""
    sheet = sheet_of(tmp_path, f"label\tpath\nkernel{char}opt_001\t/t/a\nkernel_opt_002_b\t/t/b\n")
    err = refusal(sheet)
    assert err.where == f"{sheet}:2" and err.problem.startswith(f"the label holds {name}, a control or line-break")


@pytest.mark.parametrize("char", ["\x1b", "\x0c", "\u202e"])
def test_a_label_holding_an_escape_form_feed_or_bidi_override_is_refused(tmp_path, char):
    sheet = sheet_of(tmp_path, f"label\tpath\nkernel_opt_001{char}]0;owned\x07\t/t/a\n")
    assert "a control or line-break character" in refusal(sheet).problem


def test_a_trailing_control_character_is_caught_before_strip_eats_it(tmp_path):
    sheet = sheet_of(tmp_path, "label\tpath\nkernel_opt_001_a\u2028\t/t/a\n")
    assert "U+2028" in refusal(sheet).problem


def test_a_path_holding_control_characters_is_kept_as_written(tmp_path):
    """A directory may be named anything: the path is kept, and escaped wherever it is printed."""
    sheet = sheet_of(tmp_path, "label\tpath\nkernel_opt_001_a\t/t/a\x1b[2Jb\n")
    (e,) = read_sheet(sheet)
    assert e.path == "/t/a\x1b[2Jb"


def test_a_path_holding_a_nul_is_refused_by_its_line(tmp_path):
    """Red-team find: a NUL in a path reached `Path.resolve` (ValueError: embedded null byte)."""
    err = refusal(sheet_of(tmp_path, "label\tpath\na\tt\x00r\n"))
    assert err.where.endswith("traces.tsv:2") and "U+0000" in err.problem


def test_a_label_too_long_to_name_a_directory_is_refused(tmp_path):
    """Red-team find: a 100 000-character label became a 100 000-character results directory name."""
    err = refusal(sheet_of(tmp_path, "label\tpath\n" + "x" * 100_000 + "\tt\n"))
    assert err.where.endswith("traces.tsv:2") and "100000 characters long; at most 200" in err.problem
    (e,) = read_sheet(sheet_of(tmp_path, "label\tpath\n" + "x" * 200 + "\tt\n"))
    assert e.label == "x" * 200


def test_a_sheet_with_cr_line_ends_says_so(tmp_path):
    """Lines ended by a bare CR (old Mac files): csv asked for a "universal-newline mode"."""
    err = refusal(sheet_of(tmp_path, "label\tpath\ra\tt\r"))
    assert err.where.endswith("traces.tsv:1") and "carriage return inside a row" in err.problem


def test_a_directory_whose_name_ends_in_a_space_is_found(tmp_path):
    good(tmp_path / "kernel_opt_001_a ")
    sheet = sheet_of(tmp_path, f"label\tpath\nkernel_opt_001_a\t{tmp_path}/kernel_opt_001_a \n")
    (e,) = select_traces({"traces": str(sheet)}, "x", "x", environ={})
    assert e.path == f"{tmp_path}/kernel_opt_001_a "


def test_a_stray_space_after_a_path_is_shown_and_the_real_path_suggested(tmp_path):
    good(tmp_path / "kernel_opt_001_a")
    sheet = sheet_of(tmp_path, f"label\tpath\nkernel_opt_001_a\t{tmp_path}/kernel_opt_001_a \n")
    with pytest.raises(InputError) as exc:
        select_traces({"traces": str(sheet)}, "x", "x", environ={})
    assert exc.value.problem == (
        f"trace path '{tmp_path}/kernel_opt_001_a ' does not exist ('{tmp_path}/kernel_opt_001_a', without the "
        "spaces around it, does: a path is taken as written)"
    )


def test_line_numbers_are_the_files_own_past_comments_and_blank_lines(tmp_path):
    sheet = sheet_of(tmp_path, "# traces of the week\nlabel\tpath\n\n# first\nkernel_opt_001_a\t/t/a\nnolabelpath\n")
    err = refusal(sheet)
    assert err.where == f"{sheet}:6" and err.problem == "the row has no path; every row needs a label and a path"


def test_a_row_without_a_label_says_label(tmp_path):
    sheet = sheet_of(tmp_path, "label\tpath\n\t/t/a\n")
    assert refusal(sheet).problem == "the row has no label; every row needs a label and a path"


def test_a_column_named_twice_is_refused(tmp_path):
    err = refusal(sheet_of(tmp_path, "label\tpath\tpath\nx\t/a\t/b\n"))
    assert "each once" in err.problem and "'path', 'path'" in err.problem


def test_padded_column_names_are_the_columns(tmp_path):
    (e,) = read_sheet(sheet_of(tmp_path, " label \t path \tproduct\nkernel_opt_001_a\t/t/a\tH100\n"))
    assert e.overrides == {"product": "H100"}


def test_an_unclosed_quote_is_not_a_readable_row(tmp_path):
    err = refusal(sheet_of(tmp_path, 'label\tpath\nkernel_opt_001_a\t"/t/a\tx"y\n'))
    assert err.where.endswith(":2") and err.problem.startswith("not a readable TSV row")


def test_a_sheet_that_is_not_utf8_names_the_byte(tmp_path):
    err = refusal(sheet_of(tmp_path, b"label\tpath\nkernel_caf\xe9\t/t/a\n"))
    assert err.where.endswith(":2") and err.problem == "the trace sheet is not UTF-8 text (byte 21 of the file)"


def test_a_sheet_that_is_a_fifo_is_not_opened(tmp_path):
    os.mkfifo(tmp_path / "traces.tsv")
    assert refusal(tmp_path / "traces.tsv").problem == "cannot read the trace sheet (it is a FIFO)"


def test_an_oversized_sheet_is_not_read(tmp_path):
    with open(tmp_path / "traces.tsv", "wb") as fh:
        fh.truncate(65 * 1024 * 1024)
    assert "over the 67108864-byte read cap" in refusal(tmp_path / "traces.tsv").problem


def test_optrace_sheet_prints_a_path_with_escapes_escaped(tmp_path):
    good(tmp_path / "kernel_opt_001_\x1b]0;owned\x07")
    sheet = sheet_of(tmp_path, f"label\tpath\nkernel_opt_001_a\t{tmp_path}/kernel_opt_001_\x1b]0;owned\x07\n")
    res = subprocess.run([sys.executable, "-m", "optrace", "sheet", str(sheet)], capture_output=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    assert (
        b"\x1b" not in res.stdout and b"\x07" not in res.stdout and b"kernel_opt_001_\\x1b]0;owned\\x07" in res.stdout
    )


@pytest.mark.workflow
def test_labels_that_look_like_options_are_values(tmp_path):
    """`-h` and `--outputs` as labels reached argparse (`usage: optrace.run.pertrace ...`)."""
    wd = copy_workflow(tmp_path / "wf")
    for name in ("a", "b"):
        good(tmp_path / f"kernel_opt_05{name}")
    sheet = sheet_of(
        tmp_path,
        f"label\tpath\tproduct\n-h\t{tmp_path}/kernel_opt_05a\tH100\n--outputs\t{tmp_path}/kernel_opt_05b\tH100\n",
    )
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", "recon", "--config", f"traces={sheet}"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "usage:" not in out and "Traceback" not in out, out[-3000:]
    for slug, label in (("h", "-h"), ("outputs", "--outputs")):
        meta = json.loads((wd / "results/work" / slug / "meta.json").read_text())
        assert meta["source_label"] == label and "failed" not in meta


@pytest.mark.workflow
def test_a_trace_named_with_a_path_starting_with_a_dash_is_a_path(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    good(wd / "-h")
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", "recon", "--config", "trace=-h", "hardware=H100"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0 and "usage:" not in res.stdout + res.stderr, res.stderr[-3000:]
