"""A trace's version references (v12, V7, version 5, ver. 3) as words that are true relative to the step.

A version id means nothing outside its trace, so it goes; what replaces it says how it relates to the
step the text belongs to (`Step`): "this step", "the version it builds on", "an earlier step", "a later
step", and "the baseline" for v0 (every trace's reference wrapper). Without a step only what holds
anyway is said: "the baseline", "a step", "several steps". Used as a modifier ("the v3 kernel", "the V0
PyTorch wrapper") the phrase is possessive ("an earlier step's kernel", "the baseline's PyTorch
wrapper"). Runs of ids joined by list words are one phrase. In prose, "v12: " opening a line is a
commit-subject prefix and goes; code keeps its words (`# v11: ...` becomes `# this step: ...`). An
id glued into an identifier (kernel_v7, v7_fast) loses only its number: `kernel_vN` still reads as
the identifier it was. version_ids already spares vector widths and V100.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from optrace.scrub.finders import HARDWARE_NAMES, version_ids

_LINE_PREFIX = re.compile(r"^[ \t]*([vV]\d+(?:_(?:rerun|baseline|base)\d*)?):[ \t]*", re.M)
_LIST_GAP = re.compile(
    r"[ \t]*(?:,|/|&|\+|->|-|–|—|\.\.|to\b|and\b|or\b|vs\.?|through\b)?"
    r"[ \t]*(?:(?:and|or)\b[ \t]*)?"
)
_LIST_GAP_MAX = 24  # longer gaps are prose, and a fullmatch over a huge gap would backtrack
GLUED_VERSION = "vN"
_WORDS = {
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
        ]
    )
} | {"twenty": 20}
_NUMBERS = re.compile(r"\d+|[a-z]+", re.I)
# a modifier stands between a determiner and a noun: "the v3 kernel", "a V0 PyTorch wrapper"
_DETERMINER_BEFORE = re.compile(r"\b(?:a|an|the|this|that|its|their|our)[ \t]+\Z", re.I)
_WORD_AFTER = re.compile(r"[ \t]+([A-Za-z][\w-]*)")
_NOT_NOUNS = frozenset(
    [
        "and",
        "or",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "was",
        "is",
        "are",
        "were",
        "be",
        "been",
        "has",
        "had",
        "have",
        "did",
        "does",
        "do",
        "than",
        "then",
        "as",
        "it",
        "its",
        "that",
        "this",
        "which",
        "who",
        "when",
        "where",
        "while",
        "so",
        "but",
        "not",
        "no",
        "nor",
        "vs",
        "via",
        "into",
        "onto",
        "over",
        "under",
    ]
)


@dataclass(frozen=True)
class Step:
    """The step a text belongs to: its version number, and the version it builds on (a claim's anchor)."""

    n: int
    builds_on: int | None = None


# kind -> (noun, modifier, plural, plural modifier)
PHRASES = {
    "baseline": ("the baseline", "the baseline's", "the baseline", "the baseline's"),
    "this": ("this step", "this step's", "this step", "this step's"),
    "parent": ("the version it builds on", "the parent version's", "the version it builds on", "the parent version's"),
    "earlier": ("an earlier step", "an earlier step's", "earlier steps", "earlier steps'"),
    "later": ("a later step", "a later step's", "later steps", "later steps'"),
    "unknown": ("a step", "a step's", "several steps", "several steps'"),
    "re-measurement": ("a re-measurement", "a re-measurement's", "re-measurements", "re-measurements'"),
}
ALL_PHRASES = frozenset(p for forms in PHRASES.values() for p in forms)


def number_of(token: str) -> int | None:
    """The version an id names: `v12` -> 12."""
    m = re.match(r"[vV](\d+)", token)
    return int(m.group(1)) if m else None


def numbers_of(token: str) -> list[int]:
    """Every version a spelled-out list names: `versions 3 and 5` -> [3, 5]."""
    out = []
    for m in _NUMBERS.finditer(re.sub(r"^(?i:versions?|ver\.)", "", token)):
        word = m.group(0).lower()
        if word.isdigit():
            out.append(int(word))
        elif word in _WORDS:
            out.append(_WORDS[word])
    return out


def kind(n: int | None, step: Step | None) -> str:
    if n == 0:
        return "baseline"
    if n is None or step is None:
        return "unknown"
    if n == step.n:
        return "this"
    if n == step.builds_on:
        return "parent"
    return "earlier" if n < step.n else "later"


def phrase_for(kinds: list[str], modifier: bool) -> str:
    """One phrase for the kinds of a run of references, in order of first appearance."""
    groups: dict[str, int] = {}
    for k in kinds:
        groups[k] = groups.get(k, 0) + 1
    if len(groups) > 2:
        groups = {"unknown": 2}  # "several steps": true of any run, where three kinds would not read
    parts = [PHRASES[k][(2 if count > 1 else 0) + (1 if modifier else 0)] for k, count in groups.items()]
    if len(parts) == 2 and modifier:  # one possessive for the pair: "this step's and an earlier step's"
        parts[0] = PHRASES[next(iter(groups))][2 if next(iter(groups.values())) > 1 else 0]
    return " and ".join(parts)


def _is_modifier(text: str, start: int, end: int) -> bool:
    after = _WORD_AFTER.match(text, end)
    return bool(
        after and after.group(1).lower() not in _NOT_NOUNS and _DETERMINER_BEFORE.search(text, max(0, start - 8), start)
    )


def version_spans(text: str, step: Step | None = None, *, drop_prefix: bool = True) -> Iterator[tuple[int, int, str]]:
    """(start, end, phrase) of every version reference in `text`, the phrase true relative to `step`."""
    prefixes = set()
    if drop_prefix:
        for m in _LINE_PREFIX.finditer(text):
            if m.group(1) not in HARDWARE_NAMES:
                prefixes.add(m.start(1))
                yield m.start(1), m.end(), ""
    found = []
    for start, token in version_ids(text):
        end = start + len(token)
        if start in prefixes:
            continue
        if text[start - 1 : start] == "_" or text[end : end + 1] == "_":
            yield start, end, GLUED_VERSION
        else:
            found.append((start, end, token))
    i = 0
    while i < len(found):
        j = i
        while (
            j + 1 < len(found)
            and found[j + 1][0] - found[j][1] <= _LIST_GAP_MAX
            and _LIST_GAP.fullmatch(text, found[j][1], found[j + 1][0])
        ):
            j += 1
        kinds = []
        for _, _, token in found[i : j + 1]:
            if "_re" in token or "_base" in token:
                kinds.append("re-measurement")
            elif token.lower().startswith("version") or token.lower().startswith("ver."):
                kinds += [kind(n, step) for n in numbers_of(token)] or ["unknown"]
            else:
                kinds.append(kind(number_of(token), step))
        yield found[i][0], found[j][1], phrase_for(kinds, _is_modifier(text, found[i][0], found[j][1]))
        i = j + 1
