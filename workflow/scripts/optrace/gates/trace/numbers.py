"""Reading numbers out of text the way a reader would, whatever form they are written in.

    number_tokens(text) -> [(token, is_percentage)]   every number the text states
    magnitude(token)    -> Decimal | None              its absolute value (None: not a finite number)

The same reader runs over a record and over its packet, so over-reading is safe: a number an honest
record copied from its packet is read identically on both sides, and only a number the packet never
states is left over. What counts as a number:

- every maximal run of digits, with an optional fraction and exponent (`18.54`, `.5`, `1e-5`), whatever
  precedes it: a letter (`x37.91`, `speedup37.91%`, `sm_90`, `fp16`), a hyphen (`up-to-37.91%`,
  `sub-9`), dots (`..37.91`), CJK text (`提升37.91%`). A version string `1.2.3` reads as 1.2 and 3;
- any Unicode digit (full-width `３７`), and every character with a numeric value: vulgar fractions
  (`¾` = 0.75), superscripts, circled and Roman numerals, CJK numerals (each read as its own value);
- cardinal number words: "thirty-eight" = 38, "two hundred" = 200, "half" = 0.5, "twice" = 2;
- a token followed by `%`, "percent" or "per cent" is a percentage.

What a reader cannot see is not allowed to split or disguise a number (normalize): format characters
(zero-width space/joiner, soft hyphen, bidi marks) and combining marks are dropped, a digit-group space
(no-break, thin, narrow no-break, figure space) between digits joins them (`4 096` = 4096), and a letter
that looks like a digit (Latin/Cyrillic/Greek O, l, I, З, б) in a run of digits reads as that digit
(`1О%` = 10%, `x1O` = x10); a Latin one only after a digit (`l2`, `-O3` stay words). The same normalization runs on both sides.

unit_tokens(text) -> [(token, unit)] the numbers written with a unit a claim depends on: `%` (a
percentage), `x` (a factor: `4x`, `4×`, `4 times`, and the words twice/double(d)/triple(d) = 2, 3,
halve(d)/halving = 2, "an order of magnitude" = 10) and a time unit (`ns`, `us`/`µs`, `ms`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache

# a fraction only after digits, so `1.2.3` gives 1.2 then 3 and `..5` gives .5
# (?<!\d)(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)? written to start with its first character, a digit
# or a dot, and test what precedes it after: the engine then skips the text between numbers at C speed
DIGITS = re.compile(r"[\d.](?:(?<=\d)(?<!\d\d)\d*(?:\.\d+)?|(?<=\.)(?<!\d\.)\d+)(?:[eE][-+]?\d+)?")
PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per\s*cent\b|pct\b)", re.I)
UNITS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
TENS = {
    w: 10 * i for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2)
}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
SINGLE: dict[str, Decimal | int] = {
    "half": Decimal("0.5"),
    "quarter": Decimal("0.25"),
    "twice": 2,
    "double": 2,
    "triple": 3,
    "dozen": 12,
}
_WORD_ALT = "|".join(sorted([*UNITS, *TENS, *SCALES], key=len, reverse=True))
NUMBER_WORDS = re.compile(
    rf"\b(?:{_WORD_ALT})(?:(?:[\s-]+(?:and[\s-]+)?)(?:{_WORD_ALT}))*\b"
    rf"|\b(?:{'|'.join(SINGLE)})\b",
    re.I,
)
MAX_EXPONENT = 40  # |exponent| beyond this is no measurement: compared for equality only


def _word_starts(words: Sequence[str]) -> tuple[str, ...]:
    """The words none of the others is a prefix of: every match of a word pattern begins with one."""
    return tuple(sorted(w for w in words if not any(o != w and w.startswith(o) for o in words)))


def word_matches(pattern: re.Pattern, starts: tuple[str, ...], text: str) -> list[re.Match]:
    """pattern.finditer(text) for a case-insensitive pattern whose every match starts, at a word
    boundary, with one of `starts`. On ASCII text (lower() keeps every offset) only the offsets where a
    start begins a word are tried: the same matches, without running the pattern at every character
    (the cost of a kernel's code in every packet)."""
    if not text.isascii():
        return list(pattern.finditer(text))
    lower, found = text.lower(), set()
    for start in starts:
        at = lower.find(start)
        while at >= 0:
            if at == 0 or not (lower[at - 1].isalnum() or lower[at - 1] == "_"):
                found.add(at)
            at = lower.find(start, at + 1)
    out, end = [], 0
    for at in sorted(found):
        if at >= end and (m := pattern.match(text, at)) is not None:
            out.append(m)
            end = m.end()
    return out


NUMBER_WORD_STARTS = _word_starts([*UNITS, *TENS, *SCALES, *SINGLE])


def words_value(phrase: str) -> Decimal:
    words = re.findall(r"[a-z]+", phrase.lower())
    if len(words) == 1 and words[0] in SINGLE:
        return Decimal(SINGLE[words[0]])
    total = current = 0
    for w in words:
        if w in UNITS:
            current += UNITS[w]
        elif w in TENS:
            current += TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w in SCALES:
            total += max(current, 1) * SCALES[w]
            current = 0
    return Decimal(total + current)


def _numeric_char(ch: str) -> str:
    digit = unicodedata.decimal(ch, None)
    if digit is not None:
        return str(digit)
    value = unicodedata.numeric(ch, None)
    if value is None:
        return ch
    return f" {Decimal(repr(value)).normalize():f} "


# letters a reader takes for digits when they sit in a run of digits
DIGIT_LOOKALIKES = {
    "O": "0",
    "o": "0",
    "\u041e": "0",
    "\u043e": "0",
    "\u039f": "0",
    "\u03bf": "0",
    "l": "1",
    "I": "1",
    "\u0406": "1",
    "\u0456": "1",
    "\u04c0": "1",
    "\u0417": "3",
    "\u0437": "3",
    "\u0431": "6",
}
_LOOKALIKE = "".join(DIGIT_LOOKALIKES)
# maximal runs of digits, dots and look-alikes that hold both a digit and a look-alike (the only runs
# _as_digits changes, so the many runs of code that stay as written cost no call): tried only where a
# run starts, each part possessive, so one linear scan (no backtracking into a run of digits or dots)
LOOKALIKE_RUN = re.compile(
    rf"(?<![\d.{_LOOKALIKE}])(?:\.*+[{_LOOKALIKE}][.{_LOOKALIKE}]*+\d|\.*+\d[\d.]*+[{_LOOKALIKE}])"
    rf"[\d.{_LOOKALIKE}]*+"
)
_AS_DIGITS = str.maketrans(DIGIT_LOOKALIKES)
LOOKALIKE_NEXT_TO_DIGIT = re.compile(rf"\d[{_LOOKALIKE}]|[{_LOOKALIKE}]\d")
# bidirectional controls reorder what a reader sees (`\u202e14.22` shows as 22.41): no record needs one
BIDI_CONTROL = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
GROUP_SPACE = re.compile(r"(?<=\d)[\u00a0\u2007\u2008\u2009\u202f](?=\d)")


def _visible(text: str) -> str:
    """Drop what renders as nothing (format characters, combining marks); join digit groups."""
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Mn", "Me"))
    return GROUP_SPACE.sub("", text)


@lru_cache(maxsize=1 << 15)  # the number reader, the unit reader and the layout gate read the same texts
def normalize(text: str) -> str:
    """ASCII digits for every numeric character, then NFKC (full-width letters, ligatures); invisible
    characters dropped and digit look-alikes inside runs of digits read as digits."""
    if not text.isascii():
        text = unicodedata.normalize(
            "NFKC", "".join(ch if ch.isascii() else _numeric_char(ch) for ch in _visible(text))
        )
    if LOOKALIKE_NEXT_TO_DIGIT.search(text):
        text = LOOKALIKE_RUN.sub(_as_digits, text)
    return text


def _as_digits(m: re.Match) -> str:
    """A run holding a digit and a look-alike, read as digits: `1O%`, `x1O`, `4О.5`, `О7`. An ASCII
    look-alike only after the run's first digit, so `l2` (the cache), `-O3` and `I8` stay words."""
    run = m.group(0)
    if not any(c.isdigit() for c in run):
        return run
    lead = len(run) - len(run.lstrip(_LOOKALIKE + "."))
    head = run[:lead]
    return run.translate(_AS_DIGITS) if not head.isascii() else head + run[lead:].translate(_AS_DIGITS)


@lru_cache(maxsize=1 << 15)
def number_tokens(text: str) -> tuple[tuple[str, bool], ...]:
    text = normalize(text)
    out = [(m.group(0), PERCENT_AFTER.match(text, m.end()) is not None) for m in DIGITS.finditer(text)]
    for m in word_matches(NUMBER_WORDS, NUMBER_WORD_STARTS, text):
        out.append((format(words_value(m.group(0)), "f"), PERCENT_AFTER.match(text, m.end()) is not None))
    return tuple(out)


UNIT_AFTER = re.compile(
    r"\s*(?:(?P<pct>%|percent\b|per\s*cent\b|pct\b)|(?P<x>[x\u00d7](?![0-9a-z])|times\b)"
    r"|(?P<t>ns|us|\u00b5s|\u03bcs|usec|ms|msec)\b)",
    re.I,
)
FACTOR_WORDS = re.compile(
    r"\b(?:(?P<two>twice|doubl(?:e|ed|es|ing)|halv(?:e|ed|es|ing)|half\s+the)"
    r"|(?P<three>tripl(?:e|ed|es|ing)|thrice)|(?P<ten>orders?\s+of\s+magnitude))\b",
    re.I,
)
FACTOR_WORD_STARTS = _word_starts(("twice", "doubl", "halv", "half", "tripl", "thrice", "order"))
DIGITS_WITH_UNIT = re.compile(rf"(?P<n>{DIGITS.pattern}){UNIT_AFTER.pattern}", re.I)
TIME_UNITS = {"ns": "ns", "us": "us", "\u00b5s": "us", "\u03bcs": "us", "usec": "us", "ms": "ms", "msec": "ms"}


@lru_cache(maxsize=1 << 15)
def unit_tokens(text: str) -> tuple[tuple[str, str], ...]:
    """(number token, unit) for every number written as a percentage (`%`), a factor (`x`) or a time
    (`ns`, `us`, `ms`); see the module doc."""
    text = normalize(text)
    out = []
    for m in DIGITS_WITH_UNIT.finditer(text):  # one scan: only digits a unit follows
        unit = "%" if m.group("pct") else "x" if m.group("x") else TIME_UNITS[m.group("t").lower()]
        out.append((m.group("n"), unit))
    for m in word_matches(NUMBER_WORDS, NUMBER_WORD_STARTS, text):
        u = UNIT_AFTER.match(text, m.end())
        if u and (u.group("pct") or u.group("x")):
            out.append((format(words_value(m.group(0)), "f"), "%" if u.group("pct") else "x"))
    for m in word_matches(FACTOR_WORDS, FACTOR_WORD_STARTS, text):
        out.append(("2" if m.group("two") else "3" if m.group("three") else "10", "x"))
    return tuple(out)


@lru_cache(maxsize=1 << 16)  # a trace's packets repeat the same constants and measurements
def magnitude(token: str) -> Decimal | None:
    try:
        value = abs(Decimal(token))
    except (InvalidOperation, ValueError, ArithmeticError):
        return None
    return value if value.is_finite() else None


def decimals(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int), value  # the values read here are finite (number_value)
    return max(0, -exponent)


def comparable(value: Decimal) -> bool:
    """Small enough an exponent to round and quantize without overflowing the decimal context."""
    return abs(value.adjusted()) <= MAX_EXPONENT and decimals(value) <= MAX_EXPONENT
