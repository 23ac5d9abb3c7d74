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
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache

# a fraction only after digits, so `1.2.3` gives 1.2 then 3 and `..5` gives .5
DIGITS = re.compile(r"(?<!\d)(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per\s*cent\b|pct\b)", re.I)
UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9}
SINGLE = {"half": Decimal("0.5"), "quarter": Decimal("0.25"), "twice": 2, "double": 2, "triple": 3, "dozen": 12}
_WORD_ALT = "|".join(sorted([*UNITS, *TENS, *SCALES], key=len, reverse=True))
NUMBER_WORDS = re.compile(rf"\b(?:{_WORD_ALT})(?:(?:[\s-]+(?:and[\s-]+)?)(?:{_WORD_ALT}))*\b"
                          rf"|\b(?:{'|'.join(SINGLE)})\b", re.I)
MAX_EXPONENT = 40  # |exponent| beyond this is no measurement: compared for equality only


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


def normalize(text: str) -> str:
    """ASCII digits for every numeric character, then NFKC (full-width letters, ligatures)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", "".join(ch if ch.isascii() else _numeric_char(ch) for ch in text))


@lru_cache(maxsize=1 << 15)
def number_tokens(text: str) -> tuple[tuple[str, bool], ...]:
    text = normalize(text)
    out = [(m.group(0), PERCENT_AFTER.match(text, m.end()) is not None) for m in DIGITS.finditer(text)]
    for m in NUMBER_WORDS.finditer(text):
        out.append((format(words_value(m.group(0)), "f"), PERCENT_AFTER.match(text, m.end()) is not None))
    return tuple(out)


@lru_cache(maxsize=1 << 16)  # a trace's packets repeat the same constants and measurements
def magnitude(token: str) -> Decimal | None:
    try:
        value = abs(Decimal(token))
    except (InvalidOperation, ValueError, ArithmeticError):
        return None
    return value if value.is_finite() else None


def decimals(value: Decimal) -> int:
    return max(0, -value.as_tuple().exponent)


def comparable(value: Decimal) -> bool:
    """Small enough an exponent to round and quantize without overflowing the decimal context."""
    return abs(value.adjusted()) <= MAX_EXPONENT and decimals(value) <= MAX_EXPONENT
