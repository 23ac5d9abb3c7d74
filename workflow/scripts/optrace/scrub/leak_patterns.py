"""What counts as a leak, in one place: the store gates detect these and the packet scrubber removes them.

Everything here is a pure function of text. Served text is the part of a record an agent sees; what
leaks there either names something the agent cannot reach (a local path, a wiki page, another
record) or identifies people and runs (an e-mail, a trace's version ids and commit hashes, terms of
the private denylist). Code is prose only inside its comments and string literals: that is where a
scrubber rewrites leaks and where a gate looks for them. A denylisted term is a leak anywhere, code
identifiers included, in any case and as any substring.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import html
import os
import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from optrace.errors import InputError

DENYLIST_ENV = "ATREX_WIKI_DENYLIST"


def add_denylist_argument(parser: argparse.ArgumentParser) -> None:
    """`--denylist-env`, the same option with the same default in every stage that scrubs or checks."""
    parser.add_argument("--denylist-env", default=DENYLIST_ENV, help="variable naming the private denylist file")


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
VERSION_ID = re.compile(r"[vV](?<![0-9A-Za-z.][vV])\d+(?:_(?:rerun|baseline|base)\d*)?(?![0-9A-Za-z]|\.\d)")
_NUMBER = r"(?:#?\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty)"
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
        if token in HARDWARE_NAMES or is_vector_width(text, m.start(), m.end()):
            continue
        found.append((m.start(), token))
    if "ersion" in text or "ERSION" in text or "er." in text or "ER." in text:
        found += [(m.start(), m.group(0)) for m in VERSION_WORD.finditer(text)]
        found.sort()
    yield from found


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


# --- the private denylist -----------------------------------------------------------------------


def read_denylist(environ: Mapping[str, str] = os.environ, variable: str = DENYLIST_ENV) -> tuple[str, ...]:
    """Terms from the file named by $variable (never a committed list); () when unset."""
    path = environ.get(variable or DENYLIST_ENV)
    if not path:
        return ()
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise InputError(path, f"denylist from ${variable or DENYLIST_ENV} cannot be read ({exc.strerror})") from None
    return tuple(t for t in (line.strip() for line in lines) if t and not t.startswith("#"))


# Letters that render like Latin ones (Cyrillic, Greek, Armenian, IPA and small capitals), folded
# after NFKD and casefolding have done what Unicode defines (full-width, ß -> ss, İ -> i).
_CONFUSABLE_PAIRS = (
    "аa вb еe ёe кk мm нh оo рp сc тt уy хx ѕs іi їi јj ԁd һh ԛq ԝw ӏl ьb ɡg "
    "αa βb εe ηn ιi κk μu νv οo ρp τt υu χx γy ωw ϲc ϳj "
    "օo սu հh ոn ıi ȷj ɑa ɩi ɪi ʟl ᴀa ʙb ᴄc ᴅd ᴇe ɢg ʜh ᴊj ᴋk ᴍm ɴn ᴏo ᴘp ʀr ᴛt ᴜu ᴠv ᴡw ʏy ᴢz"
)
CONFUSABLES = str.maketrans({pair[0]: pair[1] for pair in _CONFUSABLE_PAIRS.split()})
# Escapes a text may spell a letter with: HTML entities and tags (`ali<b></b>ce` renders whole),
# URL-encoding, backslash escapes.
_ENCODED_UNIT = re.compile(
    r"[^\x00-\x7f]+|&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});|<[A-Za-z/!][^<>\n]{0,60}>"
    r"|(?:%[0-9A-Fa-f]{2})+|\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}"
    r"|N\{[A-Za-z0-9 -]{1,60}\}|[0-7]{3})"
)
# Between the letters of a term: any punctuation or `_` (ali-ce, a.l.i.c.e, ali_ce), a hyphen
# breaking the line (ali-\nce), string literals glued by the compiler ("ali" "ce", 'ali' + 'ce');
# letter-spaced ("a l i c e") only when every letter stands alone. A gap holds no letter or digit,
# so it may be possessive (`*+`, atomic runs): the pattern never backtracks into one, whatever
# runs of quotes, hyphens or spaces the text holds.
_TIGHT_GAP = r"(?:[\"'](?>[ \t\r\n]*)(?:\+(?>[ \t\r\n]*))?[\"']|-(?>[ \t]*)\r?\n(?>[ \t]*)|[^\w\s]|_)*+"
_SPACED_GAP = r"(?:[^\w\n]|_){1,3}+"
_WORD_GAP = r"(?:[^\w\n]|_){0,3}+"
# Tokens that may be a term in base64, base32 or hex.
_ENCODED_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{6,}={0,2}")


@lru_cache(maxsize=4096)
def _fold_char(c: str) -> str:
    if "\U0001f1e6" <= c <= "\U0001f1ff":  # regional indicator letters render as A-Z
        return chr(ord(c) - 0x1F1E6 + ord("a"))
    s = unicodedata.normalize("NFKD", c)
    s = unicodedata.normalize("NFKD", "".join(ch for ch in s if _visible(ch)).casefold())
    return "".join(ch for ch in s if _visible(ch)).translate(CONFUSABLES)


_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # render as nothing but are letters/symbols


def _visible(ch: str) -> bool:
    """Not a combining mark, an invisible format character (zero-width, soft hyphen, tag) or a blank letter."""
    return unicodedata.category(ch) not in ("Mn", "Me", "Cf") and ch not in _BLANK_LETTERS


def _decode_unit(unit: str) -> str:
    if unit[0] == "<":
        return ""  # markup renders as nothing
    if unit[0] == "&":
        return html.unescape(unit)
    if unit[0] == "%":
        return bytes.fromhex(unit.replace("%", "")).decode("utf-8", "replace")
    if unit[0] == "\\":
        kind = unit[1]
        if kind == "N":
            try:
                return unicodedata.lookup(unit[3:-1])
            except KeyError:
                return unit
        code = int(unit[1:], 8) if kind.isdigit() else int(unit[2:], 16)
        return chr(code) if code <= 0x10FFFF else unit
    return unit


def fold(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """`text` as a denylist matches it: escapes decoded, NFKD, marks and format characters (zero-width
    spaces, soft hyphens) dropped, casefolded, look-alikes folded to Latin; with each folded
    character's (start, end) in `text`, or None twice when folding kept every offset (plain ASCII)."""
    return _view(text, _fold_char, str.lower)


