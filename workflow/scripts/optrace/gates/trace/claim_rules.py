"""The rules one claim must satisfy against the evidence it cites (gates.trace.claims runs them).

A `Cited` is what a claim rests on: the texts of the items it cites, the meanings of the slots it cites,
and the packet's measured change and correctness. Each rule returns problems (empty: satisfied):

- content:   every content word of the claim is a word of its cited items, of its cited slots' meanings
             or of the record's identity (operator, GPU, DSL, harness), its causal connectives aside
             (the cause rule judges the joins they make); a symptom tag a cited item states
             (optrace.facts.stated_symptoms) is read as the phrase that states it (`as_stated`);
- numbers:   a number inside a word (bf16, sm_90) is that word's, which the cited items or identity hold;
             any other number is a slot's (named in `slots`: the slot's value as rounded, with its sign
             and unit, in a clause whose words fit what the slot measures and when) or quoted from a cited
             item put to the same use (counting the same thing, beside the same comparison: "256 rows" is
             no quote of "256 threads", "< 1024" none of ">= 1024", "1024 or more" and "≥ 1024" are
             ">= 1024": as_symbols); a count in words (one .. twelve) is
             a number too, quoted as its digits are or as a word; and each quoted number stands where
             the sentence it rewords has it, not in the place that sentence gives another number
             (placed_numbers: two numbers traded inside one field);
- polarity:  a word negated in the claim is negated in the cited sentence it rewords (the closest one),
             and one asserted there is asserted (a slug, which drops the words a negation turns on:
             gates.trace.claim_binding.slug_stance);
- direction: a direction word (more, fewer, grows, halves) runs the way the closest cited sentence runs it;
- speed:     faster / slower (less / more latency) agrees with the measured change unless a cited
             sentence the claim rewords says the same;
- cause:     every causal join of a claim (because, so, therefore ...) is a join a cited sentence makes,
             with the cause on the cause side (two statements the trace makes apart are no causal story;
             a join some cited sentence makes the same way round is never read as swapped by another;
             "A, so B and C" joins A to B, so "A, so C" is no join it makes);
- verdict:   kept / committed on a failed lever, reverted / not committed on a kept change, only as a
             cited item says;
- regime:    an established fact's shape regime is where the cited items say the lever fails (the other
             side of a regime they say it pays off in); no clause of a claim says it fails (a negation,
             "avoid", slower) in a regime they say it pays off in (payoff_regime);
- scope:     a scope word (general, typically, all, any, every, large, recent, ...) is a cited item's,
             and a claim rewording a cited clause keeps its qualifier ("when seq_len <= 512", "shape-0":
             kept_qualifiers);
- correctness: passed / correct / bit-exact / failed agree with the packet's correctness check unless a
             cited item says so, with each pass word put to the same use ("the build passes -D..." backs
             no kernel that "passes").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from functools import cached_property, lru_cache

from optrace.facts import failure_regimes, stated_symptoms
from optrace.gates.trace.numbers import UNITS, decimals, normalize
from optrace.slots import SlotKind, kind_of
from optrace.wording import CLAUSE_BREAK, NEGATING_VERBS, NEGATORS, Reading, read, sentences, stem

# words that say what a number measures: a number's clause may not hold another quantity's word
QUANTITY_WORDS = {
    "geomean-latency": {"geomean", "geometric", "overall", "average", "mean"},
    "shape-latency": {"largest", "smallest", "slowest", "worst", "maximum", "max", "minimum", "min", "single", "shape"},
    "improvement": {
        "faster",
        "slower",
        "gain",
        "improvement",
        "speedup",
        "slowdown",
        "regression",
        "better",
        "worse",
        "lower",
        "less",
        "reduction",
        "reduced",
        "shorter",
        "cut",
    },
    "count-shapes": {"shape", "shapes", "workload", "workloads"},
    "count-tried": {"times", "attempts", "retried", "occurrences"},
    "count-runs": {"sessions", "session", "repeats", "repetitions", "trials", "seeds", "abba", "timed"},
    "error": {"error", "err", "errors", "diff", "deviation", "tolerance"},
    "capture": {"throughput", "occupancy", "registers", "stall", "stalls", "hit", "bandwidth", "dram", "sol"},
}
BEFORE_WORDS = {"floor", "parent", "previous", "prior", "before", "old", "earlier", "incumbent", "was", "from"}
AFTER_WORDS = {"new", "now", "after", "result", "becomes", "became", "to"}
BASELINE_WORDS = {"baseline", "untouched", "original", "naive"}
FRAMEWORK_WORDS = {"framework", "pytorch", "torch", "eager", "cublas", "cudnn", "library", "reference", "vendor"}
EXACT_WORDS = {"exact", "exactly", "identical", "lossless", "bitwise"}
PASS_WORDS = {"pass", "passed", "passes", "passing", "correct"}
# "the output matched the reference": a pass only where it speaks of the check
MATCH_WORDS = {"match", "matched", "matches", "matching", "agrees", "agreed", "agree", "equals", "equal"}
CHECK_NOUNS = {"check", "reference", "correctness", "tolerance", "output", "outputs", "accuracy", "result", "results"}
FAIL_WORDS = {"fail", "failed", "fails", "failing", "incorrect", "mismatch", "mismatched", "wrong"}
ARROW = re.compile(r"(->|→|=>|\bto\b)")
_WORDS = re.compile(r"[a-z0-9_]+")
DIGITS = re.compile(r"(?<![\w.])[-+−]?(?=[\d.])(\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
GLUED = re.compile(r"[A-Za-z0-9_]*\d[A-Za-z0-9_.]*|[A-Za-z_][A-Za-z0-9_]*")
CAUSE_FIRST = re.compile(
    r"\b(?:so|therefore|thus|hence|consequently|as a result(?! of)|leads? to|results? in|which means|(?:which|that|this) is why)\b",
    re.I,
)
EFFECT_FIRST = re.compile(r"\b(?:because|since|due to|owing to|caused by|as a result of|thanks to|given that)\b", re.I)


@dataclass(frozen=True)
class Cited:
    """What one claim rests on."""

    texts: tuple[str, ...]  # the cited items' texts
    meanings: tuple[str, ...]  # the cited slots' meanings
    identity: frozenset[str]  # canonical words of the record's identity
    identity_runs: frozenset[str]  # lower-case words of the identity, as written (H100, triton)
    measured_change: float | None  # improve_pct_vs_floor
    correctness: tuple[tuple[str, object], ...]  # the packet's correctness check, as (key, value) pairs
    is_baseline: bool  # the packet's floor is the untouched baseline
    shapes_measured: int | None = None  # how many shapes the packet's geomean is over
    check_refuted: bool = False  # the lever's own account says the correctness check rejected it

    @cached_property
    def readings(self) -> tuple[Reading, ...]:
        return tuple(read(t) for t in self.texts)

    @cached_property
    def quotable(self) -> frozenset[str]:
        """Each cited text and each of its sentences, white space collapsed: a claim that is one of them is
        a quotation."""
        return frozenset(" ".join(t.split()) for t in self.texts) | frozenset(
            s for t in self.texts for s in sentences(t)
        )

    @cached_property
    def sentence_texts(self) -> tuple[str, ...]:
        return tuple(s for t in self.texts for s in (sentences(t) or [t]))

    @cached_property
    def sentences(self) -> tuple[Reading, ...]:
        """The cited texts sentence by sentence (polarity and direction compare with the closest one)."""
        return tuple(read(s) for s in self.sentence_texts)

    @cached_property
    def words(self) -> frozenset[str]:
        out = set(self.identity)
        for r in self.readings:
            out |= r.all_words
        for m in self.meanings:
            out |= read(m).all_words
        return frozenset(out)

    # what the rules below read of the cited texts, read once per Cited (claims of one trace share it)
    @cached_property
    def verdicts(self) -> frozenset[str]:
        return frozenset(v for r in self.readings for v in r.verdicts())

    @cached_property
    def scope_words(self) -> frozenset[str]:
        return frozenset(w for r in self.readings for w in r.scope_words())

    @cached_property
    def raw_words(self) -> frozenset[str]:
        return frozenset(t.raw for r in self.readings for t in r.tokens)

    @cached_property
    def plain_words(self) -> tuple[set[str], ...]:
        return tuple(_plain_words(t) for t in self.texts)

    @cached_property
    def joins(self) -> tuple[tuple[frozenset[str], frozenset[str], frozenset[str]], ...]:
        return tuple(j for s in self.sentence_texts for j in _joins(s))

    @cached_property
    def symptoms(self) -> tuple[tuple[str, str], ...]:
        """(tag, phrase) of each symptom the cited texts state (optrace.facts), the first phrase of a tag."""
        found: dict[str, str] = {}
        for t in self.texts:
            for tag, phrase in stated_symptoms(t):
                found.setdefault(tag, phrase)
        return tuple(found.items())

    @cached_property
    def regimes(self) -> tuple[tuple[str, str | None], ...]:
        """(where the lever pays off, where it fails) of each regime the cited texts state."""
        return tuple((k, v) for t in self.texts for k, v in failure_regimes(t).items())

    @cached_property
    def normalized(self) -> tuple[str, ...]:
        return tuple(as_symbols(normalize(t)) for t in self.texts)

    @cached_property
    def normalized_sentences(self) -> tuple[str, ...]:
        return tuple(normalize(s) for s in self.sentence_texts)

    @cached_property
    def runs(self) -> frozenset[str]:
        found = set(self.identity_runs)
        for t in self.texts:
            found.update(w.lower().strip(".") for w in GLUED.findall(normalize(t)))
        return frozenset(found)


def as_stated(says: str, cited: Cited) -> str:
    """The claim with each symptom tag its cited texts state read as the phrase that states it (a
    `compile-failure` citing "block_sizes=[256] failed to compile" says "failed to compile"); a tag no
    cited phrase states stays its own words, which the rules then judge."""
    for tag, phrase in cited.symptoms:
        says = re.sub(rf"(?<![\w-]){re.escape(tag)}(?![\w-])", phrase, says)
    return says


def without_connectives(text: str, reading: Reading) -> Reading:
    """The claim read without its causal connectives ("therefore", "as a result of", "which means"):
    the cause rule judges each join they make, so they need not be words of the evidence."""
    if not (CAUSE_FIRST.search(text) or EFFECT_FIRST.search(text)):
        return reading
    return read(EFFECT_FIRST.sub(" ", CAUSE_FIRST.sub(" ", text)))


def content(says: Reading, cited: Cited) -> list[str]:
    missing = sorted(w for w in says.content if w not in cited.words)
    if not missing:
        return []
    return [f"{', '.join(map(repr, missing[:5]))} is not in the evidence it cites"]


def closest(says: Reading, cited: Cited, word: str, of: Callable[[Reading], dict]) -> list[Reading]:
    """The cited sentences that hold the word and share the most content words with the claim: the ones
    it restates (a word negated in one cited sentence and asserted in another is judged by the one the
    claim rewords, not by the union of everything it cites)."""
    holding = [r for r in cited.sentences if word in of(r)]
    if not holding:
        return []
    best = max(len(r.content & says.content) for r in holding)
    return [r for r in holding if len(r.content & says.content) == best]


def polarity(says: Reading, cited: Cited) -> list[str]:
    out = []
    for w, states in says.polarity().items():
        near = closest(says, cited, w, Reading.polarity)
        theirs = {s for r in near for s in r.polarity()[w]}
        if near and states - theirs:  # each way the claim says it (negated, asserted), the evidence says it too
            how = "negated" if True in states - theirs else "asserted"
            out.append(f"{w!r} is {how} here but not in the evidence it cites")
    return out[:2]


def negators(says: Reading, cited: Cited) -> list[str]:
    """A slug's negation words (`no-`, `not-`, `without-`) are its cited items' too."""
    extra = sorted({t.raw for t in says.tokens if t.raw in NEGATORS} - cited.raw_words)
    return [f"negation {w!r} is not in the evidence it cites" for w in extra[:1]]


def direction(says: Reading, cited: Cited) -> list[str]:
    out = []
    for w, signs in says.directions().items():
        near = closest(says, cited, w, Reading.directions)
        if near and signs - {s for r in near for s in r.directions()[w]}:
            way = "up" if 1 in signs else "down"
            out.append(f"{w!r} goes {way} here, the other way in the evidence it cites")
    return out[:2]


# speed senses that contradict each other: "only hurts" and "never helps" are no rewording of "only helps"
CONTRARY_SPEED = {"+": {"-", "!+"}, "-": {"+", "!-"}, "!+": {"+"}, "!-": {"-"}}
SPEED_WORD = {"+": "faster", "-": "slower", "!+": "not faster", "!-": "not slower"}


def speed(says: Reading, cited: Cited) -> list[str]:
    """A speed word agrees with the measured change, or with a cited sentence the claim rewords or quotes
    (half of the one's content words are the other's): "only helps batch_size >= 1024" backs no "the
    attempt was faster"; and never contradicts the sentence it rewords ("only hurts batch_size >= 1024"
    for "only helps batch_size >= 1024"), whatever was measured."""
    supported: set[str] = set()
    for r in cited.sentences:
        shared = len(r.content & says.content) * 2
        if shared and (shared >= len(says.content) or shared >= len(r.content)):
            supported |= r.speed()
    m = cited.measured_change
    out = []
    for sense in sorted(says.speed() - supported):
        against = sorted(supported & CONTRARY_SPEED[sense])
        if against:  # the sentence it rewords says the other way: no measurement makes the rewording true
            out.append(f"says {SPEED_WORD[sense]} where the sentence it rewords says {SPEED_WORD[against[0]]}")
            continue
        contradicts = (
            m is None
            or (sense == "+" and m <= 0)
            or (sense == "-" and m >= 0)
            or (sense == "!+" and m > 0)
            or (sense == "!-" and m < 0)
        )
        if contradicts:
            said = "measured no change" if m is None else f"measured {m:+g}%"
            out.append(f"says {SPEED_WORD[sense]}, but the packet {said} and no evidence it cites says so")
    return out


def verdict(says: Reading, cited: Cited, record_type: str) -> list[str]:
    wrong = "not-kept" if record_type == "strategy" else "kept"
    if wrong in says.verdicts() and wrong not in cited.verdicts:
        what = "reverted or not kept" if wrong == "not-kept" else "kept or committed"
        return [f"calls the step {what}, against the record's verdict, and no evidence it cites says so"]
    return []


def failure_regime(says: str, cited: Cited) -> list[str]:
    """An established fact's shape regime is where the failed lever fails as a cited item states it
    (optrace.facts.failure_regimes): a regime the item names as where the lever pays off is the other
    side of the failure's, so it is refused as written."""
    stated: dict[str, str | None] = {}
    for t in cited.texts:
        stated.update(failure_regimes(t))
    if collapsed_regime(says) in {collapsed_regime(r) for r in stated.values() if r}:
        return []
    if collapsed_regime(says) in {collapsed_regime(w) for w in stated}:
        return ["is where the cited evidence says the lever pays off, not where it fails"]
    return ["is no regime the cited evidence states the lever fails in"]


