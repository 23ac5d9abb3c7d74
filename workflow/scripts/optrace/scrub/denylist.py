"""The private terms, matched in any spelling `folding.fold` sees and whole in encoded tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from optrace.scrub.encoded import ENCODED_TOKEN, decodings, may_encode
from optrace.scrub.folding import fold

# Between the letters of a term: any punctuation or `_` (ali-ce, a.l.i.c.e, ali_ce), a hyphen
# breaking the line (ali-\nce), string literals glued by the compiler ("ali" "ce", 'ali' + 'ce');
# letter-spaced ("a l i c e") only when every letter stands alone. A gap holds no letter or digit,
# so it may be possessive (`*+`, atomic runs): the pattern never backtracks into one, whatever
# runs of quotes, hyphens or spaces the text holds.
_TIGHT_GAP = r"(?:[\"'](?>[ \t\r\n]*)(?:\+(?>[ \t\r\n]*))?[\"']|-(?>[ \t]*)\r?\n(?>[ \t]*)|[^\w\s]|_)*+"
_SPACED_GAP = r"(?:[^\w\n]|_){1,3}+"
_WORD_GAP = r"(?:[^\w\n]|_){0,3}+"


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
        for m in ENCODED_TOKEN.finditer(text):
            token = m.group(0)
            if len(token) < need:
                continue
            verdict = self._token_verdicts.get(token)
            if verdict is None:  # tokens recur (code lines in many diffs): decode each once
                verdict = may_encode(token) and any(self.spans(decoded) for decoded in decodings(token))
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


@lru_cache(maxsize=32)
def compile_denylist(terms: tuple[str, ...]) -> Denylist:
    return Denylist(terms)


def denylist_pattern(terms: tuple[str, ...]) -> Denylist | None:
    """The gates' denylist (finditer() like a compiled pattern, but over folded text); None when empty."""
    found = compile_denylist(tuple(terms))
    return found if found else None
