"""What counts as a leak, in one place: the store gates detect these and the packet scrubber removes them.

Everything here is a pure function of text. Served text is the part of a record an agent sees; what
leaks there either names something the agent cannot reach (a local path, a wiki page, another
record) or identifies people and runs (an e-mail, a trace's version ids and commit hashes, terms of
the private denylist). Code is prose only inside its comments and string literals: that is where a
scrubber may rewrite and where a gate looks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterator

from .errors import InputError

DENYLIST_ENV = "ATREX_WIKI_DENYLIST"

# Each pattern starts with a literal (or is anchored on one and extended by hand) because Python's
# regex engine scans for a leading literal in C; a leading lookbehind or character class is ~30x
# slower per megabyte of text.
ABSOLUTE_PATH = re.compile(r"/(?:root|home|Users)/[\w.-]+")
EMAIL_DOMAIN = re.compile(r"@[\w-]+\.[a-z]{2,}\b")
EMAIL_LOCAL = re.compile(r"(?<![\w.@])[\w.+-]{2,}\Z")
MARKDOWN_EXT = re.compile(r"\.md\b")
MARKDOWN_STEM = re.compile(r"\b\w[\w/-]*\Z")
# A docs/ or records/ path needs a second segment or a file extension, so "3 records/s" is a rate.
STORE_PATH = re.compile(r"\b(?:docs|records)/(?:[\w.-]+/)+[\w.-]*|\b(?:docs|records)/[\w-]+\.[A-Za-z]\w*")
# Record ids: a vendor segment and at least 4 more dot-separated segments, any arch or product.
RECORD_ID = re.compile(r"\b(?:nvidia|amd|generic)(?:\.[a-z0-9_-]+){4,}")
# Commit shas (full or abbreviated), content hashes, undashed uuids: a word of 7-64 lowercase hex
# characters with a letter and a digit (so "defaced" and plain numbers are not hashes), not part of
# a dotted or dashed token or a number with an exponent (1.662843e-02).
HEX_WORD = re.compile(r"\b[0-9a-f]{7,64}\b")
EXPONENT = re.compile(r"[-+]\d")
UUID_TAIL = re.compile(r"-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
UUID_HEAD = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{8}\Z")
# Trace version ids: v12, V7 (commit grammar), v3_rerun; not PTX's .v4 suffix or software "v5.0".
VERSION_ID = re.compile(r"[vV](?<![\w.][vV])\d+(?:_(?:rerun|baseline|base)\d*)?(?!\w|\.\d)")
# A vector width, not a version, when an element type or "vec" sits within 12 characters (v4 bf16).
VECTOR_WIDTHS = ("v2", "v4", "v8", "v16", "v32", "v64")
VECTOR_CONTEXT = re.compile(r"vec|b?f16|fp(?:8|16|32)|[fib]32|x2|float|half", re.I)
HARDWARE_NAMES = ("V100",)  # NVIDIA Volta, not version 100
LOOKBACK = 256  # longest e-mail local part or page stem considered


@dataclass(frozen=True)
class Leak:
    kind: str
    token: str
    start: int


def _ending_at(stem: re.Pattern, text: str, end: int) -> int | None:
    """Start of the `stem` match that ends exactly at `end`, or None."""
    lo = max(0, end - LOOKBACK)
    m = stem.search(text, lo, end)
    return None if m is None else m.start()


def _matches(pattern: re.Pattern):
    def finder(text: str) -> Iterator[tuple[int, str]]:
        for m in pattern.finditer(text):
            yield m.start(), m.group(0)
    return finder


local_paths = _matches(ABSOLUTE_PATH)
store_paths = _matches(STORE_PATH)
record_ids = _matches(RECORD_ID)


def emails(text: str) -> Iterator[tuple[int, str]]:
    for m in EMAIL_DOMAIN.finditer(text):
        start = _ending_at(EMAIL_LOCAL, text, m.start())
        if start is not None:
            yield start, text[start:m.end()]


def markdown_pages(text: str) -> Iterator[tuple[int, str]]:
    for m in MARKDOWN_EXT.finditer(text):
        start = _ending_at(MARKDOWN_STEM, text, m.start())
        if start is not None:
            yield start, text[start:m.end()]


def hex_ids(text: str) -> Iterator[tuple[int, str]]:
    for m in HEX_WORD.finditer(text):
        token, a, b = m.group(0), m.start(), m.end()
        if token.isdigit() or not any(c.isdigit() for c in token):
            continue
        if text[a - 1:a] in (".", "-") or text[b:b + 1] == "." or EXPONENT.match(text, b):
            continue
        yield a, token


def uuids(text: str) -> Iterator[tuple[int, str]]:
    for m in UUID_TAIL.finditer(text):
        start = _ending_at(UUID_HEAD, text, m.start())
        if start is not None:
            yield start, text[start:m.end()]


def version_ids(text: str) -> Iterator[tuple[int, str]]:
    for m in VERSION_ID.finditer(text):
        token = m.group(0)
        if token in HARDWARE_NAMES:
            continue
        if token.lower() in VECTOR_WIDTHS and VECTOR_CONTEXT.search(text, max(0, m.start() - 12), m.end() + 12):
            continue
        yield m.start(), token


# (kind, finder, needles): a finder runs only on text containing one of its needles (none: always).
_SHAPE_LEAKS = (
    ("local path", local_paths, ("/",)),
    ("e-mail address", emails, ("@",)),
    ("markdown page", markdown_pages, (".md",)),
)
_TRACE_LEAKS = (
    ("version id", version_ids, ()),
    ("hash", hex_ids, ()),
    ("uuid", uuids, ("-",)),
)
_CROSS_REFERENCES = (
    ("markdown page", markdown_pages, (".md",)),
    ("store path", store_paths, ("docs/", "records/")),
    ("record id", record_ids, ("nvidia.", "amd.", "generic.")),
)


def _find(text: str, finders) -> list[Leak]:
    return [Leak(kind, token, start) for kind, finder, needles in finders
            if not needles or any(n in text for n in needles) for start, token in finder(text)]


def find_leaks(text: str, *, trace_ids: bool = True) -> list[Leak]:
    """Leaks in served text; trace_ids adds a trace's version ids, hashes and uuids."""
    return _find(text, _SHAPE_LEAKS + (_TRACE_LEAKS if trace_ids else ()))


