"""Text as a denylist or a shape rule reads it: escapes decoded, invisible characters dropped, look-alike
letters folded to Latin (`fold`, casefolded; `compat`, case kept), with offsets back into the text."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

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


@lru_cache(maxsize=4096)
def _fold_char(c: str) -> str:
    if "\U0001f1e6" <= c <= "\U0001f1ff":  # regional indicator letters render as A-Z
        return chr(ord(c) - 0x1F1E6 + ord("a"))
    if ord(c) in CONFUSABLES:  # before NFKD, which turns some look-alikes into others (ϲ -> ς)
        return c.translate(CONFUSABLES)
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
    s = c.translate(CONFUSABLES) if ord(c) in CONFUSABLES else unicodedata.normalize("NFKC", c).translate(CONFUSABLES)
    return s if s.isascii() else c  # only what becomes ASCII can complete a path, address or hash


def compat(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """`text` as the shape rules read it: escapes decoded, NFKC where it gives ASCII (full-width
    `／home／` is `/home/`), invisible characters dropped, look-alike letters folded, case kept;
    offsets as `fold` gives them, None twice when the view is the text itself."""
    view, starts, ends = _view(text, _compat_char, str)
    return (text, None, None) if view == text else (view, starts, ends)


def _holds_escape(text: str) -> bool:
    """_ENCODED_UNIT finds a unit in an ASCII text: every unit it can find there starts at a `&`, `%`, `\\`
    or `<`, so only those places are tried, not every place of the text."""
    for mark in "&%\\<":
        at = text.find(mark)
        while at != -1:
            if _ENCODED_UNIT.match(text, at):
                return True
            at = text.find(mark, at + 1)
    return False


def _view(
    text: str, char: Callable[[str], str], case: Callable[[str], str], _depth: int = 0
) -> tuple[str, list[int] | None, list[int] | None]:
    if text.isascii() and (
        ("&" not in text and "%" not in text and "\\" not in text and "<" not in text) or not _holds_escape(text)
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
