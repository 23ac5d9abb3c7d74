"""Trace text made safe to print and to write into reports: control characters escaped.

A trace names things (its directory, commit subjects, file names) and every such string is hostile: an
OSC or CSI sequence in a directory name retitles or clears the reviewer's terminal, a carriage return
overwrites the line it is on, U+2028 or NEL breaks a one-line message in two, and bidirectional
controls make text read differently from what it holds. Each of these is shown as a visible escape
(`\\x1b`, `\\u2028`) instead. Escaping is idempotent: what it returns holds none of them.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

# C0 controls, DEL, C1 controls (NEL is U+0085), line and paragraph separators, bidirectional marks,
# embeddings, overrides and isolates, and the byte-order mark.
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
_CONTROL_RE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
_CONTROL_BUT_LAYOUT_RE = re.compile(f"[\x00-\x08\x0b-\x1f{_BEYOND_C0}]")  # all but tab and newline


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str, keep_layout: bool = False) -> str:
    """`text` with every control character escaped; `keep_layout` keeps newline and tab (a document
    or a table printed as several lines), everything else is still escaped."""
    return (_CONTROL_BUT_LAYOUT_RE if keep_layout else _CONTROL_RE).sub(_escape, text)


def escape_strings(doc: Any) -> Any:
    """A JSON-shaped value with every string in it (keys included) escaped, for rendering as text."""
    if isinstance(doc, str):
        return escape_controls(doc)
    if isinstance(doc, list):
        return [escape_strings(v) for v in doc]
    if isinstance(doc, dict):
        return {escape_controls(k) if isinstance(k, str) else k: escape_strings(v) for k, v in doc.items()}
    return doc


class EscapingStream:
    """A text stream that escapes control characters (newline and tab kept) in everything written
    through it: a command's stdout and stderr, so no print of trace text reaches a terminal raw."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escape_controls(text, keep_layout=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty, ...
        return getattr(self._stream, name)


def escape_standard_streams() -> None:
    """Route this process's stdout and stderr through EscapingStream (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, EscapingStream):
            setattr(sys, name, EscapingStream(stream))