def find_cross_references(text: str) -> list[Leak]:
    """Pointers the agent cannot follow: wiki pages, store paths and other records' ids."""
    return _find(text, _CROSS_REFERENCES)


# --- the private denylist -----------------------------------------------------------------------

def read_denylist(environ=os.environ) -> tuple[str, ...]:
    """Terms from the file named by $ATREX_WIKI_DENYLIST (never a committed list); () when unset."""
    path = environ.get(DENYLIST_ENV)
    if not path:
        return ()
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise InputError(path, f"denylist from ${DENYLIST_ENV} cannot be read ({exc.strerror})") from None
    return tuple(t for t in (line.strip() for line in lines) if t and not t.startswith("#"))


def denylist_pattern(terms: tuple[str, ...]) -> re.Pattern | None:
    """One case-insensitive alternation, longest term first so a longer name wins over its prefix."""
    if not terms:
        return None
    return re.compile("|".join(re.escape(t) for t in sorted(set(terms), key=len, reverse=True)), re.I)


# --- code: where prose lives --------------------------------------------------------------------

# Comment and string-literal syntax per language family. Python-hosted DSLs: `#` comments and
# (triple-)quoted strings, `//` is floor division. CUDA C++: `//` and `/* */`. Unknown: both.
_STRINGS = r'"""[\s\S]*?(?:"""|$)|\'\'\'[\s\S]*?(?:\'\'\'|$)|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?'
_C_STRINGS = r'"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?'
PROSE_IN_CODE = {
    "python": re.compile(rf"#[^\n]*|{_STRINGS}"),
    "c": re.compile(rf"//[^\n]*|/\*[\s\S]*?(?:\*/|$)|{_C_STRINGS}"),
    "any": re.compile(rf"#[^\n]*|//[^\n]*|/\*[\s\S]*?(?:\*/|$)|{_STRINGS}"),
}
PYTHON_DSLS = ("triton", "gluon", "cutedsl", "flydsl", "aiter")


def code_language(dsl: object) -> str:
    if dsl == "cuda":
        return "c"
    return "python" if dsl in PYTHON_DSLS else "any"


def prose_spans(code: str, language: str) -> list[tuple[int, int]]:
    """(start, end) of every comment and string literal in `code`."""
    return [m.span() for m in PROSE_IN_CODE[language].finditer(code)]
