"""Trace text is printed and written with control characters escaped (#28): one helper
(optrace.printable), applied to every command's stdout and stderr, the run summary, the staging
README and recon.md. A directory named with OSC and CSI sequences is the case the issue names.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from optrace.printable import EscapingStream, escape_controls, escape_strings
from tests.robustness.hostile_kit import TIMEOUT, good
from tests.support.workflow import copy_workflow

OSC_TITLE = "\x1b]0;owned\x07"  # sets the terminal's title
CSI_CLEAR = "\x1b[2J\x1b[H"  # clears the screen
HOSTILE_NAME = f"kernel_opt_110_{OSC_TITLE}x{CSI_CLEAR}"
RAW = ("\x1b", "\x07", "\x9b", "\u2028", "\u202e", "\r")


@pytest.mark.parametrize(
    "text,shown",
    [
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("title\x1b]0;x\x07", "title\\x1b]0;x\\x07"),
        ("over\rwrite", "over\\x0dwrite"),
        ("nel\x85sep\u2028par\u2029", "nel\\x85sep\\u2028par\\u2029"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("bidi\u202eevil\u2066x\u2069", "bidi\\u202eevil\\u2066x\\u2069"),
        ("bom\ufeff and del\x7f", "bom\\ufeff and del\\x7f"),
        ("tab\tnew\nline", "tab\\x09new\\x0aline"),
        ("plain text, ünïcode, 日本", "plain text, ünïcode, 日本"),
    ],
)
def test_control_characters_are_shown_as_escapes(text, shown):
    assert escape_controls(text) == shown
    assert escape_controls(shown) == shown  # idempotent: nothing is left to escape


def test_a_document_keeps_its_newlines_and_tabs_and_nothing_else():
    assert escape_controls("a\tb\nc\x1bd\re\n", keep_layout=True) == "a\tb\nc\\x1bd\\x0de\n"


def test_every_string_of_a_json_document_is_escaped_keys_included():
    doc = {"label\x1b": ["x\x07", {"y": "z\u2028"}], "n": 3, "none": None}
    assert escape_strings(doc) == {"label\\x1b": ["x\\x07", {"y": "z\\u2028"}], "n": 3, "none": None}


def test_the_escaping_stream_escapes_what_is_written_through_it():
    buf = io.StringIO()
    stream = EscapingStream(buf)
    print(f"error: {HOSTILE_NAME}: bad", file=stream)  # type: ignore[arg-type]
    assert buf.getvalue() == "error: kernel_opt_110_\\x1b]0;owned\\x07x\\x1b[2J\\x1b[H: bad\n"


def test_a_commands_error_line_naming_a_hostile_path_is_escaped(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp_path / HOSTILE_NAME), "--out-dir", str(tmp_path / "o")],
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 2 and res.stderr.count(b"\n") == 1
    assert not any(c.encode() in res.stderr for c in RAW) and b"\\x1b]0;owned\\x07" in res.stderr


def test_a_commands_report_line_about_a_hostile_trace_is_escaped(tmp_path):
    good(tmp_path / HOSTILE_NAME)
    res = subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp_path / HOSTILE_NAME), "--out-dir", str(tmp_path / "o")],
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 0, res.stderr
    assert b"\x1b" not in res.stdout + res.stderr and b"\x07" not in res.stdout + res.stderr


@pytest.mark.workflow
def test_a_trace_named_with_terminal_escapes_reaches_no_terminal_or_report_raw(tmp_path):
    """The issue's case: `trace=<dir named with OSC/CSI>`; the summary, staging README and recon.md
    name it with its escapes visible, never as sequences a terminal or viewer would act on."""
    wd = copy_workflow(tmp_path / "wf")
    trace = good(tmp_path / HOSTILE_NAME)
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "-c2", "--config", f"trace={trace}", "hardware=H100"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = res.stdout[res.stdout.index("Run summary") :]
    results = wd / "results"
    recon = next((results / "staging" / "reports").glob("*/recon.md")).read_text()
    readme = (results / "staging" / "README.md").read_text()
    assert "\\x1b]0;owned\\x07" in recon  # the name is there, escaped
    for name, text in (("summary", summary), ("recon.md", recon), ("README.md", readme)):
        assert not any(c in text for c in RAW), name
    for path in results.rglob("*.md"):
        assert "\x1b" not in path.read_text(errors="replace"), path
