"""Replacing spans of a text in one pass: every rule finds spans in the original text; where two overlap the
wider wins (ties go to the earlier rule), and each phrase is joined to the words before it ("commit
abc1234" -> "a commit", not "commit a commit")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from optrace.scrub.versions import is_reference_phrase


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    phrase: str  # what replaces text[start:end]
    rank: int  # rule order: breaks ties between identical spans


Finder = Callable[[str], Iterator[tuple[int, int, str]]]


def spans_of(matches: Callable[[str], Iterator[tuple[int, str]]], phrase: str) -> Finder:
    """A finder of (start, token) matches as (start, end, phrase) spans."""
    return lambda text: ((start, start + len(token), phrase) for start, token in matches(text))


def resolve(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans, left to right: the wider span wins and absorbs any partial overlap."""
    chosen: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end, s.rank)):
        if chosen and s.start < chosen[-1].end:
            if s.end > chosen[-1].end:
                last = chosen[-1]
                chosen[-1] = Span(last.start, s.end, last.phrase, last.rank)
            continue
        chosen.append(s)
    return chosen


_ARTICLE_TAIL = re.compile(r"\b(?:a|an|the|this|that|these|those|its|their|our|his|her|my|your)[ \t]+\Z", re.I)
# "commit abc1234" -> "a commit", not "commit a commit"; likewise for versions, shapes and hashes.
_NOUN_TAIL = re.compile(r"\b(?:commit|sha|hash|version|step|iteration|uuid|shape|workload)s?[ \t]+\Z", re.I)
_KIND_PHRASES = frozenset(("a commit", "an identifier", "a shape"))
_DETERMINERS = ("a ", "an ", "the ", "this ", "that ")


def _kind_phrase(phrase: str) -> bool:
    return phrase in _KIND_PHRASES or phrase.startswith("shape-") or is_reference_phrase(phrase)


def _drops_article(phrase: str, article: str) -> bool:
    """Whether the determiner before a replaced span goes: "a v3 kernel" -> "an earlier step's kernel",
    "its v3 kernel" -> "an earlier step's kernel", never "a an earlier step" or "its an earlier step"."""
    word = article.strip().lower()
    if is_reference_phrase(phrase):
        # "the earlier steps' kernels" keeps its `the`; "the several steps'" would not read
        return not (word == "the" and phrase.startswith(("earlier", "later", "re-measurements")))
    return phrase.startswith(_DETERMINERS)


def _join(before: str, phrase: str) -> tuple[str, str]:
    """`before` without the words `phrase` makes redundant, and the phrase capitalised if they were."""
    if not phrase:
        return before, phrase
    cut = len(before)
    if _kind_phrase(phrase):
        noun = _NOUN_TAIL.search(before, max(0, cut - 16))
        cut = noun.start() if noun else cut
    article = _ARTICLE_TAIL.search(before, max(0, cut - 8), cut)
    if article and _drops_article(phrase, article.group(0)):
        cut = article.start()
    if before[cut : cut + 1].isupper():
        phrase = phrase[0].upper() + phrase[1:]
    return before[:cut], phrase


def apply(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for s in spans:
        before, phrase = _join(text[pos : s.start], s.phrase)
        out += [before, phrase]
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}")


def tidy(text: str) -> str:
    # line ends by split, not by a `[ \t]+$` search, which backtracks over every long run of spaces
    return "\n".join(line.rstrip(" \t") for line in _INNER_SPACES.sub(" ", text).split("\n")).strip()