def payoff_regime(text: str, cited: Cited) -> list[str]:
    """A regime the cited items state as where the lever pays off (optrace.facts.failure_regimes) is
    never said, in a clause of the claim, to be where it fails: no negation, negating verb or slower
    sense in that clause ("Do not retry this lever for batch_size >= 1024" where the trace says it only
    helps there)."""
    payoffs = {collapsed_regime(k) for k, v in cited.regimes if k != v}
    if not payoffs:
        return []
    for sentence in sentences(text) or [text]:
        for clause in CLAUSE_BREAK.split(sentence):
            if not clause or not any(p in collapsed_regime(clause) for p in payoffs):
                continue
            r = read(clause)
            against = any(t.negated or t.canon[0] in NEGATING_VERBS for t in r.tokens) or r.speed() & {"-", "!+"}
            if against:
                return ["says the lever fails where the cited evidence says it pays off"]
    return []


# a qualifier restricting where a clause holds: a shape axis against a number, or a named shape
QUALIFIER = re.compile(r"\b([A-Za-z_][\w.]*)\s*(?:<=|>=|==|<|>|≤|≥)\s*(\d+(?:\.\d+)?)|\b(shape-\d+)\b")


def kept_qualifiers(says: Reading, text: str, cited: Cited) -> list[str]:
    """A claim keeps the qualifier ("when seq_len <= 512", "shape-0") of each clause it rewords in the
    cited sentences it rewords (those sharing the most content words with it): a clause of which it
    holds three fifths of the content words (two at least, the qualifier's own aside) has its number or
    shape in the claim too (dropping it widens the claim to where the trace never said it)."""
    norm = normalize(text).lower()
    scored = [(len(r.content & says.content), t) for r, t in zip(cited.sentences, cited.sentence_texts, strict=True)]
    best = max((n for n, _ in scored), default=0)
    for n, sentence in scored:
        if n < best or not best or not QUALIFIER.search(sentence):
            continue
        for clause in CLAUSE_BREAK.split(sentence):
            for m in QUALIFIER.finditer(clause or ""):
                words = read(clause.replace(m.group(0), " ")).content
                if len(words) < 2 or len(words & says.content) < 0.6 * len(words):
                    continue
                mark = m.group(3) or m.group(2)
                if not re.search(rf"(?<![\w.]){re.escape(mark.lower())}(?!\w|\.\d)", norm):
                    return [f"drops the qualifier {m.group(0)!r} of the cited clause it rewords"]
    return []