@lru_cache(maxsize=4096)
def _compat_char(c: str) -> str:
    if not _visible(c):
        return ""
    s = unicodedata.normalize("NFKC", c).translate(CONFUSABLES)
    return s if s.isascii() else c  # only what becomes ASCII can complete a path, address or hash


def compat(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """`text` as the shape rules read it: escapes decoded, NFKC where it gives ASCII (full-width
    `／home／` is `/home/`), invisible characters dropped, look-alike letters folded, case kept;
    offsets as `fold` gives them, None twice when the view is the text itself."""
    view, starts, ends = _view(text, _compat_char, str)
    return (text, None, None) if view == text else (view, starts, ends)


def _view(
    text: str, char: Callable[[str], str], case: Callable[[str], str], _depth: int = 0
) -> tuple[str, list[int] | None, list[int] | None]:
    if text.isascii() and (
        ("&" not in text and "%" not in text and "\\" not in text and "<" not in text) or not _ENCODED_UNIT.search(text)
    ):
        return case(text), None, None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _ENCODED_UNIT.finditer(text):
        a, b = m.span()
        if a > pos:
            out.append(case(text[pos:a]))
            starts.extend(range(pos, a))
            ends.extend(range(pos + 1, a + 1))
        unit = m.group(0)
        if unit[0] in "&%\\<":
            decoded = _decode_unit(unit)
            piece = _view(decoded, char, case, _depth + 1)[0] if _depth < 2 else "".join(map(char, decoded))
            out.append(piece)
            starts.extend([a] * len(piece))
            ends.extend([b] * len(piece))
        else:
            for i, c in enumerate(unit, a):
                piece = char(c)
                out.append(piece)
                starts.extend([i] * len(piece))
                ends.extend([i + 1] * len(piece))
        pos = b
    out.append(case(text[pos:]))
    starts.extend(range(pos, len(text)))
    ends.extend(range(pos + 1, len(text) + 1))
    return "".join(out), starts, ends


def _letters(term: str) -> str:
    return "".join(c for c in fold(term)[0] if c.isalnum())


# Digits written for the letters they resemble (a1ice, gpu-n0de7); only digits, never punctuation,
# so a letter's class and a gap never compete for one character and the match stays linear.
_LEET = {"o": "0", "i": "1", "l": "1", "e": "3", "a": "4", "s": "5", "t": "7", "b": "8", "g": "9", "z": "2"}


def _letter(c: str) -> str:
    return f"[{c}{_LEET[c]}]" if c in _LEET else re.escape(c)


def _term_pattern(term: str, reverse: bool = False) -> str:
    """Letters of the folded term joined by gaps: any punctuation or `_` between any two of them, and
    up to 3 characters of any separator, spaces included, where the term itself has one ("acme labs")."""
    units: list[tuple[str, bool]] = []  # (letter, a separator before it)
    gap = False
    for c in fold(term)[0]:
        if not c.isalnum():
            gap = True
            continue
        units.append((c, gap and bool(units)))
        gap = False
    pieces = []
    for i, (c, gap_before) in enumerate(units):
        if i:
            pieces.append(_WORD_GAP if gap_before else _TIGHT_GAP)
        pieces.append(_letter(c))
    return "".join(reversed(pieces) if reverse else pieces)


_NOT_LETTER = re.compile(r"[\W_]+")
_MEMO_CHARS = 8 << 20  # text remembered per denylist, in characters
_SKELETON = str.maketrans("013457892l", "oieastbgzi")
# Text under a right-to-left override displays reversed: `\u202eecila` reads "alice".
_BIDI_CONTROLS = ("\u202e", "\u202b", "\u2067", "\u200f", "\u061c")


class Denylist:
    """The private terms, matched in any case and as any substring of folded text (see `fold`):
    split by punctuation, markup, zero-width or combining characters, look-alike or full-width
    letters, digits for letters (a1ice), HTML/URL/backslash escapes, letter-spaced, reversed under a
    right-to-left override, or whole in a base64, base32 or hex token. Not seen: a term split by
    spaces into words ("ali ce" is two words of prose), or assembled by code at run time."""

    def __init__(self, terms: Iterable[str]):
        self.terms = tuple(terms)
        by_letters = {_letters(t): t for t in sorted(set(self.terms))}
        by_letters.pop("", None)
        self.letters = tuple(sorted(by_letters, key=len, reverse=True))
        alternatives, reversed_ = [], []
        for t in self.letters:  # one group per alternative: m.lastindex names the term
            alternatives.append(f"({_term_pattern(by_letters[t])})")
            reversed_.append(f"({_term_pattern(by_letters[t], reverse=True)})")
            if len(t) >= 3:
                alternatives.append(r"((?<![^\W_])" + _SPACED_GAP.join(map(_letter, t)) + r"(?![^\W_]))")
        self._pattern = re.compile("|".join(alternatives)) if alternatives else None
        self._reversed = re.compile("|".join(reversed_)) if reversed_ else None
        # A necessary condition checked at C speed first: the term's letters, in one spelling of
        # each digit, in the text with every non-letter removed (most texts hold no term at all).
        self._skeletons = tuple({t.translate(_SKELETON) for t in self.letters})
        self._token_verdicts: dict[str, bool] = {}
        self._seen: dict[str, list[tuple[int, int]]] = {}
        self._seen_chars = 0
        self._group_letters = [t for t in self.letters for _ in range(2 if len(t) >= 3 else 1)]
        self._shortest = min(map(len, self.letters), default=0)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _plausible(self, m: re.Match[str], letters_of: Sequence[str]) -> bool:
        """At most half of a term's letters written as digits: "0115" is a number, not "oils"."""
        assert m.lastindex is not None  # every alternative is a group
        letters = letters_of[m.lastindex - 1]
        digits = sum(c.isdigit() for c in m.group(0)) - sum(c.isdigit() for c in letters)
        return 2 * digits <= len(letters)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) in `text` of every denied term, left to right, overlaps merged."""
        if self._pattern is None or not text:
            return []
        found = self._seen.get(text)
        if found is None:  # the scrubber asks again about what it wrote, and the leak check once more
            found = self._find(text)
            if self._seen_chars < _MEMO_CHARS:
                self._seen[text] = found
                self._seen_chars += len(text)
        return list(found)

    def _find(self, text: str) -> list[tuple[int, int]]:
        assert self._pattern is not None and self._reversed is not None  # spans() asks only with terms
        folded, starts, ends = fold(text)
        skeleton = _NOT_LETTER.sub("", folded).translate(_SKELETON)
        matches = []
        if any(t in skeleton for t in self._skeletons):
            matches = [m for m in self._pattern.finditer(folded) if self._plausible(m, self._group_letters)]
        if any(c in text for c in _BIDI_CONTROLS):
            matches += [m for m in self._reversed.finditer(folded) if self._plausible(m, self.letters)]
        found = [
            m.span() if starts is None or ends is None else (starts[m.start()], ends[m.end() - 1]) for m in matches
        ]
        found += self._encoded_spans(text)
        merged: list[tuple[int, int]] = []
        for a, b in sorted(found):
            if merged and a < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        return merged

    def _encoded_spans(self, text: str) -> Iterator[tuple[int, int]]:
        need = self._shortest * 4 // 3
        for m in _ENCODED_TOKEN.finditer(text):
            token = m.group(0)
            if len(token) < need:
                continue
            verdict = self._token_verdicts.get(token)
            if verdict is None:  # tokens recur (code lines in many diffs): decode each once
                verdict = _may_encode(token) and any(self.spans(decoded) for decoded in _decodings(token))
                if len(self._token_verdicts) < 100_000:
                    self._token_verdicts[token] = verdict
            if verdict:
                yield m.span()

    def label(self, spelling: str) -> str:
        """How a report names a denied spelling without repeating it: `term #k`, k its place in the list."""
        for k, term in enumerate(self.terms, 1):
            if compile_denylist((term,)).spans(_BIDI_CONTROLS[0] + spelling):  # a reversed spelling too
                return f"term #{k}"
        return "a term"

    def finditer(self, text: str) -> Iterator[DeniedMatch]:
        for a, b in self.spans(text):
            yield DeniedMatch(text, a, b)

    def contains(self, text: str) -> bool:
        return bool(self.spans(text))


@dataclass(frozen=True)
class DeniedMatch:
    """A denied term's place in the original text, shaped like the part of re.Match the gates use."""

    string: str
    begin: int
    finish: int

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.finish

    def group(self, _index: int = 0) -> str:
        return self.string[self.begin : self.finish]


