"""A trace's version references (v12, V7, version 5, ver. 3) as words that are true relative to the step.

A version id means nothing outside its trace, so it goes; what replaces it says how it relates to the
step the text belongs to (`Step`): "this step", "the version it builds on", "an earlier step", "a later
step", and "the baseline" for v0 (every trace's reference wrapper). Without a step only what holds
anyway is said: "the baseline", "a step", "several steps", "a step to a later one". Used as a
modifier ("the v3 kernel", "the V0 PyTorch wrapper") the phrase is possessive ("an earlier step's
kernel", "the baseline's PyTorch wrapper"). Runs of ids joined by list words are one phrase; a range
("v3 to v7") names its two ends. In prose, "v12: " opening a line is a commit-subject prefix and goes
when it is the step's own (or no step is known); another version's prefix is named like any
reference, so a history line never reads as this step's. Code keeps its words (`# v11: ...` becomes
`# this step: ...`). An id glued into an identifier (kernel_v7, v7_fast) loses only its number:
`kernel_vN` still reads as the identifier it was. version_ids already spares vector widths, V100 and
tools' versions (Triton v3).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from optrace.scrub.finders import HARDWARE_NAMES, NUMBER_WORDS, version_ids

_LINE_PREFIX = re.compile(r"^[ \t]*([vV]\d+(?:_(?:rerun|baseline|base)\d*)?):[ \t]*", re.M)
_RANGE_WORDS = r"->|-|–|—|\.\.|to\b|through\b|thru\b"
_LIST_GAP = re.compile(
    rf"[ \t]*(?:,|/|&|\+|{_RANGE_WORDS}|and\b|or\b|vs\.?)?"
    r"[ \t]*(?:(?:and|or)\b[ \t]*)?"
)
_COMMA_GAP = re.compile(r"[ \t]*,[ \t]*")
_RANGE_GAP = re.compile(rf"[ \t]*(?:{_RANGE_WORDS})[ \t]*")
_SPELLED_RANGE = re.compile(r"\w[ \t]*(?:-|–|to\b)[ \t]*#?\w", re.I)
_LIST_GAP_MAX = 24  # longer gaps are prose, and a fullmatch over a huge gap would backtrack
GLUED_VERSION = "vN"
_NUMBERS = re.compile(r"\d+|[a-z]+", re.I)
# A modifier stands before a noun: "the v3 kernel", "a V0 PyTorch wrapper", "v3 profile". After a
# determiner any word but these is taken for a noun; without one, only a noun of this list or a name.
_DETERMINER_BEFORE = re.compile(r"\b(?:a|an|the|this|that|these|those|its|their|our|his|her|my|your)[ \t]+\Z", re.I)
_WORD_AFTER = re.compile(r"[ \t]+([A-Za-z][\w-]*)")
_NOT_NOUNS = frozenset(
    """and or to of in on at by for from with was is are were be been has had have did does do than then as it
    its that this which who when where while so but not no nor vs via into onto over under also still only
    alone again already""".split()  # noqa: SIM905 (a word list reads better as words)
)
_NOUNS = frozenset(
    """kernel profile capture wrapper config configuration tile tiling diff code source run result number
    latency latencies timing measurement approach change design layout schedule grid launch path variant
    attempt idea implementation report commit record plan version build loop epilogue prologue
    pipeline""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Step:
    """The step a text belongs to: its version number, and the version it builds on (a claim's anchor)."""

    n: int
    builds_on: int | None = None


# kind -> (noun, possessive, plural, plural possessive)
PHRASES = {
    "baseline": ("the baseline", "the baseline's", "the baseline", "the baseline's"),
    "this": ("this step", "this step's", "this step", "this step's"),
    "parent": ("the version it builds on", "the parent version's", "the version it builds on", "the parent version's"),
    "earlier": ("an earlier step", "an earlier step's", "earlier steps", "earlier steps'"),
    "later": ("a later step", "a later step's", "later steps", "later steps'"),
    "unknown": ("a step", "a step's", "several steps", "several steps'"),
    "re-measurement": ("a re-measurement", "a re-measurement's", "re-measurements", "re-measurements'"),
}
ALL_PHRASES = frozenset(p for forms in PHRASES.values() for p in forms) | {"a later one"}
_JOINERS = re.compile(r" (?:and|to) ")
_ONE_OF_A_KIND = ("baseline", "this", "parent")  # a kind that names one version: never plural


def is_reference_phrase(phrase: str) -> bool:
    """Whether `phrase` is what a version reference became (one phrase, a pair or a range of them)."""
    return all(part in ALL_PHRASES or part + "'s" in ALL_PHRASES for part in _JOINERS.split(phrase))


def kind(n: int | None, step: Step | None) -> str:
    """How version `n` relates to `step`."""
    if n == 0:
        return "baseline"
    if n is None or step is None:
        return "unknown"
    if n == step.n:
        return "this"
    if n == step.builds_on:
        return "parent"
    return "earlier" if n < step.n else "later"