def collapsed_regime(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


# a quantifier over what a record is filed under ("each nvidia kernel", "kernels across nvidia", "of each
# operator"): one run's finding widened to a class of kernels or parts
QUANTIFIED_IDENTITY = re.compile(
    r"\b(?:each|every|all|any|both|across)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:nvidia|amd|gpus?|kernels?|operators?|architectures?|arch|dsls?|hardware|devices?|parts?|vendors?)\b",
    re.I,
)


def scope(says: Reading, cited: Cited, text: str = "") -> list[str]:
    extra = sorted(says.scope_words() - cited.scope_words)
    out = [f"scope word {w!r} is not in the evidence it cites" for w in extra[:2]]
    widened = QUANTIFIED_IDENTITY.search(text)
    if widened and not any(QUANTIFIED_IDENTITY.search(t) for t in cited.texts):
        out.append(f"{widened.group(0)!r} widens the finding to a class no evidence it cites names")
    return out


def _plain_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _says_passed(ws: set[str]) -> bool:
    return bool(ws & PASS_WORDS) or bool(ws & MATCH_WORDS and ws & CHECK_NOUNS)


def _pass_uses(text: str) -> set[tuple[str, str]]:
    """Each pass (or match) word of a text with the word after it: the use it is put to ("passes -D..." is
    a flag handed to a compiler, "passes." a kernel that passed)."""
    toks = re.findall(r"[a-z0-9]+", text.lower())
    return {(t, toks[i + 1] if i + 1 < len(toks) else "") for i, t in enumerate(toks) if t in PASS_WORDS | MATCH_WORDS}


def _backs_pass(claim: str, cited: tuple[str, ...]) -> bool:
    """Cited texts that back the claim's pass: every pass (or match) word of the claim put to the same use
    in one of them, and where the claim speaks of the check, the check too ("the build passes -D..."
    backs neither "the kernel passes." nor "passed the correctness check")."""
    uses = set().union(*(_pass_uses(t) for t in cited)) if cited else set()
    speaks_of_check = bool(_plain_words(claim) & CHECK_NOUNS)
    return _pass_uses(claim) <= uses and (not speaks_of_check or any(_plain_words(t) & CHECK_NOUNS for t in cited))


REJECT_WORDS = {"reject", "rejects", "rejected", "rejecting"}
CORRECTNESS_NOUNS = {"correctness", "tolerance", "accuracy"}


def states_failed_check(text: str) -> bool:
    """A sentence of the text says the correctness check failed or rejected something, negating neither
    ("fp16 accumulation loses the low bits, so the correctness gate rejects it")."""
    for s in sentences(text) or [text]:
        r = read(s)
        failed = any(t.raw in FAIL_WORDS | REJECT_WORDS and not t.negated for t in r.tokens)
        if failed and _plain_words(s) & CORRECTNESS_NOUNS:
            return True
    return False


def correctness(text: str, cited: Cited) -> list[str]:
    """Exact, passed (or matched the reference) and failed as the packet's correctness check says, or as
    a cited sentence says it in as many words; and never passed where the lever's own account (its
    cause, observation or gate verdict) says the correctness check rejected it, whatever the packet's
    status (the version's, which may have measured without that lever) or a cited item says."""
    ws = _plain_words(text)
    theirs = cited.plain_words
    check = dict(cited.correctness)
    status, err = check.get("status"), check.get("max_abs_err")
    out = []
    if (
        ws & EXACT_WORDS
        and not any(ws & EXACT_WORDS & t for t in theirs)
        and not (type(err) in (int, float) and err == 0)
    ):
        out.append(f"says exact, but the packet's max_abs_err is {err!r}")
    if _says_passed(ws) and not _backs_pass(text, cited.texts) and status != "PASS":
        out.append(f"says it passed, but the packet's correctness status is {status!r}")
    elif _says_passed(ws) and cited.check_refuted and not states_failed_check(text):
        out.append("says it passed, but the lever's own account says the correctness check rejected it")
    if ws & FAIL_WORDS and not any(ws & FAIL_WORDS & t for t in theirs) and (status is None or status == "PASS"):
        out.append(f"says it failed, but the packet's correctness status is {status!r}")
    return out


def _content_of(text: str) -> frozenset[str]:
    """Content words of a side of a join, a count in words read as its digits (no content word), as a
    count in digits is."""
    return read(_SMALL_NUMBER.sub(lambda m: _value(m.group(0)), text)).content


# what bounds a join's sides: a semicolon ends the clause a connective joins ("A, so B; C" joins A to B)
_SIDE_BREAK = re.compile(r";")
_CONJUNCT = re.compile(r"\s(?:and|while)\s|,\s")


def _joins(sentence: str) -> list[tuple[frozenset[str], frozenset[str], frozenset[str]]]:
    """(cause words, effect words, the words of the effect's first clause) of every causal join of a
    sentence: each connective joins the text since the previous connective (or semicolon) to the text up
    to the next ("A, so B, because C" joins A to B and C to B). After "so" (and its kin) the clause
    right after it is what the cause causes: "A, so B and C" joins A to B, and C only through B. The
    first clause's words are empty where it holds fewer than two (an "and" of nouns: "K and V tiles")."""
    found = sorted(
        [(m.start(), m.end(), False) for m in CAUSE_FIRST.finditer(sentence)]
        + [(m.start(), m.end(), True) for m in EFFECT_FIRST.finditer(sentence)]
    )
    out: list[tuple[frozenset[str], frozenset[str], frozenset[str]]] = []
    for k, (start, end, cause_after) in enumerate(found):
        pieces = _SIDE_BREAK.split(sentence[found[k - 1][1] if k else 0 : start])
        # "A; as a result, B": a connective right after a semicolon joins the clause before it
        before = pieces[-1] if pieces[-1].strip(" ,") or len(pieces) == 1 else pieces[-2]
        after = _SIDE_BREAK.split(sentence[end : found[k + 1][0] if k + 1 < len(found) else len(sentence)])[0]
        first, second = _content_of(before), _content_of(after)
        if cause_after:
            out.append((second, first, frozenset()))
        else:
            lead = _content_of(_CONJUNCT.split(after.strip(), maxsplit=1)[0])
            out.append((first, second, lead if len(lead) >= 2 else frozenset()))
    return out


def _most(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """At least half of a side's words (one at least) are the other side's: the same side, reworded."""
    return len(mine & theirs) >= max(1, len(mine) / 2)


def cause_order(text: str, cited: Cited) -> list[str]:
    """Every causal join a claim makes rests on a cited sentence that makes it: the claim's cause side
    shares words with that join's cause side and its effect side with the effect side (two true
    statements the trace makes apart are no causal story it told), never the other way round."""
    joins = _joins(text)
    theirs = cited.joins if joins else ()
    for cause, effect, _ in joins:
        if any(_most(cause, c) and _most(effect, e) and (not lead or _most(lead, effect)) for c, e, lead in theirs):
            continue  # a join a cited sentence makes, the same way round, to the clause it joins
        if any(len(cause & e) >= 2 and len(effect & c) >= 1 and len(cause & e) > len(cause & c) for c, e, _ in theirs):
            return ["puts the cited sentence's effect as the cause (cause and effect swapped)"]
        return ["joins a cause and an effect that no sentence it cites joins"]
    return []


# --- numbers ----------------------------------------------------------------------------------------


def _clause_words(text: str, start: int, end: int) -> set[str]:
    """Words of the clause around text[start:end], at most 8 each side."""
    left = CLAUSE_BREAK.split(text[:start])[-1]
    right = CLAUSE_BREAK.split(text[end:])[0]
    words = _WORDS.findall(left.lower())[-8:] + _WORDS.findall(right.lower())[:8]
    return {stem(w) for w in words} | set(words)


_NEIGHBOUR = re.compile(r"->|=>|→|[a-z][a-z_]*|%|[<>=≤≥]+")
_ARROWS = frozenset({"->", "=>", "→"})  # "67% -> 33%" reads "67% to 33%": an arrow is no comparison


_COMPARISON = re.compile(r"[<>=≤≥]+")


def _neighbours(text: str, start: int, end: int) -> tuple[str | None, str | None]:
    """The word (or comparison) next to a number on each side: `M <= 128` has `<=` on its left."""
    left = ["to" if w in _ARROWS else w for w in _NEIGHBOUR.findall(text[:start].lower())[-1:]]
    right = ["to" if w in _ARROWS else w for w in _NEIGHBOUR.findall(text[end:].lower())[:1]]
    return (stem(left[0]) if left else None), (stem(right[0]) if right else None)


def _same_use(mine: tuple[str | None, str | None], theirs: tuple[str | None, str | None]) -> bool:
    """A number put to the same use: it counts the same thing (the word after it), or, with nothing after
    it, follows the same word; a comparison beside it on either side is the same comparison ("< 1024" is
    not ">= 1024", "256 rows" is not "256 threads")."""
    for side in (0, 1):
        ops = [w for n in (mine, theirs) if (w := n[side]) and _COMPARISON.fullmatch(w)]
        if ops and mine[side] != theirs[side]:
            return False
    if mine[1] and theirs[1]:
        return mine[1] == theirs[1]
    return mine[0] is not None and mine[0] == theirs[0]


# a comparison in words or in one symbol, as the two-character symbol the same-use rule compares
_AT_LEAST = re.compile(r"\b(?:at least|no less than|no fewer than)\s+(?=\d)|≥\s*", re.I)
_AT_MOST = re.compile(r"\b(?:at most|up to|no more than)\s+(?=\d)|≤\s*", re.I)
_OR_MORE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+or\s+(?:more|greater|larger|above)\b", re.I)
_OR_LESS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+or\s+(?:less|fewer|smaller|below)\b", re.I)


def as_symbols(text: str) -> str:
    """ "1024 or more", "at least 1024" and "≥ 1024" read ">= 1024"; "up to 512", "at most 512", "512 or
    less" and "≤ 512" read "<= 512" (a comparison written out is the same comparison)."""
    if not any(c in text for c in "≤≥") and not re.search(r"\b(?:or|least|most|up to|than)\b", text, re.I):
        return text
    text = _AT_LEAST.sub(">= ", _AT_MOST.sub("<= ", text))
    return _OR_LESS.sub(r"<= \1", _OR_MORE.sub(r">= \1", text))


# number words counted as their digits ("four bf16" quotes "4 bf16"; "three kernels" is a number)
SMALL_NUMBERS = {w: str(i) for w, i in UNITS.items() if 1 <= i <= 12}
_SMALL_NUMBER = re.compile(rf"\b(?:{'|'.join(SMALL_NUMBERS)})\b", re.I)


def _value(token: str) -> str:
    """A number token's value as one spelling: `8`, `8.0` and `eight` are `8`."""
    word = SMALL_NUMBERS.get(token.lower())
    if word:
        return word
    try:
        return format(Decimal(token).normalize(), "f")
    except InvalidOperation:
        return token


@lru_cache(maxsize=1 << 14)
def number_marks(text: str) -> tuple[tuple[str, int, int], ...]:
    """(value, start, end) of every number of a (normalized) text standing on its own or glued to a
    unit or noun by a hyphen (`16-byte`, `M <= 128`, `eight`), not one inside a word (`bf16`, `sm_90`)."""
    out = []
    for m in DIGITS.finditer(text):
        start, end = m.start(1), m.end(1)
        if (start and re.match(r"[A-Za-z_]", text[start - 1])) or text[max(0, start - 6) : start].lower() == "shape-":
            continue
        out.append((_value(m.group(1)), start, end))
    out += [(_value(m.group(0)), m.start(), m.end()) for m in _SMALL_NUMBER.finditer(text)]
    return tuple(sorted(out, key=lambda x: x[1]))


def _quotes(token: str, text: str, start: int, end: int, cited: Cited) -> bool:
    """The number appears in a cited item (as digits or as a word) put to the use it is put to here
    (_same_use)."""
    mine, value = _neighbours(text, start, end), _value(token)
    for n in cited.normalized:
        for v, s, e in number_marks(n):
            if v == value and _same_use(mine, _neighbours(n, s, e)):
                return True
    return False


_CONTEXT = re.compile(r"->|=>|→|[a-z][a-z_]*|\d+(?:\.\d+)?|[<>=≤≥]+")
CONTEXT_SPAN = 3  # words each side a number's place is read by


def _context(text: str, start: int, end: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words, numbers (by value) or comparisons nearest a number on its left and on its right,
    nearest first."""

    def side(part: str) -> list[str]:
        return [
            "to" if w in _ARROWS else _value(w) if w[0].isdigit() or w in SMALL_NUMBERS else stem(w)
            for w in _CONTEXT.findall(part.lower())
        ]

    return tuple(side(text[:start])[::-1][:CONTEXT_SPAN]), tuple(side(text[end:])[:CONTEXT_SPAN])


def _fit(mine: tuple[tuple[str, ...], ...], theirs: tuple[tuple[str, ...], ...]) -> int:
    """How alike two places are: each word on the same side of both, weighted by its nearness."""
    return sum(
        CONTEXT_SPAN - max(i, theirs[side].index(w))
        for side in (0, 1)
        for i, w in enumerate(mine[side])
        if w in theirs[side]
    )


def placed_numbers(says: Reading, text: str, cited: Cited) -> list[str]:
    """Each number quoted from a cited sentence stands where the sentence it rewords has it, not where
    that sentence has another number: a place (the words and numbers nearest it, each side) that fits
    another number's place better than its own, in each of the cited sentences holding it that share
    the most content words with the claim, is two numbers traded ("one 2-byte load per 8 elements
    instead of eight 16-byte loads" for "one 16-byte load ... eight 2-byte loads") or one put in
    another's place ("M <= 16" where the trace has "M <= 128" and "16-row")."""
    norm = normalize(text)
    for value, start, end in number_marks(norm):
        place = _context(norm, start, end)
        holding = [
            (len(r.content & says.content), n, number_marks(n))
            for r, n in zip(cited.sentences, cited.normalized_sentences, strict=True)
        ]
        holding = [h for h in holding if value in {m[0] for m in h[2]}]
        best = max((h[0] for h in holding), default=0)
        verdicts = []
        for _, n, marks in (h for h in holding if h[0] == best):
            own = max(_fit(place, _context(n, s, e)) for v, s, e in marks if v == value)
            other = max(((_fit(place, _context(n, s, e)), n[s:e]) for v, s, e in marks if v != value), default=None)
            verdicts.append(other if other and other[0] > own else None)
        if verdicts and all(verdicts):
            theirs = verdicts[0][1]  # type: ignore[index]
            return [f"{norm[start:end]!r} stands where the sentence it rewords has {theirs!r} (numbers traded places)"]
    return []


def matches_value(token: str, value: float, exact: Decimal | None = None) -> bool:
    """The token is the value, or the value (or the exact quantity it rounds) rounded half-even to the
    token's decimals, which are at least one: 18.5 from 18.54, never 19."""
    try:
        t = Decimal(token)
    except InvalidOperation:
        return False
    for v in (Decimal(repr(abs(value))),) + ((abs(exact),) if exact is not None else ()):
        if t == v:
            return True
        d = decimals(t)
        if 1 <= d <= 12 and abs(v.adjusted()) < 30 and v.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_EVEN) == t:
            return True
    return False


SHAPE_LABEL = re.compile(r"\bshape-\d+\b", re.I)
MEASURED_WORDS = {"measured", "measuring", "timed", "ran", "run", "benchmarked"}


def slot_use(
    text: str, start: int, end: int, kind: SlotKind, cited: Cited, name: str = "", value: object = None
) -> list[str]:
    """The clause around a number fits what its slot measures, when, and against what: its quantity, its
    role (before or after), the baseline it is against, the shape it is of, measured or defined shapes."""
    words = _clause_words(text, start, end)
    out = []
    if kind.quantity == "shape-latency":
        clause = CLAUSE_BREAK.split(text[:start])[-1] + text[start:end] + CLAUSE_BREAK.split(text[end:])[0]
        shape = re.search(r"\[(shape-\d+)\]", name)
        named = {m.group(0).lower() for m in SHAPE_LABEL.finditer(clause)}
        if shape and named and shape.group(1) not in named:
            out.append(f"it is the latency of {shape.group(1)}, written as that of {sorted(named)[0]}")
    measured = cited.shapes_measured
    if name == "operator.n_benchmarked_shapes" and words & MEASURED_WORDS and measured and measured != value:
        out.append(f"the benchmark defines these shapes; {cited.shapes_measured} were measured")
    others = {q for q, ws in QUANTITY_WORDS.items() if q != kind.quantity and words & ws}
    if others and not words & QUANTITY_WORDS.get(kind.quantity, set()):
        out.append(f"its clause speaks of {sorted(others)[0]}, but the slot is {kind.quantity}")
    before, after = bool(words & BEFORE_WORDS), bool(words & AFTER_WORDS)
    arrow = ARROW.search(text[end : end + 6])
    arrowed_in = ARROW.search(text[max(0, start - 6) : start])
    if kind.role == "after" and (arrow or (before and not after)):
        out.append("it is this version's number, written as the one before")
    if kind.role == "before" and (arrowed_in or (after and not before)):
        out.append("it is the floor's number, written as the new one")
    if kind.quantity == "improvement":
        if words & FRAMEWORK_WORDS:
            out.append("the measured change is against the floor, not against a framework or reference")
        elif words & BASELINE_WORDS and not cited.is_baseline:
            out.append("the measured change is against the previous best, not the untouched baseline")
    return out


# a number with its unit glued on ("17.9us", "4x"): a number, read with that unit
WITH_UNIT = re.compile(r"(?:\d+(?:\.\d+)?|\.\d+)(?:us|ms|ns|x)")


def numbers(
    text: str,
    slots: tuple[tuple[str, str, float | int | None], ...],
    cited: Cited,
    exact_change: Decimal | None,
    spelled_counts: bool = True,
) -> list[str]:
    """`slots`: (number as written, slot name, the slot's value in the packet or None); `spelled_counts`:
    a count in words is judged as its digits are (a slug, which drops the words around a count, is not)."""
    spelled = spelled_counts and _SMALL_NUMBER.search(text) is not None
    if not spelled and not any(ch.isnumeric() for ch in text):
        return []  # no number to judge (larger numbers in words, "twenty-one", are no-fabrication's)
    norm = as_symbols(normalize(text))
    named = {token: (name, value) for token, name, value in slots}
    out = []
    for m in _SMALL_NUMBER.finditer(norm) if spelled else ():  # a count in words is quoted like its digits
        if m.group(0) not in named and not _quotes(m.group(0), norm, m.start(), m.end(), cited):
            out.append(f"{m.group(0)!r} is not quoted from the evidence it cites (as a word or as digits)")
    for run in GLUED.finditer(norm):
        word = run.group(0)
        if not re.search(r"\d", word) or re.fullmatch(r"[\d.]+", word) or WITH_UNIT.fullmatch(word):
            continue
        if word.lower().strip(".") not in cited.runs:
            out.append(f"{word!r} is not a word of the evidence it cites")
    for m in DIGITS.finditer(norm):
        token, start, end = m.group(1), m.start(1), m.end(1)
        if norm[max(0, start - 6) : start].lower() == "shape-":
            continue  # a shape's label (`shape-3`): the name of a measured shape, not a number
        glued_unit = WITH_UNIT.fullmatch(norm, start, end + len(re.match(r"[a-z]*", norm[end:]).group(0)))  # type: ignore[union-attr]
        if not glued_unit and (
            re.match(r"[A-Za-z_]", norm[end : end + 1]) or (start and re.match(r"[A-Za-z_]", norm[start - 1]))
        ):
            continue  # inside a word: judged as that word above
        if token not in named:
            if not _quotes(token, norm, start, end, cited):
                out.append(f"{token!r} names no slot and is not quoted from the evidence it cites")
            continue
        name, value = named[token]
        kind = kind_of(name)
        if kind is None or value is None:
            out.append(f"{token!r} names {name!r}, which is no slot of this packet")
            continue
        exact = exact_change if name == "measurements.improve_pct_vs_floor" else None
        if not matches_value(token, value, exact):
            out.append(f"{token!r} is not {name} ({value!r})")
            continue
        sign = m.group(0)[:1]
        if (sign in "-−" and value > 0) or (sign == "+" and value < 0):
            out.append(f"{m.group(0)!r} has the other sign than {name} ({value!r})")
        unit = re.match(r"\s*(%|percent\b|us\b|µs|ms\b|ns\b|x\b|×)", norm[end:])
        if unit:
            written = "%" if unit.group(1) in ("%", "percent") else "x" if unit.group(1) in ("x", "×") else "us"
            if written != (kind.unit or ""):
                out.append(f"{token!r} is written in {unit.group(1)!r}, but {name} is in {kind.unit or 'no unit'}")
        out += [f"{token!r} ({name}): {p}" for p in slot_use(norm, start, end, kind, cited, name, value)]
    return out


_NON_ASCII_WORD = re.compile(r"\w*[^\x00-\x7f]\w*")


def foreign_words(text: str) -> set[str]:
    """The word runs of a text (NFKC-folded) that hold a letter outside ASCII ("ոоt", "Норрег")."""
    if text.isascii():  # NFKC keeps ASCII text ASCII: no such run
        return set()
    # the micro sign is the unit's own letter ("µs" is "us"), not a look-alike of a Latin one
    plain = unicodedata.normalize("NFKC", text).lower().replace("\u03bc", "u")
    return {w for w in _NON_ASCII_WORD.findall(plain) if any(c.isalpha() for c in w)}


def look_alikes(text: str, packet_words: frozenset[str]) -> list[str]:
    """A word spelt in letters outside ASCII is no word the reader can judge (a Cyrillic "not" renders as
    "not" and reads as nothing): only the packet's own such words may stand in a served string."""
    alien = sorted(foreign_words(text) - packet_words)
    return (
        [f"writes {', '.join(map(repr, alien[:3]))} in letters outside ASCII that its packet never writes"]
        if alien
        else []
    )
