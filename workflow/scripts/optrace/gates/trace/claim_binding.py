"""Rules binding a claim's words to the places its cited sentence gives them (gates.trace.claims runs them
beside gates.trace.claim_rules):

- traded words: two clauses of a claim that each carry a word the cited sentence it rewords puts only in
  the other's clause ("the register cap is not the limiter and occupancy cannot help" for "occupancy is
  not the limiter and the register cap cannot help"; blocked and interleaved traded): two subjects,
  objects or adjectives swapped, every word still the trace's;
- number sense: a gain or loss word beside a number agrees with that number ("gained 2.7%" where the
  measured change is -2.7%; "save 9%" quoting "slower by 9%");
- slug stance: a slug asserts each word no negator of its own governs, and negates the word its
  negator governs or its failure noun follows (`compile-error`: compile negated); each agrees with the
  cited sentences it rewords (`register-cap-can-help` where the trace says the cap cannot help).

Each is linear in the claim's and its closest cited sentences' clauses.
"""

from __future__ import annotations

import re
from functools import lru_cache

from optrace.gates.trace.claim_rules import Cited
from optrace.gates.trace.numbers import normalize
from optrace.slots import kind_of
from optrace.wording import CLAUSE_BREAK, FUNCTION_WORDS, NEGATING_VERBS, NEGATORS, read, sentences, stemmed

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


# the nouns of a failure: `compile-error` names what did not compile
FAILURE_NOUNS = frozenset({"error", "errors", "failure", "failures", "crash", "crashes", "hang", "hangs"})
_SLUG_NEGATORS = NEGATORS | {"instead", "rather"}  # a slug keeps the head of "instead of"


def _slug_words(slug: str) -> list[tuple[str, bool | None]]:
    """(canonical word, negated) of each word a slug says something with: a negator governs the word
    after it; a word a failure noun follows (`compile-error`, `cuda-error`) is neither (slug_content
    judges it)."""
    toks = read(slug.replace("-", " ")).tokens
    out: list[tuple[str, bool | None]] = []
    pending = False
    for i, t in enumerate(toks):
        if t.raw in _SLUG_NEGATORS or t.canon[0] in NEGATING_VERBS:
            pending = True
            continue
        if (t.raw in FAILURE_NOUNS and i) or t.canon[0] in FUNCTION_WORDS or t.raw.isdigit():
            continue
        failed = i + 1 < len(toks) and toks[i + 1].raw in FAILURE_NOUNS
        out += [(c, None if failed else pending) for c in t.canon]
        pending = False
    return out


_FAILED = re.compile(rf"([a-z0-9_]+)-(?:{'|'.join(FAILURE_NOUNS)})(?![\w-])")


def slug_content(slug: str, cited: Cited) -> str:
    """The words of a slug the content rule reads: a failure noun after a word the cited sentences
    negate (`compile-error` citing "do not compile") says that word did not happen, and is no word of
    its own; after any other (`cuda-error`) it is a word the evidence must hold."""

    def drop(m: re.Match) -> str:
        w = read(m.group(1)).tokens
        negated = bool(w) and any(t.negated and w[0].canon[0] in t.canon for r in cited.sentences for t in r.tokens)
        return m.group(1) if negated else m.group(0)

    return _FAILED.sub(drop, slug.lower())


def slug_stance(slug: str, cited: Cited) -> list[str]:
    """Each word of a slug is asserted (or negated) in the cited sentences it rewords (those holding it
    that share the most content words with the slug) as the slug has it (_slug_words)."""
    words = _slug_words(slug)
    mine = frozenset(w for w, _ in words)
    for w, negated in words:
        if negated is None:
            continue
        holding = [r for r in cited.sentences if any(w in t.canon for t in r.tokens)]
        if not holding:
            continue
        best = max(len(r.content & mine) for r in holding)
        theirs = {t.negated for r in holding if len(r.content & mine) == best for t in r.tokens if w in t.canon}
        if negated not in theirs:
            how = "negated" if negated else "asserted"
            other = "asserted" if negated else "negated"
            return [f"{w!r} is {how} here but only {other} in the evidence it cites"]
    return []