def numbers_of(token: str) -> list[int]:
    """Every version a reference names: `v12` -> [12], `versions 3 and five` -> [3, 5]."""
    out = []
    for m in _NUMBERS.finditer(re.sub(r"^(?i:versions?|ver\.|v)", "", token)):
        word = m.group(0).lower()
        if word.isdigit():
            out.append(int(word))
        elif word in NUMBER_WORDS:
            out.append(NUMBER_WORDS[word])
    return out


def _form(k: str, plural: bool, modifier: bool) -> str:
    return PHRASES[k][(2 if plural and k not in _ONE_OF_A_KIND else 0) + (1 if modifier else 0)]


def phrase_for(kinds: list[str], modifier: bool) -> str:
    """One phrase for the kinds of a list of references, in order of first appearance."""
    groups: dict[str, int] = {}
    for k in kinds:
        groups[k] = groups.get(k, 0) + 1
    if len(groups) > 2:
        return _form("unknown", True, modifier)  # "several steps": true of any list, where three kinds would not read
    items = list(groups.items())
    if len(items) == 1:
        return _form(items[0][0], items[0][1] > 1, modifier)
    # a pair possesses jointly: "this step and an earlier step's kernels"
    return f"{_form(items[0][0], items[0][1] > 1, False)} and {_form(items[1][0], items[1][1] > 1, modifier)}"


def range_phrase(ends: tuple[int | None, int | None], step: Step | None, modifier: bool) -> str:
    """A range ("v3 to v7") by its two ends: "an earlier step to this step"; two ends of one kind: "an
    earlier step to a later one" (later than the first, not than the step), "earlier steps'" as a modifier."""
    first, last = (kind(n, step) for n in ends)
    if first != last:
        return f"{_form(first, False, False)} to {_form(last, False, modifier)}"
    lo, hi = ends
    if modifier or first in _ONE_OF_A_KIND or lo is None or hi is None or lo >= hi:
        return _form(first, True, modifier)
    return f"{_form(first, False, False)} to a later one"


def _is_modifier(text: str, start: int, end: int) -> bool:
    after = _WORD_AFTER.match(text, end)
    if not after:
        return False
    word = after.group(1)
    low = word.lower()
    if low in _NOT_NOUNS:
        return False
    if low in _NOUNS or (low.endswith("s") and low[:-1] in _NOUNS):
        return True
    if _DETERMINER_BEFORE.search(text, max(0, start - 8), start):
        return not low.endswith("ed")  # "the v3 regressed" is a verb
    return word[0].isupper() and not word.isupper()  # "v3 PyTorch wrapper"; "v3 CUDA" may be a sentence


def _refs(text: str, step: Step | None, drop_prefix: bool) -> Iterator[tuple[int, int, str]]:
    """Subject prefixes to drop, glued ids, and (start, end, token) of every other reference."""
    prefixes = set()
    if drop_prefix:
        for m in _LINE_PREFIX.finditer(text):
            token = m.group(1)
            own = step is None or numbers_of(token)[:1] == [step.n]
            if token not in HARDWARE_NAMES and own:
                prefixes.add(m.start(1))
                yield m.start(1), m.end(), ""
    for start, token in version_ids(text):
        end = start + len(token)
        if start in prefixes:
            continue
        if text[start - 1 : start] == "_" or text[end : end + 1] == "_":
            yield start, end, GLUED_VERSION
        else:
            yield start, end, token


def _kinds(token: str, step: Step | None) -> list[str]:
    if "_re" in token or "_base" in token:
        return ["re-measurement"]
    return [kind(n, step) for n in numbers_of(token)] or ["unknown"]


def version_spans(text: str, step: Step | None = None, *, drop_prefix: bool = True) -> Iterator[tuple[int, int, str]]:
    """(start, end, phrase) of every version reference in `text`, the phrase true relative to `step`."""
    found = []
    for start, end, token in _refs(text, step, drop_prefix):
        if token in ("", GLUED_VERSION):
            yield start, end, token
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
        # ids joined by commas alone are no list ("with V0, v11 is faster"): each stands alone
        alone = j > i and _COMMA_GAP.fullmatch(text, found[j - 1][1], found[j][0])
        for run in [[f] for f in found[i : j + 1]] if alone else [found[i : j + 1]]:
            modifier = _is_modifier(text, run[0][0], run[-1][1])
            yield run[0][0], run[-1][1], _run_phrase(text, run, step, modifier)
        i = j + 1


def _run_phrase(text: str, run: list[tuple[int, int, str]], step: Step | None, modifier: bool) -> str:
    remeasured = any("_re" in t or "_base" in t for _, _, t in run)
    if not remeasured:
        if len(run) == 2 and _RANGE_GAP.fullmatch(text, run[0][1], run[1][0]):
            return range_phrase((_first(run[0][2]), _first(run[1][2])), step, modifier)
        token = run[0][2]
        if len(run) == 1 and _SPELLED_RANGE.search(token) and len(numbers_of(token)) == 2:
            lo, hi = numbers_of(token)
            return range_phrase((lo, hi), step, modifier)
    return phrase_for([k for _, _, t in run for k in _kinds(t, step)], modifier)


def _first(token: str) -> int | None:
    numbers = numbers_of(token)
    return numbers[0] if len(numbers) == 1 else None
