"""Whether a text states a fact: a cause, a checkable condition, or only a measurement, an outcome, a
restatement of the lever, bookkeeping or a guess. One judge for every user: partition's precheck, the
drafter that picks a record's mechanism, and the `established-fact` gate that checks it. It imports no
gate.

    judge(text, lever=None, labelled=False) -> Judgement     the whole text: its first causal sentence wins
    causal_sentences(text, lever, labelled) -> [str]         the sentences that state a cause
    stated_cause(sources, lever, own_prose) -> [(sentence, tag)]   why a failed lever failed, read in the
                                                             order of authority (CAUSE_ORDER)
    precheck(sources, lever, own_prose) -> ("ok" | "flag", reason)  partition's hint from the same reading

A sentence states a cause by its structure, not by a word list of causes:
- a clause joined to the lever or outcome by a causal connective (because, since, so, thus, due to,
  which ..., leads to), whose side is not a restatement of the lever;
- a stated-mechanism field (`labelled`: a pitfall's explanation or root cause, an experiment's evidence,
  a revert's reason) or a label in the text ("bottleneck: ...", "root cause:");
- a clause with a subject and a finite verb ("the kernel waits on global loads", "the 2*I intermediate
  never reaches HBM"), or a restriction ("exist only for __CUDA_ARCH__ >= 800", "aligned only when the base
  pointer is", "requires", "unless", "Required: 245760, Hardware limit: 232448"), or a cost ("an extra IMAD
per LDS"),
and it is not: speculation (may, might, possibly, ...), bookkeeping or an asserted ceiling (dead-end
counts, "within noise", "at the hardware floor"), a measurement (numbers and metric names with no
verb: "LSU instructions -74%, long_scoreboard still top stall"), an outcome ("it was slower than the
kept kernel"), advice (a sentence that starts by saying what to do: "run the tests on the sm_90 runner
only") or a restatement of the lever (most of its words are the lever's, the reason beside it aside). What none of these
decides is `unjudged`: partition flags it for the agent instead of guessing.

Conditions (`stated_condition`): a shape regime or dtype the text states once (a failed lever's regime is
where it fails: the other side of one the text says it pays off in, `failure_regime`); whether a cause is bound
to the architecture (`arch_bound`: it names the GPU, its ISA or a resource whose size or presence differs
between architectures) -- an architecture goes into an established fact's condition only then.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from optrace.rows import Precheck
from optrace.wording import FUNCTION_WORDS, NEGATORS, overlap, read, sentences, word_set, words

T = TypeVar("T")

MIN_CLAIM_CHARS = 12
MIN_MECHANISM_CHARS = 40
# an outcome, not a cause: the union of the store's and the admission gate's lists
NON_MECHANISM = re.compile(
    r"no improvement (?:found|over)|flat[- ]within[- ]noise|within noise"
    r"|all (?:\w+\s+){0,3}(?:approaches|trials|variants|attempts) (?:tested|were|failed|flat)"
    r"|tested \d+ approaches|reverted to an earlier|hw floor (?:confirmed|reconfirmed)|no kernel change"
    r"|sanity[_ ]bench|stall[_ ]count|consecutive (?:dead-end|stall|revert)",
    re.I,
)
# bookkeeping and asserted ceilings a mined record writes (the store's lists miss them)
MINED_NON_MECHANISM = re.compile(
    r"lever (?:is |was )?exhausted|\bexhausted\b|\bretired?\b|dead[- ]end recorded"
    r"|\b(?:first|second|third|fourth|fifth|\d+(?:st|nd|rd|th))\s+(?:consecutive\s+)?dead[- ]end"
    r"|(?:hardware|hw)[- ](?:floor|limit reached)|at the (?:hardware |hw )?floor|already optimal"
    r"|nothing (?:left|more) to gain|no further (?:gain|improvement)",
    re.I,
)
SPECULATION = re.compile(
    r"\b(?:may|might|maybe|possibly|perhaps|probably|likely|presumably|seems?|appears? to"
    r"|suspect(?:ed)?|unclear|not sure|we think|i think)\b",
    re.I,
)
# a latency in absolute units, which means nothing without its hardware and shape (self-contained)
ABSOLUTE_LATENCY = re.compile(r"[\d.]+\s*(?:us|µs|μs|ms)\b", re.I)

# --- the judge --------------------------------------------------------------------------------------

Kind = str  # cause | measurement | outcome | advice | restatement | bookkeeping | speculation | unjudged | empty


@dataclass(frozen=True)
class Judgement:
    kind: Kind
    reason: str
    sentence: str | None = None

    @property
    def states_cause(self) -> bool:
        return self.kind == "cause"


LABEL = re.compile(
    r"^\s*(?:\(?\s*)?(bottleneck|root[ _-]?cause|cause|why|reason|explanation|mechanism|because)\s*:\s*", re.I
)
CONNECTIVE = re.compile(
    r"\b(?:because|since|due to|owing to|as a result|caused by|so that|so|thus|hence|therefore|which|leads? to"
    r"|results? in|means? that|whereas)\b",
    re.I,
)
RESTRICTION = re.compile(
    r"\bonly (?:when|if|for|on|with|where|at|below|above|after|before|once|up to)\b|\bunless\b|\brequired?\b"
    r"|\brequires\b|\bexceed(?:s|ed)?\b|\bdoes not fit\b|\bnot supported\b|\bunsupported\b|\bcan not\b"
    r"|\bcannot\b|\bneeds?\b|\b(?:hardware|resource|register|shared[- ]memory) limit\b|\bout of (?:resources?|memory)\b",
    re.I,
)
COST = re.compile(
    r"\b(?:an? )?(?:extra|additional|one more|another|redundant|wasted)\s+[\w.*`-]+(?:\s+[\w.*`-]+)?\s+(?:per|for every|on every|each)\s+\w+",
    re.I,
)
AUXILIARIES = word_set(
    """
    is are was were be been has have had does do did can could will would must should shall never
    """
)
DETERMINERS = word_set(
    """
    the a an this that each every its their these those one both all any no our
    """
)
FIRST_PERSON = frozenset(["i", "we", "my", "our", "us"])
# verbs a sentence starts with when it says what to do (a fix, a lesson), not why: "run the tests on the
# sm_90 runner only", "zero the amax buffer before each launch"
IMPERATIVES = word_set(
    """
    run use keep set compile target zero check avoid add remove pin call pass move make put try reduce
    increase lower raise drop split fuse pad align cast prefer replace switch disable enable hoist
    stage store load read write launch re-check recheck verify ensure guard skip limit cap retry measure
    time profile benchmark clear reset initialise initialize allocate free copy
    """
)
# verbs in their base form, as a plural subject takes them ("batch sizes above 8000 leave ...")
BASE_VERBS = word_set(
    """
    leave need cost take make keep fit hit pay stay wait stall spill share read write load store
    cause force prevent limit hide reach exceed require serialize serialise saturate compete
    contend conflict fail run use issue cover drop help hurt block stop overlap evict thrash
    collide dominate occupy lose waste miss
    """
)
# verbs that report what happened to a run, not why: "amax differs from the reference on 1 of 5 seeds"
OUTCOME_VERBS = word_set(
    """
    differs differ differed diverges diverged mismatches mismatched fails failed passes passed hangs hung
    crashes crashed deadlocks deadlocked regresses regressed errors errored aborts aborted timed
    """
)
# what follows a verb and not a plural noun: its object's article, or a preposition it takes
VERB_OBJECT_STARTS = word_set(
    """
    a an the its their each every one two no more less fewer most half twice on onto into through from
    across over under behind past out away back
    """
)
# the predicate of an outcome: how it measured, not why
OUTCOME = word_set(
    """
    measured measure slower faster regressed regression improved improvement gain gained gains flat
    noise noisy kept reverted geomean latency result results shape shapes version versions floor
    baseline head incumbent percent than kernel variant attempt attempts every all on the it was
    were is and same better worse lost time times run runs tested tried by of vs us ms ns x
    """
)
NUMERIC = re.compile(r"^[-+]?\d[\d.,x]*%?$|^[<>=≤≥~→-]+$")


def _tokens(clause: str) -> list[str]:
    return re.findall(r"[A-Za-z_][\w.*`'/+-]*|[-+]?\d[\d.,x]*%?|[<>=≤≥→~]+", clause)


def _is_identifier(tok: str) -> bool:
    return bool(re.search(r"[_`0-9*]|[a-z][A-Z]", tok)) and bool(re.search(r"[A-Za-z]", tok))


def _has_finite_verb(toks: list[str]) -> bool:
    """A subject and a verb: an auxiliary (is, has, can, never, ...) or an -s/-ed word after a noun phrase
    (a determiner and a word, an identifier, or a noun), never a noun followed by "of" ("the loads of")."""
    low = [t.lower() for t in toks]
    for i, w in enumerate(low):
        if w in AUXILIARIES and i > 0:
            return True
        if i == 0 or not w.isalpha() or len(w) < 3:
            continue
        prev = low[i - 1]
        if w in BASE_VERBS and ((prev.endswith("s") and len(prev) >= 4) or prev.isdigit() or prev in ("they", "we")):
            return True
        verbish = (w.endswith("s") and not w.endswith(("ss", "us", "is", "ous"))) or w.endswith("ed")
        if not verbish or (i + 1 < len(low) and low[i + 1] in ("of", "and", "or")):
            continue
        before = low[max(0, i - 4) : i]
        if any(b in DETERMINERS for b in before[:-1]) or before[-1] in ("it", "they"):
            return True
        # after an identifier only with something following: "x_ptr points to ..." is a clause, while
        # "int4 weights" or "fp16 loads" that end their clause are a noun phrase (a plural, not a verb)
        if _is_identifier(toks[i - 1]) and i + 1 < len(low):
            return True
        if before[-1] in ("only", "also", "still", "always", "then", "now", "just") and i >= 2:
            return True
        if i + 1 < len(low) and low[i + 1] in VERB_OBJECT_STARTS:  # "wave quantisation leaves a partial wave"
            return True
    return False


# what a reading of a counter or a timer says besides its numbers and metric names
MEASURE_WORDS = word_set(
    """
    top stall stalls rate hit throughput is are was were the still of peak achieved occupancy
    instructions issued percent at to from vs and sectors sector request requests per bytes
    utilization util busy pipe active warps cycles ratio count metric metrics counter counters dram
    memory compute sol now only down up rose fell dropped higher lower mean geomean latency us ms
    ns a an in on with dominant largest second first against tolerance shape shapes over median abba
    candidate incumbent reference baseline seeds runs workloads errors error bytes spill spills stores
    loads reports reported ptxas registers register thread threads block blocks warp warps cta ctas
    """
)


def _measurement_clause(clause: str) -> bool:
    toks = _tokens(clause)
    measured = [t for t in toks if NUMERIC.match(t) or _is_identifier(t) or (t.isupper() and len(t) > 1)]
    rest = [t.lower().rstrip(".,;:") for t in toks if t not in measured]
    return bool(measured) and all(w in MEASURE_WORDS for w in rest)


def _measurement_only(clauses: list[str]) -> bool:
    """Every clause reads a counter or a timer: numbers, units, metric names and a few measuring words."""
    return bool(clauses) and all(_measurement_clause(c) for c in clauses)


def _outcome_only(sentence: str) -> bool:
    ws = [w for w in words(sentence) if not w.isdigit()]
    return bool(ws) and all(w in OUTCOME or len(w) <= 2 for w in ws)


# the reason a trace writes in brackets beside a lever: `split reduction across CTAs (atomic contention)`
LEVER_REASON = re.compile(r"\s*\(([^()]{12,})\)\s*$")


def lever_name(lever: str) -> str:
    """The lever without the reason written beside it: what a stated cause must not merely restate."""
    m = LEVER_REASON.search(lever)
    return lever[: m.start()].strip() if m else lever


def _restates(text: str, lever: str | None) -> bool:
    """Most of the text's words are the lever's name: the lever without the reason beside it, and without
    any of its sentences the text quotes (a lever of several sentences may state its reason in one)."""
    if not lever:
        return False
    mine = read(text).content
    if not mine:
        return True
    parts = sentences(lever_name(lever))
    said = " ".join(text.split()).rstrip(".")
    name = " ".join(p for p in parts if p.rstrip(".") not in said) if len(parts) > 1 else lever_name(lever)
    return len(mine & read(name).content) >= 0.7 * len(mine)


def _sides(sentence: str) -> list[str]:
    return [s for s in CONNECTIVE.split(sentence) if s and s.strip(" ,;:()")]


@lru_cache(maxsize=1 << 13)
def judge_sentence(sentence: str, lever: str | None = None, labelled: bool = False) -> Judgement:
    """One sentence (see the module doc)."""
    s = " ".join(sentence.split())
    if len(s) < MIN_CLAIM_CHARS:
        return Judgement("empty", "too short to carry a claim", s)
    if SPECULATION.search(s):
        return Judgement("speculation", f"speculates ({SPECULATION.search(s).group(0)!r})", s)  # type: ignore[union-attr]
    mined = MINED_NON_MECHANISM.search(s)
    if mined:
        return Judgement("bookkeeping", f"bookkeeping or an asserted ceiling ({mined.group(0)!r})", s)
    bookkeeping = NON_MECHANISM.search(s)
    label = LABEL.match(s)
    body = s[label.end() :] if label else s
    clauses = [c for c in re.split(r"[,;()]|\s[—–-]\s", body) if c.strip()]
    if bookkeeping:  # an outcome, unless a cause follows it ("within noise: the halved warp count ...")
        rest = s[bookkeeping.end() :].lstrip(" :;,.-—")
        if len(rest) < MIN_CLAIM_CHARS or not judge_sentence(rest, lever, labelled).states_cause:
            return Judgement("bookkeeping", f"reports an outcome, names no cause ({bookkeeping.group(0)!r})", s)
        return judge_sentence(rest, lever, labelled)
    if (toks := _tokens(body)) and toks[0].lower() in IMPERATIVES and not label:
        return Judgement("advice", "says what to do (a fix or a lesson), not why", s)
    if label or labelled:
        if _restates(body, lever):
            return Judgement("restatement", "restates the lever", s)
        if _outcome_only(body):
            return Judgement("outcome", "an outcome (how it measured), not why", s)
        if (toks := _tokens(body)) and toks[0].lower() in FIRST_PERSON:
            return Judgement("outcome", "an account of what was done, not why", s)
        if _measurement_only(clauses) and not (label and label.group(1).lower() == "bottleneck"):
            return Judgement("measurement", "a measurement in a stated-cause field, no mechanism", s)
        return Judgement("cause", "a stated cause" + (f" ({label.group(1).lower()}:)" if label else ""), s)
    if _outcome_only(s):
        return Judgement("outcome", "an outcome (how it measured), not why", s)
    if _measurement_only(clauses):
        return Judgement("measurement", "a measurement, names no mechanism", s)
    sides = _sides(body)
    if CONNECTIVE.search(body) and any(not _restates(side, lever) and not _outcome_only(side) for side in sides[1:]):
        return Judgement("cause", "a clause joined by a causal connective", s)
    if COST.search(body) and not _restates(body, lever):
        return Judgement("cause", "a stated cost", s)
    if RESTRICTION.search(body) and not _restates(body, lever):
        return Judgement("cause", "a stated restriction", s)
    if _restates(body, lever):
        return Judgement("restatement", "restates the lever", s)
    toks = _tokens(body)
    if toks and toks[0].lower() in FIRST_PERSON:
        return Judgement("outcome", "an account of what was done, not why", s)
    if any(t.lower() in OUTCOME_VERBS for t in toks):
        return Judgement("outcome", "reports what happened (an error, a mismatch), not why", s)
    if any(_has_finite_verb(_tokens(c)) for c in clauses):
        return Judgement("cause", "a clause with a subject and a verb about the kernel", s)
    if _opens_with_a_bare_verb(toks):
        return Judgement("advice", "says what to do (a fix or a lesson), not why", s)
    return Judgement("unjudged", "no structure the judge can read (a noun phrase?): the agent decides", s)


# words a sentence may open with that are no verb: prepositions, conjunctions and quantities
# ("Inside the K loop ...", "Half the threads ...")
NOT_A_VERB = word_set(
    """
    inside outside behind beyond during despite around against among toward towards near past like unlike
    beside besides except until since because although though unless whether whenever half most much many
    few several some twice thrice every
    """
)


def _opens_with_a_bare_verb(toks: list[str]) -> bool:
    """An imperative read by its shape, not its verb: a plain word that is no function word and none of
    the forms a subject or a participle takes (-s, -ed, -ing), then what a verb's object or manner starts
    with -- a determiner, an adverb in -ly, an object pronoun, or code ("Convert explicitly with
    __bfloat162float ...", "Hoist x_ptr out of the loop")."""
    if len(toks) < 3 or not re.fullmatch(r"[A-Za-z][a-z]+", toks[0]):
        return False
    first, second = toks[0].lower(), toks[1]
    closed = FUNCTION_WORDS | DETERMINERS | AUXILIARIES | FIRST_PERSON | NEGATORS | NOT_A_VERB
    if first in closed or re.search(r"(?:s|ed|ing)$", first):
        return False
    return (
        second.lower() in DETERMINERS | {"it", "them", "every", "each"}
        or bool(re.fullmatch(r"[a-z]+ly", second))
        or _is_identifier(second)
    )


# what a text that states no cause says, best first: the most useful reason for the agent
_RANK = ("cause", "unjudged", "measurement", "outcome", "advice", "restatement", "bookkeeping", "speculation", "empty")


def judge(text: object, lever: str | None = None, labelled: bool = False) -> Judgement:
    """The whole text: its first causal sentence, else the most telling reason it states none."""
    found = [judge_sentence(s, lever, labelled) for s in sentences(text)]
    cause = next((j for j in found if j.states_cause), None)
    if cause is not None:
        return cause
    if not found:
        return Judgement("empty", "no text")
    return min(found, key=lambda j: _RANK.index(j.kind))


def causal_sentences(text: object, lever: str | None = None, labelled: bool = False) -> list[str]:
    return [s for s in sentences(text) if judge_sentence(s, lever, labelled).states_cause]


# --- why a lever failed: one reading for partition's precheck and the drafter ---------------------

# (kind, whether it is a stated-cause field, whether it is the version's prose shared with other levers),
# in the order of authority (#26): the structured fields first -- the lever's own stated cause (a
# pitfall's explanation, an experiment's finding, a revert's reason), the explanation of a pitfall its
# version recorded about it, the reason written beside it or in its own text, its fix and lesson, the
# step record's description -- then the commit body, the evidence summary, and last the gate's verdict
# (an error message says what happened, the prose around it why)
CAUSE_ORDER = (
    ("cause", True, False),
    ("pitfall", False, False),
    ("lever-cause", False, False),  # a bracket beside a lever may explain it or only describe it
    ("lever", False, False),  # a lever of several sentences may state its reason in one of them
    ("fix", False, False),
    ("lesson", False, False),
    ("change", False, True),
    ("body", False, True),
    ("evidence-summary", False, True),
    ("gate-verdict", False, True),
)
MAX_CAUSE_SENTENCES = 3
NAMES_THE_LEVER = 0.5  # share of the lever's words a sentence must hold to be about it
_BRACKET = re.compile(r"\(([^()]{8,})\)")
_BOUNDARY = re.compile(r"(?:^|[:;]\s+|,\s+|\)\s*(?:,\s*)?(?:and\s+)?|\band\s+)")


def about_this_lever(sentence: str, lever: str) -> str | None:
    """The part of a sentence of shared prose (one version, several levers) that is about this lever: the
    `<lever> (<reason>)` span that names it, else the whole sentence when it names the lever, else None."""
    best, best_score = None, 0.0
    for m in _BRACKET.finditer(sentence):
        head_start = max((b.end() for b in _BOUNDARY.finditer(sentence, 0, m.start())), default=0)
        span = sentence[head_start : m.end()].strip()
        score = overlap(lever, sentence[head_start : m.start()])
        if score > best_score:
            best, best_score = span, score
    if best is not None and best_score >= NAMES_THE_LEVER:
        return best
    return sentence if overlap(lever, sentence) >= NAMES_THE_LEVER else None


_LIST_BREAK = re.compile(r";\s+|,\s+")


@lru_cache(maxsize=1 << 12)
def parts_about(text: str, lever: str, others: tuple[str, ...]) -> tuple[str, ...]:
    """The parts of one version's prose about this lever, where the version tried others too: each
    sentence's part about it (about_this_lever); a sentence that lists levers ("split-K over 2 programs
    ..., BLOCK_M=64 for M <= 128", "split-K with atomics; smaller M tiles for small batches") keeps only
    the list items about this one. A sentence about no lever is about none of them."""
    out = []
    for s in sentences(text):
        items = [p for p in _LIST_BREAK.split(s) if p.strip()]
        about = [[n for n in (lever, *others) if about_this_lever(p, n)] for p in items]
        if len(items) > 1 and sum(bool(a) for a in about) > 1:
            out += [p for p, a in zip(items, about, strict=True) if a == [lever]]
        elif (part := about_this_lever(s, lever)) is not None:
            out.append(part)
    return tuple(out)


def pitfall_about(pitfall: object, lever: str) -> list[str]:
    """The explanation of a recorded pitfall whose name (its first sentence) names the lever."""
    parts = sentences(pitfall)
    if parts and pitfall != lever and overlap(parts[0], lever) >= NAMES_THE_LEVER:
        return parts[1:]
    return []


def _candidates(
    sources: Iterable[tuple[str, object, T]], lever: str, own_prose: bool, kind: str, labelled: bool, shared: bool
) -> Iterator[tuple[str, T, Judgement]]:
    for k, text, tag in sources:
        if k != kind:
            continue
        parts = sentences(text)
        if kind == "lever" and len(parts) < 2:  # one sentence names the lever; of several, one may explain it
            continue
        for s in parts:
            part = s if own_prose or not shared else about_this_lever(s, lever)
            if part:
                yield part, tag, judge_sentence(part, lever, labelled)


def stated_cause(sources: Sequence[tuple[str, object, T]], lever: str, own_prose: bool) -> list[tuple[str, T]]:
    """(sentence, tag) of the causal sentences of the first kind in CAUSE_ORDER whose sources state a
    cause of at least MIN_MECHANISM_CHARS, at most three; [] when none does. `sources` are (kind, text,
    tag) in packet order (a pitfall's: only pitfall_about's sentences); an absolute latency is no cause
    to serve."""
    for kind, labelled, shared in CAUSE_ORDER:
        found = [
            (part, tag)
            for part, tag, j in _candidates(sources, lever, own_prose, kind, labelled, shared)
            if j.states_cause and not ABSOLUTE_LATENCY.search(part)
        ][:MAX_CAUSE_SENTENCES]
        if found and sum(len(part) for part, _ in found) >= MIN_MECHANISM_CHARS:
            return found
    return []


def precheck(sources: Sequence[tuple[str, object, T]], lever: str, own_prose: bool) -> tuple[Precheck, str]:
    """("ok" | "flag", reason) for a failed lever, from what stated_cause reads. A flag says why the lever
    may not make an established fact; it is a hint for the agent, never a drop."""
    found = stated_cause(sources, lever, own_prose)
    if found:
        j = judge_sentence(found[0][0], lever, any(k == "cause" and t == found[0][1] for k, _, t in sources))
        cond = " and a condition" if stated_condition([found[0][0], lever]) else ""
        return "ok", f"states a cause ({j.reason}){cond}"
    judged = [
        j
        for kind, labelled, shared in CAUSE_ORDER
        for _, _, j in _candidates(sources, lever, own_prose, kind, labelled, shared)
    ]
    if not judged:
        return "flag", "no text that could state a cause"
    best = min(judged, key=lambda j: _RANK.index(j.kind))
    if best.kind == "cause":
        return "flag", f"a cause shorter than {MIN_MECHANISM_CHARS} characters (or only with absolute latencies)"
    return "flag", best.reason


# --- conditions -------------------------------------------------------------------------------------

DTYPE_RE = re.compile(r"\b(?:bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int8|e4m3|e5m2|bfloat16|float16|float32)\b", re.I)
SHAPE_RE = re.compile(
    r"\b(?:batch_size|batch|seq_len|seqlen|num_tokens|tokens|hidden(?:_size)?|head_dim|[MNK])"
    r"\s*(?:<=|>=|==|<|>|=|≤|≥)\s*\d+"
)
# what a cause must name to hold only on the architecture it was seen on: the GPU, its ISA, or a resource
# whose size or presence differs between architectures
ARCH_BOUND = re.compile(
    r"\b(?:sm_?\d{2,3}a?|gfx\d{3,4}|__CUDA_ARCH__|compute capability|hopper|blackwell|ampere|ada|cdna\d|rdna\d"
    r"|[abhl]\d{2,3}n?|gb\d{3}|mi\d{3}x?|rtx\s?\d{4}|a6000|shared memory|smem|lds|l1|l2|sms?\b|register file"
    r"|registers? per (?:sm|block)|occupancy|resident|waves?|tma|wgmma|tcgen05|tensor cores?|tensor memory"
    r"|cp\.async|ldmatrix|mma|wmma|mfma|tmem|cluster|dsmem|bank conflicts?|banks?|warp ?group|async copy)\b",
    re.I,
)
# the ISA an architecture compiles for: an established fact's sm_arch when the packet names no product ISA
ARCH_ISA = {
    "ampere": "sm_80",
    "hopper": "sm_90",
    "blackwell": "sm_100",
    "blackwell-ultra": "sm_103",
    "blackwell-geforce": "sm_120",
    "cdna3": "gfx942",
    "cdna4": "gfx950",
}


# a clause saying where a lever pays off: the regime it names is where the lever works, so the regime
# where it fails is the other side ("only helps batch_size >= 1024" fails below 1024)
PAYOFF = re.compile(
    r"\b(?:only (?:helps|pays off|wins|works|makes sense)|(?:helps|pays off|wins|works) only|pays off"
    r"|belongs to|is worth it|only worth it|is meant for)\b",
    re.I,
)
_SEGMENT = re.compile(r"[^.;:!?]+")
_REGIME_PARTS = re.compile(r"(.*?)\s*(<=|>=|==|<|>|=|≤|≥)\s*(\d+)$")
OTHER_SIDE = {"<=": ">", "≤": ">", ">=": "<", "≥": "<", "<": ">=", ">": "<="}


def other_side(regime: str) -> str | None:
    """The regime on the other side of a bound ("hidden <= 1024" -> "hidden > 1024"); an equality has none."""
    m = _REGIME_PARTS.match(regime)
    if not m or m.group(2) not in OTHER_SIDE:
        return None
    return f"{m.group(1)} {OTHER_SIDE[m.group(2)]} {m.group(3)}"


def failure_regimes(text: str) -> dict[str, str | None]:
    """Each shape regime the text names, as written -> the regime where a failed lever fails by that
    statement: the regime itself, or the other side of one named where the text says the lever pays off
    (None: an equality named as where it pays off states no failure regime)."""
    out: dict[str, str | None] = {}
    for seg in _SEGMENT.finditer(text or ""):
        for m in SHAPE_RE.finditer(seg.group(0)):
            pays_off = PAYOFF.search(seg.group(0)[: m.start()])
            out.setdefault(m.group(0), other_side(m.group(0)) if pays_off else m.group(0))
    return out


def failure_regime(text: str) -> str | None:
    """The one regime where a failed lever fails by what the text states (two different ones state none)."""
    found = set(failure_regimes(text).values())
    return found.pop() if len(found) == 1 else None


def single_match(pattern: re.Pattern, text: str) -> str | None:
    """The one value the text states (two different dtypes, say, state no single condition)."""
    found = {m.group(0) for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None


def stated_condition(texts: list[str]) -> dict[str, str]:
    """The shape regime and dtype the texts state (each once), as written."""
    joined = " ".join(t for t in texts if t)
    found = {"shape_regime": failure_regime(joined), "dtype": single_match(DTYPE_RE, joined)}
    return {k: v for k, v in found.items() if v}


def arch_bound(text: str) -> bool:
    return bool(ARCH_BOUND.search(text or ""))


def cause_arch_bound(cause: str, lever: str) -> bool:
    """Whether a lever's failure holds only on the architecture it was seen on: its cause names the GPU,
    its ISA or an architecture-bound resource beyond what the lever itself names (a cause that restates
    "staging in shared memory" names the lever, not a limit of the architecture)."""
    own = set(re.findall(r"[a-z0-9_.]+", (lever or "").lower()))
    return any(not set(re.findall(r"[a-z0-9_.]+", m.group(0).lower())) <= own for m in ARCH_BOUND.finditer(cause or ""))


# --- symptoms ---------------------------------------------------------------------------------------

# The failure a text states, as a symptom tag spelled as a capture's SYMPTOMS line spells its own
# (`memory-bound`, `tail-effect`: pipeline_facts): a capture names profiler findings, a pitfall states an
# error. A tag is a name for what its phrases say: the claims gate reads a tag as the phrase of
# the cited text that states it, and a tag no cited phrase states as its own words.
SYMPTOM_PHRASES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (tag, re.compile(p, re.I))
    for tag, p in (
        ("misaligned-address", r"\bmisaligned (?:address|access|loads?|stores?)\b"),
        ("illegal-memory-access", r"\billegal memory access\b|\bout[- ]of[- ]bounds (?:access|reads?|writes?)\b"),
        ("illegal-instruction", r"\billegal instruction\b"),
        (
            "compile-failure",
            r"\bfail(?:s|ed)? to (?:compile|build)\b|\b(?:did|does|do) not (?:compile|build)\b"
            r"|\bcompil(?:e|ation|er) (?:error|fail\w*)|\bbuild (?:error|fail\w*)",
        ),
        (
            "launch-failure",
            r"\blaunch (?:fails|failed|failure|error)\b|\binvalid (?:launch )?(?:configuration|argument)\b"
            r"|\btoo many resources requested\b",
        ),
        ("hang", r"\bhang(?:s|ed|ing)?\b|\bdeadlock(?:s|ed)?\b"),
        ("nan-output", r"\bNaNs?\b"),
        (
            "wrong-results",
            r"\b(?:wrong|incorrect) (?:results?|outputs?|values|answers?)\b|\bmismatch(?:es|ed)?\b"
            r"|\bdiffers? from the reference\b",
        ),
        ("register-spill", r"\bspill(?:s|ed|ing)?\b"),
    )
)
# a phrase the words just before deny ("does not hang", "to avoid NaN") states no symptom
_DENIED = re.compile(r"\b(?:no|not|never|without|avoids?|prevents?)\W+(?:\w+\W+)?$", re.I)


@lru_cache(maxsize=1 << 12)
def stated_symptoms(text: str) -> tuple[tuple[str, str], ...]:
    """(tag, the phrase as written) of each symptom (SYMPTOM_PHRASES) the text states, in the order it
    states them, each tag once."""
    found: dict[str, tuple[int, str]] = {}
    for tag, pattern in SYMPTOM_PHRASES:
        for m in pattern.finditer(text or ""):
            if not _DENIED.search(text[: m.start()]):
                found[tag] = (m.start(), m.group(0))
                break
    return tuple((tag, phrase) for tag, (_, phrase) in sorted(found.items(), key=lambda kv: kv[1][0]))
