"""How the project reads prose: sentences, words, their stems, and the few word classes a claim's truth
turns on (negation, direction, speed, verdict, scope).

One reader for everyone who compares two texts: packets split the trace's statements into evidence
items with it, the drafter picks sentences with it, partition's precheck and the established-fact gate
judge causes with it (optrace.facts), and the claims gate compares a record's sentence with the items it
cites. The same reader on both sides means an honest copy or rewording is read identically; only what
differs is left over.

- `sentences(text)`: sentences end at `.`, `!` or `?` followed by white space (never inside a number,
  `e.g.` or `vs.`), at a blank line and at a list item;
- `words(text)`: lower-case runs of letters and digits (an identifier's `_` and a compound's `-` split it);
- `canon(word)`: its stem (plural, -ed, -ing and a final e dropped, so read/reads/reading/re-read and
  stage/staged/staging are one word) mapped through a small table of domain synonyms
  (load/fetch/access = read, store = write, smem = shared memory, CTA/threadblock = block, ...);
- `Reading(text)`: the text as the gates compare it: its canonical words, which of them a negation
  governs ("not", "no", "never", "without", "instead of", "avoid", ...), which a direction word
  attaches to ("fewer accesses", "traffic grows"), and the speed, verdict and scope words it uses.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache

_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "etc.", "approx.", "cf.", "resp.", "no.", "fig.")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_ITEM_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def sentences(text: object) -> list[str]:
    """The sentences of a text, whitespace collapsed, in order (empty for anything but a string)."""
    if not isinstance(text, str) or not text.strip():
        return []
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        piece = text[start : m.start() + (len(m.group(0).rstrip()) if m.group(0)[:1] in "\"')]" else 0)]
        if piece.lower().endswith(_ABBREVIATIONS) or not piece.strip():
            continue
        out.append(piece)
        start = m.end()
    out.append(text[start:])
    cleaned = (" ".join(_ITEM_MARK.sub("", p).split()) for p in out)
    return [s for s in cleaned if s]


_WORD = re.compile(r"[a-z0-9]+")
_NOT_CONTRACTED = re.compile(r"n['’]t\b")
# the contractions whose verb changes shape ("can't" is "can not", never "ca not")
_IRREGULAR_NOT = re.compile(r"\b(?:(ca)|(wo)|(sha))n['’]t\b")
_IRREGULAR_NOT_VERB = {1: "can", 2: "will", 3: "shall"}


def folded(text: str) -> str:
    """NFKC-folded and lower-cased, "doesn't" as "does not", "cannot" and "can't" as "can not" (a full-width "ｎｏｔ"
    reads as "not": the reader sees what a reader of the rendered text sees)."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    lowered = _IRREGULAR_NOT.sub(lambda m: _IRREGULAR_NOT_VERB[m.lastindex or 1] + " not", lowered)
    return _NOT_CONTRACTED.sub(" not", lowered).replace("cannot", "can not")


def words(text: str) -> list[str]:
    """Lower-case words of the folded text."""
    return _WORD.findall(folded(text))


# forms a suffix rule gets wrong, as the stem the regular forms of the word get
_IRREGULAR = {
    "ran": "run",
    "ran't": "run",
    "written": "writ",
    "wrote": "writ",
    "write": "writ",
    "writes": "writ",
    "writing": "writ",
    "made": "make",
    "held": "hold",
    "kept": "keep",
    "spent": "spend",
    "lost": "lose",
    "led": "lead",
    "fed": "feed",
    "fell": "fall",
    "falls": "fall",
    "fallen": "fall",
    "done": "do",
    "does": "do",
    "did": "do",
    "has": "have",
    "had": "have",
    "was": "be",
    "were": "be",
    "is": "be",
    "are": "be",
    "been": "be",
    "being": "be",
    "bus": "bus",
    "its": "its",
    "this": "this",
    "gives": "give",
    "given": "give",
    "gave": "give",
    "taken": "take",
    "took": "take",
    "grew": "grow",
    "grown": "grow",
    "rose": "rise",
    "risen": "rise",
    "shown": "show",
    "chosen": "choose",
    "chose": "choose",
    "hidden": "hide",
    "hid": "hide",
    "needs": "need",
    "needed": "need",
    "halves": "half",
    "halved": "half",
    "halving": "half",
    "halve": "half",
}