def _may_encode(token: str) -> bool:
    """Base64 of text mixes cases, base32 is upper case and digits, hex is hex: a lower-case word or
    snake_case name is none of them and is not decoded."""
    body = token.rstrip("=")
    return (not body.islower() and not body.isupper()) or body.isupper() or all(c in _HEX for c in body)


def _decodings(token: str) -> Iterator[str]:
    """What a token spells in base64 (standard or URL-safe), base32 or hex, when it decodes to text."""
    body = token.rstrip("=")
    attempts = []
    if len(body) % 4 != 1:
        pad = body + "=" * (-len(body) % 4)
        attempts += [lambda: base64.b64decode(pad, validate=True), lambda: base64.urlsafe_b64decode(pad)]
    if body.isupper() or body.isdigit():
        attempts.append(lambda: base64.b32decode(body + "=" * (-len(body) % 8)))
    if len(body) % 2 == 0 and all(c in _HEX for c in body):
        attempts.append(lambda: bytes.fromhex(body))
    for attempt in attempts:
        try:
            raw = attempt()
        except (ValueError, binascii.Error):
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            continue


@lru_cache(maxsize=32)
def compile_denylist(terms: tuple[str, ...]) -> Denylist:
    return Denylist(terms)


def denylist_pattern(terms: tuple[str, ...]) -> Denylist | None:
    """The gates' denylist (finditer() like a compiled pattern, but over folded text); None when empty."""
    found = compile_denylist(tuple(terms))
    return found if found else None


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
PYTHON_DSLS = ("triton", "gluon", "cutedsl", "flydsl", "aiter", "helion")


def code_language(dsl: object) -> str:
    if dsl == "cuda":
        return "c"
    return "python" if dsl in PYTHON_DSLS else "any"


def prose_spans(code: str, language: str) -> list[tuple[int, int]]:
    """(start, end) of every comment and string literal in `code`."""
    return [m.span() for m in PROSE_IN_CODE[language].finditer(code)]
