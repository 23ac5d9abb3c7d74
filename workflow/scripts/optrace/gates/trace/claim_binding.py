"""Rules binding a claim's words to the places its cited sentence gives them (gates.trace.claims runs them
beside gates.trace.claim_rules):

- traded words: two clauses of a claim that each carry a word the cited sentence it rewords puts only in
  the other's clause ("the register cap is not the limiter and occupancy cannot help" for "occupancy is
  not the limiter and the register cap cannot help"; blocked and interleaved traded): two subjects,
  objects or adjectives swapped, every word still the trace's;
- number sense: a gain or loss word beside a number agrees with that number ("gained 2.7%" where the
  measured change is -2.7%; "save 9%" quoting "slower by 9%").

Each is linear in the claim's and its closest cited sentences' clauses.
"""

from __future__ import annotations

import re
from functools import lru_cache

from optrace.gates.trace.numbers import normalize
from optrace.slots import kind_of
from optrace.wording import CLAUSE_BREAK, FUNCTION_WORDS, NEGATORS, read, sentences, stemmed

# clauses for the traded-words rule: the claims' clause breaks and "and" (one clause of "occupancy is not
# the limiter and the register cap cannot help" is two statements)
_PART = re.compile(CLAUSE_BREAK.pattern + r"|\band\b")


@lru_cache(maxsize=1 << 14)
def _parts(sentence: str) -> tuple[frozenset[str], ...]:
    """The words of each clause of a sentence that say something (speed and direction words too: "cannot
    help"), a clause of none left out."""
    out = []
    for p in _PART.split(sentence):
        ws = (
            frozenset(
                c
                for t in read(p).tokens
                if t.raw not in NEGATORS and not t.raw.isdigit()
                for c in t.canon
                if c not in FUNCTION_WORDS
            )
            if p
            else frozenset()
        )
        if ws:
            out.append(ws)
    return tuple(out)


def _only_in(theirs: tuple[frozenset[str], ...]) -> dict[str, int]:
    """word -> the one clause of the cited sentence that holds it (words of several clauses left out)."""
    seen: dict[str, int] = {}
    for j, t in enumerate(theirs):
        for w in t:
            seen[w] = -1 if w in seen else j
    return {w: j for w, j in seen.items() if j >= 0}


def _mixes(mine: tuple[frozenset[str], ...], only: dict[str, int]) -> tuple[str, str] | None:
    """Two claim clauses each mixing words of cited clause P with words of cited clause Q, the first
    holding a Q word the second lacks and the second a P word the first lacks."""
    mixed: dict[tuple[int, int], list[tuple[frozenset[str], frozenset[str]]]] = {}
    for part in mine:
        by: dict[int, set[str]] = {}
        for w in part:
            if w in only:
                by.setdefault(only[w], set()).add(w)
        for p in by:
            for q in by:
                if p < q:
                    mixed.setdefault((p, q), []).append((frozenset(by[p]), frozenset(by[q])))
    for pairs in mixed.values():
        for n, (p1, q1) in enumerate(pairs):
            for p2, q2 in pairs[n + 1 :]:
                if q1 - q2 and p2 - p1:
                    return sorted(q1 - q2)[0], sorted(p2 - p1)[0]
    return None


def _crossed(
    mine: tuple[frozenset[str], ...], theirs: tuple[frozenset[str], ...], only: dict[str, int]
) -> tuple[str, str] | None:
    """A claim clause rewording cited clause P (most words shared) holding a word only cited clause Q
    holds, and one rewording Q holding a word only P holds, neither in the other."""
    maps = [(part, i) for part in mine for i in _best(part, theirs)]
    for c1, p in maps:
        for c2, q in maps:
            if p == q or c1 is c2:
                continue
            x = sorted(w for w in c1 - c2 if only.get(w) == q)
            y = sorted(w for w in c2 - c1 if only.get(w) == p)
            if x and y:
                return x[0], y[0]
    return None


def _best(part: frozenset[str], theirs: tuple[frozenset[str], ...]) -> list[int]:
    """The cited clauses sharing the most words with a claim clause (one at least)."""
    scores = [len(part & t) for t in theirs]
    top = max(scores, default=0)
    return [i for i, s in enumerate(scores) if s == top] if top else []


def traded_words(says: str, closest: list[str]) -> list[str]:
    """Words of two clauses of the cited sentence a claim sentence rewords traded between two of its
    clauses: each of the two mixes words the sentence puts only in clause P with words it puts only in
    clause Q (_mixes), or each rewords one of P and Q holding the other's word (_crossed). A merge of P
    and Q into one clause, or clauses in another order, trades nothing. `closest`: the cited sentences
    the claim rewords."""
    for sentence in sentences(says) or [says]:
        mine = _parts(sentence)
        if len(mine) < 2:
            continue
        for cited in closest:
            theirs = _parts(cited)
            if len(theirs) < 2:
                continue
            only = _only_in(theirs)
            found = _mixes(mine, only) or _crossed(mine, theirs, only)
            if found:
                return [f"puts {found[0]!r} and {found[1]!r} in each other's clause of the sentence it rewords"]
    return []


GAIN = stemmed("faster quicker gain gains gained save saves saved speedup improve improves improved better win wins")
LOSS = stemmed("slower slowdown loss lose loses lost regression regressed regress worse costs cost hurt hurts")
_NUMBER = re.compile(r"(?<![\w.])([-+−]?)(\d+(?:\.\d+)?)(?![\w.]|\.\d)")


def _sense(text: str, start: int, end: int) -> str | None:
    """ "+" (a gain), "-" (a loss) or None: what the clause around text[start:end] says of its number,
    a negation flipping it ("not faster by 9%")."""
    left = CLAUSE_BREAK.split(text[:start])[-1]
    right = CLAUSE_BREAK.split(text[end:])[0]
    senses = set()
    for t in read(left + " _ " + right).tokens:
        s = "+" if t.canon[0] in GAIN else "-" if t.canon[0] in LOSS else None
        if s:
            senses.add(("-" if s == "+" else "+") if t.negated else s)
    return senses.pop() if len(senses) == 1 else None


def number_sense(says: str, slots: tuple[tuple[str, str, object], ...], cited_texts: tuple[str, ...]) -> list[str]:
    """A number written without a sign beside a gain or loss word: the measured change it names has
    that sign, and a number it quotes is a gain (or loss) where the cited sentence has it."""
    text = normalize(says).lower()
    named = {token: (name, value) for token, name, value in slots}
    for m in _NUMBER.finditer(text):
        if m.group(1):
            continue  # a sign says the direction; the number rules judge it
        sense = _sense(text, m.start(2), m.end(2))
        if sense is None:
            continue
        token = m.group(2)
        if token in named:
            name, value = named[token]
            kind = kind_of(name)
            improvement = kind is not None and kind.quantity == "improvement" and isinstance(value, (int, float))
            if improvement and value and (value > 0) != (sense == "+"):  # type: ignore[operator]
                word = "a gain" if sense == "+" else "a loss"
                return [f"{token!r} is written as {word}, but {name} is {value:+g}"]
            continue
        theirs = [
            s
            for t in cited_texts
            for n in [normalize(t).lower()]
            for q in _NUMBER.finditer(n)
            if q.group(2) == token
            for s in [_sense(n, q.start(2), q.end(2))]
        ]
        if theirs and all(s is not None and s != sense for s in theirs):
            return [
                f"{token!r} is written as a {'gain' if sense == '+' else 'loss'}, where the evidence it quotes has it the other way"
            ]
    return []