@lru_cache(maxsize=1 << 15)
def stem(word: str) -> str:
    """A light suffix stripper, the same on both sides of every comparison (not a linguist's stemmer)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    w = word
    if (w.endswith("ies") and len(w) > 4) or (w.endswith("ied") and len(w) > 4):
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "lsz":  # stopp -> stop, not spill -> spil
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


# domain synonyms: a word and its canonical words (every one of them must be in the other text)
_SYNONYMS = {
    "load": ("read",),
    "fetch": ("read",),
    "access": ("read",),
    "reread": ("read",),
    "store": ("writ",),
    "smem": ("shar", "memory"),
    "lds": ("shar", "memory"),
    "gmem": ("global", "memory"),
    "hbm": ("dram",),
    "cta": ("block",),
    "threadblock": ("block",),
    "reg": ("regist",),
    "time": ("latency",),
    "runtime": ("latency",),
    "duration": ("latency",),
    "sync": ("barrier",),
    "syncthread": ("barrier",),
    "fp32": ("float32",),
    "fp16": ("float16",),
    "bf16": ("bfloat16",),
    "quick": ("fast",),
    "speed": ("fast",),
    "instr": ("instruction",),
    "mem": ("memory",),
    "param": ("parameter",),
    "elem": ("element",),
    "requir": ("need",),
    "singl": ("one",),
}


@lru_cache(maxsize=1 << 15)
def canon(word: str) -> tuple[str, ...]:
    """The canonical words a word stands for (usually one: its stem)."""
    s = stem(word)
    return _SYNONYMS.get(s, _SYNONYMS.get(word, (s,)))


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def stemmed(text: str) -> frozenset[str]:
    return frozenset(map(stem, text.split()))


# Function words: they carry no claim of their own (the word classes below are judged by their rules).
FUNCTION_WORDS = word_set(
    """
    a an the of to in on at as and or for by from into onto with within over under than then that
    this these those it its it's they them their there here he she we you i our your be have do can
    could will would should shall must which who whom whose what where when while whereas how why
    if so such also only just very even still already once yet again both either each per via about
    across along between through after before up down out off upon one ones s t x vs e g i.e etc
    instead rather now above below try
    take takes took taken go goes went gone get gets got make makes made become becomes became
    """
)

NEGATORS = word_set(
    """
    not no never without none nothing neither nor nobody unlike
    """
)
NEGATING_VERBS = frozenset(map(stem, ["avoid", "avoids", "avoided", "avoiding", "lack", "lacks", "fail", "fails"]))
NEGATING_PHRASES = (("instead", "of"), ("rather", "than"))
CLAUSE_BREAK = re.compile(r"[,;:()\[\]—–]|\s-\s|\bbut\b|\bwhereas\b|\balthough\b|\bwhile\b|\bso\b|\bbecause\b")

UP = stemmed(
    """
    more higher increase increases increased grow grows grew larger bigger extra additional raise
    raises raised double doubles doubled rise rises
    """
)
DOWN = stemmed(
    """
    less fewer lower decrease decreases decreased reduce reduces reduced cut cuts shrink shrinks
    smaller halve halves halved drop drops dropped save saves saved remove removes removed
    eliminate eliminates eliminated fall falls fell lose loses lost
    """
)
FASTER = stemmed(
    """
    faster quicker speedup speedups accelerate accelerates improve improves improved improvement
    better win wins helps help helped
    """
)
SLOWER = stemmed(
    """
    slower slowdown slowdowns regress regresses regressed regression worse slows slowed hurt hurts
    degrade degrades degraded
    """
)
LATENCY_NOUNS = frozenset(map(stem, ["latency", "latencies", "time", "runtime", "duration", "microseconds"]))
# verdict words as written (participles: "keep" and "revert" are advice, not a verdict)
KEPT = frozenset(["kept", "committed", "adopted", "merged", "retained", "landed", "accepted"])
NOT_KEPT = frozenset(["reverted", "discarded", "abandoned", "rejected", "undone", "rolled", "backed"])
# words that are a verdict only when they say what happened to the change ("the change was dropped", not
# "occupancy dropped"): one of STEP_WORDS within the three words before them
MAYBE_KEPT = frozenset(["stayed", "remained", "survived", "shipped"])
MAYBE_NOT_KEPT = frozenset(
    ["dropped", "removed", "reversed", "withdrawn", "scrapped", "shelved", "ditched", "dumped", "eliminated", "deleted"]
)
STEP_WORDS = frozenset(["change", "step", "lever", "attempt", "version", "edit", "commit", "patch", "it"])
SCOPE = stemmed(
    """
    general generally typical typically usually always universally universal regardless only solely exclusively
    irrespective whatever any every all most recent modern broadly widely large larger small
    smaller big bigger huge tiny many entire whole class family families generation generations
    portable everywhere arbitrary
    """
)
SPECIAL = NEGATORS | NEGATING_VERBS | UP | DOWN | FASTER | SLOWER | SCOPE


@dataclass(frozen=True)
class Token:
    canon: tuple[str, ...]  # canonical words
    raw: str
    negated: bool
    clause: int


@dataclass(frozen=True)
class Reading:
    """A text as the claims gate compares it (see the module doc)."""

    tokens: tuple[Token, ...]

    @cached_property
    def content(self) -> frozenset[str]:
        """Canonical words that carry content (function and special words aside)."""
        return frozenset(c for t in self.tokens if _is_content(t) for c in t.canon)

    @property
    def all_words(self) -> frozenset[str]:
        return frozenset(c for t in self.tokens for c in t.canon)

    def polarity(self) -> dict[str, set[bool]]:
        """canonical content word -> the negation states it occurs in."""
        return self._polarity

    @cached_property
    def _polarity(self) -> dict[str, set[bool]]:
        out: dict[str, set[bool]] = {}
        for t in self.tokens:
            if _is_content(t):
                for c in t.canon:
                    out.setdefault(c, set()).add(t.negated)
        return out

    def directions(self) -> dict[str, set[int]]:
        """canonical content word -> the directions (+1 up, -1 down) a direction word next to it gives it,
        a negation flipping it ("not more" reads as down)."""
        return self._directions

    @cached_property
    def _directions(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        toks = self.tokens
        for i, t in enumerate(toks):
            s = t.canon[0]
            sign = 1 if s in UP else -1 if s in DOWN else 0
            if not sign:
                continue
            sign = -sign if t.negated else sign
            for j in list(range(i + 1, min(i + 4, len(toks)))) + list(range(i - 1, max(i - 4, -1), -1)):
                if toks[j].clause == t.clause and _is_content(toks[j]):
                    for c in toks[j].canon:
                        out.setdefault(c, set()).add(sign)
        return out

    def speed(self) -> set[str]:
        """The speed senses the text asserts: "+" faster, "-" slower, "!+" not faster, "!-" not slower.
        A direction on a latency noun counts ("less latency" is faster, "more time" slower)."""
        out: set[str] = set()
        dirs = self.directions()
        for t in self.tokens:
            s = t.canon[0]
            if s in FASTER or s in SLOWER:
                sense = "+" if s in FASTER else "-"
                out.add(("!" + sense) if t.negated else sense)
        for noun in LATENCY_NOUNS:
            for sign in dirs.get(noun, ()):
                out.add("+" if sign < 0 else "-")
        return out

    def verdicts(self) -> set[str]:
        """ "kept" / "not-kept" for every verdict word ("not committed" reads as not kept)."""
        out = set()
        for i, t in enumerate(self.tokens):
            # only a maybe-verdict word turns on the words before it
            maybe = t.raw in MAYBE_KEPT or t.raw in MAYBE_NOT_KEPT
            about_the_step = maybe and any(u.raw in STEP_WORDS for u in self.tokens[max(0, i - 3) : i])
            if t.raw in KEPT or (t.raw in MAYBE_KEPT and about_the_step):
                out.add("not-kept" if t.negated else "kept")
            elif t.raw in NOT_KEPT or (t.raw in MAYBE_NOT_KEPT and about_the_step):
                out.add("kept" if t.negated else "not-kept")
        return out

    def scope_words(self) -> set[str]:
        return {t.canon[0] for t in self.tokens if t.canon[0] in SCOPE}


def _is_content(t: Token) -> bool:
    s = t.canon[0]
    raw = t.raw
    return (
        s not in FUNCTION_WORDS
        and raw not in FUNCTION_WORDS
        and s not in SPECIAL
        and raw not in KEPT
        and raw not in NOT_KEPT
        and not raw.isdigit()
        and not _NUMBER_WITH_UNIT.fullmatch(raw)
    )


_NUMBER_WITH_UNIT = re.compile(r"\d+(?:us|ms|ns|x)")  # "17.9us" reads as 17 and 9us: a number, not a word


@lru_cache(maxsize=1 << 14)
def read(text: str) -> Reading:
    """Tokens with their clause and whether a negation governs them. A negation governs the first content
    word after it in its clause ("is not faster", "does not fit", "no gain", "never reaches", "instead of
    fp32"): the word the negated predicate turns on, not every word to the clause's end."""
    tokens: list[Token] = []
    clause, pending = 0, False
    for part in CLAUSE_BREAK.split(folded(text)):
        # a negation with nothing left to govern in its clause ("is not, in this run, faster") governs the
        # next clause's first content word: a break never turns a negated predicate into an asserted one
        ws = _WORD.findall(part)
        for i, w in enumerate(ws):
            st = stem(w)
            to_follows = i + 1 < len(ws) and ws[i + 1] == "to"
            if w in NEGATORS or (st in NEGATING_VERBS and (st != "fail" or to_follows)):  # "fails to fit"
                pending = not pending
                tokens.append(Token((st,), w, False, clause))
                continue
            if i + 1 < len(ws) and (w, ws[i + 1]) in NEGATING_PHRASES:
                pending = True
            tok = Token(canon(w), w, False, clause)
            if pending and w == "longer" and i and ws[i - 1] == "no":  # "no longer hidden": hidden is negated
                tokens.append(tok)
                continue
            if pending and st in SCOPE and not _is_content(tok):  # "not many waves": the waves are negated
                tokens.append(Token(tok.canon, w, True, clause))
                continue
            if pending and (_is_content(tok) or st in SPECIAL or w in KEPT or w in NOT_KEPT):
                tok = Token(tok.canon, w, True, clause)
                pending = False
            tokens.append(tok)
        clause += 1
    return Reading(tuple(tokens))


def content_words(text: str) -> frozenset[str]:
    """The canonical content words of a text."""
    return read(text).content


def overlap(text: str, other: str) -> float:
    """Share of `text`'s content words that `other` has too (0 when text has none)."""
    mine = content_words(text)
    return len(mine & content_words(other)) / len(mine) if mine else 0.0
