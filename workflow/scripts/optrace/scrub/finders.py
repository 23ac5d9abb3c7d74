"""Where a leak is in a text: local paths, e-mails, pages, store paths, record ids, hashes, uuids and a
trace's version ids, as (start, token) pairs; `find_leaks` and friends, the store gates' view."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass

from optrace.scrub.folding import compat

# Every scan here is linear in the text: patterns start with a literal (or a bounded class) and
# never nest unbounded quantifiers; what looks backwards from a match (an e-mail's local part, a
# page's stem, a uuid's head) is a bounded character scan, never an end-anchored search. Python's
# regex engine scans for a leading literal in C, so patterns start with one where they can.
# Local paths: home-like roots (POSIX, macOS, HPC scratch and shared file systems), `~user/`,
# Windows drive and UNC paths. A bare `~/.cache/` names no one (the store's curated guides use it).
# One pattern per kind, each starting with its literal and checking what precedes it by lookbehind
# (one alternation whose branches start with a lookbehind or a letter class is tried at every
# character: 430 ms against 20 ms over the 5.4 MB store); a Windows drive path is found at its `:`.
# (pattern, how many characters the path starts before the match)
ABSOLUTE_PATHS = (
    (re.compile(r"/(?i:root|home|users|scratch|lustre|gpfs|nfs)/[\w.-]+"), 0),
    (re.compile(r"~(?<![\w~]~)[A-Za-z_][\w.-]*/"), 0),
    (
        re.compile(r":(?<=(?<![\w:\\])[A-Za-z]:)\\[\w.$-]+|:(?<=(?<![\w:])[A-Za-z]:)/(?:Users|home)/[\w.-]+"),
        1,
    ),
    (re.compile(r"\\\\(?<![\w\\]\\\\)[\w.-]+\\[\w.$-]+"), 0),
)
EMAIL_DOMAIN = re.compile(r"@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
EMAIL_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-")
# "alice at example dot com", "bob [at] corp (dot) io": spelled-out e-mails; the last label must be a
# common top-level domain, so "looked at the dot product" is prose.
# Every gap is bounded, so a long run of spaces costs nothing.
# A bracketed `[at]` may be glued to the local part (`bob[at]corp[dot]com`); a bare `at` is a word.
_AT = r"(?:[\[({<][ \t]{0,3}at[ \t]{0,3}[\])}>]|(?<!\w)at(?=[ \t]))[ \t]{0,3}"
_DOT = r"(?:[ \t]{0,3}[\[({<][ \t]{0,3}dot[ \t]{0,3}[\])}>][ \t]{0,3}|[ \t]{1,3}dot[ \t]{1,3})"
SPELLED_EMAIL = re.compile(
    rf"{_AT}[\w-]{{1,63}}(?:{_DOT}[\w-]{{1,63}}){{0,4}}{_DOT}"
    r"(?:com|org|net|edu|gov|io|ai|dev|co|uk|de|fr|cn|jp|kr|tw|in|ru|ch|nl|se|ca|au|us|info|me)\b",
    re.I,
)
MARKDOWN_EXT = re.compile(r"\.(?:md|markdown)\b", re.I)
# A docs/ or records/ path needs a second segment or a file extension, so "3 records/s" is a rate.
# (Word starts are checked by a lookbehind after the literal, not by a leading `\b`, which would make
# the engine try the pattern at every character: 5x slower over the store.)
STORE_PATH = re.compile(r"(?:docs(?<!\wdocs)|records(?<!\wrecords))/(?:(?:[\w.-]+/)+[\w.-]*|[\w-]+\.[A-Za-z]\w*)")
# Record ids: a vendor segment and at least 4 more dot-separated segments, any arch or product.
RECORD_ID = re.compile(r"(?:nvidia(?<!\wnvidia)|amd(?<!\wamd)|generic(?<!\wgeneric))(?:\.[a-z0-9_-]+){4,}")
# Commit shas (full or abbreviated), content hashes, undashed uuids: a run of 7-64 hex digits, in
# either case, with a letter and a digit (so "defaced" and plain numbers are not hashes), glued to
# `_`, `-` or `.` or not (commit_abc1234, abc1234.json); not a decimal fraction's digits or a
# mantissa before its exponent (1.662843e-02), and not the marker+digest tail of a record id.
HEX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{7,64}(?![0-9A-Za-z])")
EXPONENT = re.compile(r"[-+]\d")
UUID_TAIL = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Za-z])")
# Trace version ids: v12, V7 (commit grammar), v3_rerun, glued by `_` (kernel_v7, _v7); not PTX's
# .v4 suffix or software "v5.0"; and "version 7" / "versions 3 and 5" spelled out (not "version 12.4").
# (A `.` before the id spares only a suffix, `ld.global.v4`; `v9..v11` and `(.v11)` are versions.)
VERSION_ID = re.compile(
    r"[vV](?<![0-9A-Za-z][vV])(?<![\w]\.[vV])\d+(?:_(?:rerun|baseline|base)\d*)?(?![0-9A-Za-z]|\.\d)"
)
NUMBER_WORDS = {
    w: i + 1
    for i, w in enumerate(
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()  # noqa: SIM905
    )
} | {"twenty": 20}
_NUMBER = rf"(?:#?\d+|{'|'.join(NUMBER_WORDS)})"
VERSION_WORD = re.compile(
    rf"\bversions?[ \t]{{1,3}}{_NUMBER}(?:[ \t]{{0,3}}(?:,|&|and|or|to|-|–)[ \t]{{0,3}}{_NUMBER})*"
    r"(?!\w|\.\d)|\bver\.[ \t]{0,3}\d+(?!\w|\.\d)",
    re.I,
)
# A vector width, not a version, only in vector syntax: right after "vectorized"/"vec"/"float4"-like
# words or right before "load(s)"/"store(s)"/an element type ("v4 loads", "float4 v2", "v2 f16").
# A type merely nearby ("v4 switched to bf16") does not spare a version id.
VECTOR_WIDTHS = ("v2", "v4", "v8", "v16", "v32", "v64")
VECTOR_BEFORE = re.compile(r"(?:vectori[sz]ed|vector|vec|float[248]|half2|bfloat162|int[248]|ld|st)[ \t._]?\Z", re.I)
VECTOR_AFTER = re.compile(r"[ \t._]?(?:loads?|stores?|accesse?s?|b?f16|f32|f64|fp(?:8|16|32)|[sub]32|[sub]16)\b", re.I)
HARDWARE_NAMES = ("V100",)  # NVIDIA Volta, not version 100
# A version right after a tool's name is the tool's ("Triton v3", "FlashAttention v2", "CUDA version 12"):
# saying "an earlier step" there would be false.
SOFTWARE_BEFORE = re.compile(
    r"(?<![\w-])(?:triton|cuda|pytorch|torch|rocm|hip|cudnn|cutlass|cute|cutedsl|cublas(?:lt)?|nccl|python|gcc|"
    r"clang|llvm|nvcc|ncu|nsight|driver|helion|tilelang|gluon|flashinfer|flash-?attention|flash-?attn|fa|"
    r"tensorrt|trt|jax|xla|vllm|sglang|deepgemm|thunderkittens|ptx|sdk|toolkit|library|api)[ \t]?\Z",
    re.I,
)
LOOKBACK = 256  # longest e-mail local part or page stem considered


@dataclass(frozen=True)
class Leak:
    kind: str
    token: str
    start: int


def _run_start(text: str, end: int, chars: Container[str], limit: int = LOOKBACK) -> int:
    """Start of the run of `chars` ending at `end`, scanning back at most `limit` characters."""
    i, lo = end, max(0, end - limit)
    while i > lo and text[i - 1] in chars:
        i -= 1
    return i


def _matches(pattern: re.Pattern[str]) -> Callable[[str], Iterator[tuple[int, str]]]:
    def finder(text: str) -> Iterator[tuple[int, str]]:
        for m in pattern.finditer(text):
            yield m.start(), m.group(0)

    return finder


def local_paths(text: str) -> Iterator[tuple[int, str]]:
    """Local paths left to right, exactly as one alternation's scan finds them: the leftmost path of
    any kind, then the leftmost at or after its end (a lookbehind still sees the text before)."""
    pos = 0
    upcoming: list[tuple[int, int] | None] = [None] * len(ABSOLUTE_PATHS)
    while True:
        for i, (pattern, back) in enumerate(ABSOLUTE_PATHS):
            span = upcoming[i]
            if span is None or span[0] < pos:
                m = pattern.search(text, pos + back)
                upcoming[i] = (m.start() - back, m.end()) if m else (len(text) + 1, 0)
        start, end = min(s for s in upcoming if s is not None)
        if start > len(text):
            return
        yield start, text[start:end]
        pos = end


store_paths = _matches(STORE_PATH)
record_ids = _matches(RECORD_ID)


def _email_local_start(text: str, end: int) -> int | None:
    """Start of the local part ending at `end` (an e-mail's `@`), None when there is none."""
    # A run longer than LOOKBACK still ends in an address (`----bob@corp.com` with any number of
    # dashes), and one after an `@` is a handle's (`@bob@mastodon.social`): neither is spared.
    start = _run_start(text, end, EMAIL_LOCAL_CHARS)
    while start < end and text[start] in ".+-":
        start += 1  # a local part starts with a letter or digit: `+@gluon.jit` is a diff line
    return start if start < end else None


def emails(text: str) -> Iterator[tuple[int, str]]:
    for m in EMAIL_DOMAIN.finditer(text):
        start = _email_local_start(text, m.start())
        if start is not None:
            yield start, text[start : m.end()]
    if " at " in text or "at]" in text or "at)" in text or " AT " in text:
        for m in SPELLED_EMAIL.finditer(text):
            gap = _run_start(text, m.start(), " \t", limit=3)
            start = _email_local_start(text, gap) if gap < m.start() or text[m.start()] in "[({<" else None
            if start is not None:
                yield start, text[start : m.end()]


_STEM_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/-")


def markdown_pages(text: str) -> Iterator[tuple[int, str]]:
    for m in MARKDOWN_EXT.finditer(text):
        start = run = _run_start(text, m.start(), _STEM_CHARS)
        while start < m.start() and text[start] in "/-":
            start += 1  # a page's stem starts at a word character
        if start < m.start() and not (run > 0 and text[run - 1] in _STEM_CHARS):  # else: longer than any stem
            yield start, text[start : m.end()]


def _in_record_id(text: str, a: int) -> bool:
    """A hex run that is a record id's marker+digest tail (`...-a66e116`), not a commit."""
    if text[a - 1 : a] != "-":
        return False
    m = RECORD_ID.match(text, _run_start(text, a, _ID_CHARS, limit=400))
    return m is not None and m.end() > a


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")


def hex_runs(text: str, *, need_digit: bool) -> Iterator[tuple[int, str]]:
    """Hash-like hex runs; need_digit also spares all-letter words ("defaced") in lower case."""
    for m in HEX_RUN.finditer(text):
        token, a, b = m.group(0), m.start(), m.end()
        if token.isdigit():
            continue
        if (need_digit or not token.islower()) and not any(c.isdigit() for c in token):
            continue
        if text[a - 1 : a] == "." and text[a - 2 : a - 1].isdigit():
            continue  # 1.662843e-02: a fraction's digits
        if token[-1] in "eE" and EXPONENT.match(text, b):
            continue
        if _in_record_id(text, a):
            continue
        yield a, token


def hex_ids(text: str) -> Iterator[tuple[int, str]]:
    return hex_runs(text, need_digit=True)


_HEX = frozenset("0123456789abcdefABCDEF")


def uuids(text: str) -> Iterator[tuple[int, str]]:
    for m in UUID_TAIL.finditer(text):
        start = _run_start(text, m.start(), _HEX, limit=9)
        if m.start() - start == 8 and not (start > 0 and text[start - 1].isalnum()):
            yield start, text[start : m.end()]


def is_vector_width(text: str, start: int, end: int) -> bool:
    if text[start:end].lower() not in VECTOR_WIDTHS:
        return False
    return bool(VECTOR_BEFORE.search(text, max(0, start - 12), start) or VECTOR_AFTER.match(text, end))


def version_ids(text: str) -> Iterator[tuple[int, str]]:
    found = []
    for m in VERSION_ID.finditer(text):
        token = m.group(0)
        if token in HARDWARE_NAMES or is_vector_width(text, m.start(), m.end()) or is_software(text, m.start()):
            continue
        found.append((m.start(), token))
    if "ersion" in text or "ERSION" in text or "er." in text or "ER." in text:
        found += [(m.start(), m.group(0)) for m in VERSION_WORD.finditer(text) if not is_software(text, m.start())]
        found.sort()
    yield from found


def is_software(text: str, start: int) -> bool:
    """A version right after a tool's name: the tool's version, not the trace's."""
    return bool(SOFTWARE_BEFORE.search(text, max(0, start - 24), start))


# (kind, finder, needles): a finder runs only on text containing one of its needles (none: always).
_SHAPE_LEAKS = (
    ("local path", local_paths, ("/", "\\")),
    ("e-mail address", emails, ("@", " at ", "at]", "at)", " AT ")),
    ("markdown page", markdown_pages, (".md", ".MD", ".Md", ".mD", ".markdown")),
)
_TRACE_LEAKS = (
    ("version id", version_ids, ()),
    ("hash", hex_ids, ()),
    ("uuid", uuids, ("-",)),
)
_CROSS_REFERENCES = (
    ("markdown page", markdown_pages, (".md", ".MD", ".Md", ".mD", ".markdown")),
    ("store path", store_paths, ("docs/", "records/")),
    ("record id", record_ids, ("nvidia.", "amd.", "generic.")),
)


def outermost(leaks: Iterable[Leak]) -> list[Leak]:
    """Leaks left to right without those inside another (a uuid's last group is not a second hash)."""
    kept, reach = [], -1
    for leak in sorted(leaks, key=lambda k: (k.start, -len(k.token))):
        if leak.start + len(leak.token) > reach:
            kept.append(leak)
            reach = leak.start + len(leak.token)
    return kept


# (kind, finder of (start, token) pairs, substrings one of which a text must hold for the finder to run)
LeakFinder = tuple[str, Callable[[str], Iterable[tuple[int, str]]], tuple[str, ...]]


def _find_in(text: str, finders: Iterable[LeakFinder]) -> Iterator[Leak]:
    return (
        Leak(kind, token, start)
        for kind, finder, needles in finders
        if not needles or any(n in text for n in needles)
        for start, token in finder(text)
    )


def _find(text: str, finders: Iterable[LeakFinder]) -> list[Leak]:
    """Leaks of `text`, and of its `compat` view when that differs (`alice＠corp．com`), as spans of `text`."""
    found = list(_find_in(text, finders))
    view, starts, ends = compat(text)
    if starts is not None and ends is not None:  # both or neither
        for leak in _find_in(view, finders):
            a, b = starts[leak.start], ends[leak.start + len(leak.token) - 1]
            found.append(Leak(leak.kind, text[a:b], a))
    return outermost(found)


def find_leaks(text: str, *, trace_ids: bool = True) -> list[Leak]:
    """Leaks in served text; trace_ids adds a trace's version ids, hashes and uuids."""
    return _find(text, _SHAPE_LEAKS + (_TRACE_LEAKS if trace_ids else ()))


def find_identifying_leaks(text: str) -> list[Leak]:
    """Local paths and e-mails: they identify people and machines wherever they stand, raw provenance
    included (a markdown page there is the curated records' provenance, `evidence.raw.page_path`)."""
    return _find(text, _SHAPE_LEAKS[:2])


def find_cross_references(text: str) -> list[Leak]:
    """Pointers the agent cannot follow: wiki pages, store paths and other records' ids."""
    return _find(text, _CROSS_REFERENCES)
