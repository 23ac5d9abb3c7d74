"""Gate `claims`: every string a mined record serves is a claim, and each claim says what the evidence of
its own packet it cites says.

A record carries its citations in `evidence.raw.evidence_extra.claims` (raw is human-only: retrieval never
serves it, and the contract lets raw hold evidence_extra):

    {"packet": "<seg_id>", "fields": {"<path>": [{"says": "...", "cites": ["e3", "measurements.geomean_us"],
                                                   "slots": {"6.1": "measurements.improve_pct_vs_floor"}}]}}

The rule, for records mined from a trace:
1. Coverage. Every claim string (every string of the record and every key of an open map, but those
   EXEMPT lists: identity, enumerated categories, quoted code, structured facts other gates bind) has an
   entry at its path (`payload.next_steps[0]`, `payload.config.BLOCK<key>`), and its claims' `says`, joined
   by a space, are the string (white space aside). No entry names a path the record does not hold, and
   `packet` is the record's own packet.
2. Citations. Each claim cites at least one id, each an evidence item of this packet (`agent_facing.
   evidence`) or a measurement slot that resolves in it (optrace.slots), and an item of a kind the field
   may rest on (KINDS_FOR: a next step on an open direction, an approach on what the parent did (a failed
   lever's never on what the lever itself changed), a strategy's bottleneck on its parent's capture, ...):
   a citation of another packet, of nothing, or of another segment's statements fails.
3. Each claim against what it cites (gates.trace.claim_rules): its words, numbers, negations, directions,
   speed, cause and effect, verdict, scope and correctness words, the clause each word stands in and the
   gain or loss a number is written as (gates.trace.claim_binding) (a tag, a slug without function words:
   its words, numbers, negators and scope words); an established fact's shape regime is exactly where the
   cited items say the lever fails (the other side of one they say it pays off in). A symptom tag a cited
   item states (optrace.facts: `compile-failure` for "failed to compile") is read as that item's phrase;
   any other is its own words.
4. In a failed lever's record, a cause, observation or established fact that names another lever its
   version's prose also names (the packets manifest names every segment's lever) must name its own
   lever too: one version's prose about several levers, each record keeps the sentence about its own,
   and every claim rests on that prose only in its parts about its own lever (facts.parts_about: the
   version's body, change, subject and expected impact); its lesson, retry condition or hypothesis
   advises doing that lever, or any part of it ("keep 64-bit loads" of "1024 threads per row with
   64-bit loads", the lever named before its verb), only where a cited item advises that part. (A
   claim naming another segment's lever elsewhere needs that lever's words in what it cites: rule 3.)
5. A cause field (mechanism, root_cause, established_fact.mechanism) states a cause sentence by sentence,
   as optrace.facts judges it (read as a stated-cause field when the cited item it rewords -- the one it
   shares most words with -- is one).
6. Each value of `payload.config` is written beside its key (`maxnreg=168`, `GROUP_M: 8`, `two rows per
   block` for rows_per_block) in an item its key's claims cite: the value the step set, not any number
   of the packet.
This replaces the rule that every word of a cause appear somewhere in the packet: a false sentence of the
packet's own words fails rule 3, and a true rewording that cites its evidence passes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from functools import cached_property, lru_cache
from itertools import pairwise

from optrace.facts import judge, parts_about
from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.trace import claim_binding as binding
from optrace.gates.trace import claim_rules as rules
from optrace.gates.trace.model import CLAIMS_AT, PacketEvidence, needs_packet
from optrace.gates.trace.numbers import normalize
from optrace.slots import kind_of, resolve
from optrace.wording import content_words, read, sentences, word_set

EXEMPT = re.compile(
    r"^(?:schema|id|type|level|status|episode_key"
    r"|retrieval\.(?:scope|generality|signals\.(?:bottleneck|metrics|shape_regime))(?:\..*|\[.*)?"
    r"|payload\.problem\.(?:target|operator|dsl)|payload\.verdict|payload\.implementation\..*|payload\.cost\..*"
    r"|payload\.trace\.builds_on\.is_baseline"
    r"|evidence\.summary\.(?:confidence|measured_on(?:\..*)?|bottleneck_evidence\.(?:basis|tool)|mechanism_metrics.*)"
    r"|evidence\.raw\.(?:source_repo|version|git_commit|hunk_index|file_paths.*|effect\.basis|evidence_extra\.claims.*)"
    r"|worth\.rank.*|worth\.track.*|worth\.gain\.(?:basis|kind|primary|correctness\.gate)"
    r"|worth\.gain\.(?:metrics|regressions)\[\d+\]\.(?:metric|direction|source|unit))$"
)
# objects whose keys are free (the contract leaves them open), with the keys it names: any other key
# says something, and is a claim too
OPEN_MAPS = {
    "payload.config": frozenset(),
    "payload.problem.shape_contract": frozenset(),
    "evidence.raw.evidence_extra": frozenset({"claims"}),
    "evidence.summary.bottleneck_evidence": frozenset({"basis", "tool", "note"}),
    "evidence.raw.effect": frozenset(
        {"basis", "new_geomean_us", "parent_geomean_us", "baseline_geomean_us", "delta_pct", "measurement",
         "comparable", "note"}
    ),
}  # fmt: skip
TAG_FIELDS = re.compile(
    r"^(?:retrieval\.technique_tags|payload\.trace\.technique_here|retrieval\.signals\.symptoms)\[\d+\]$"
)
# a failed lever's fields that say what happened to it and why (its lesson may name what to try instead)
LEVER_FIELDS = re.compile(
    r"^payload\.(?:root_cause|observed|would_retry_if|hypothesis|established_fact\.[\w.]+)(?:\[\d+\])?$"
)
CAUSE_FIELDS = ("payload.mechanism", "payload.root_cause", "payload.established_fact.mechanism")
STATED_CAUSE_KINDS = {"cause"}  # a stated-cause field; a bracket beside a lever is judged by its structure
# what one version says, shared by the packets of every lever it tried
VERSION_PROSE = frozenset({"body", "expected-impact", "change", "subject"})
RULED_OUT_BY = {"cause", "lever-cause", "observed", "gate-verdict"}  # what says why a lever failed
ALL_KINDS = None  # any kind may back the field
_OWN = {
    "correctness", "change", "subject", "body", "experiment", "expected-impact", "evidence-summary", "stated-bottleneck", "category",
    "segment",
}  # fmt: skip
_CAUSE = {
    "correctness", "cause", "observed", "lever-cause", "change", "fix", "lesson", "gate-verdict", "body", "evidence-summary", "stated-bottleneck",
    "expected-impact", "conclusion", "capture-symptom", "capture-stall", "pitfall", "pitfall-fix", "lever", "subject",
}  # fmt: skip
_CAPTURE = {"conclusion", "capture-symptom", "capture-stall", "bottleneck-type", "stated-bottleneck"}
_PARENT = {"parent-conclusion", "parent-symptom", "parent-stall", "parent-bottleneck-type", "bottleneck-type"}
# (field pattern, record types or None for all, the item kinds a claim there may cite)
KINDS_FOR: tuple[tuple[re.Pattern, tuple[str, ...] | None, set[str] | None], ...] = tuple(
    (re.compile(p), types, kinds)
    for p, types, kinds in (
        (r"^payload\.next_steps\[\d+\]$", None, {"direction", "direction-rationale"}),
        (r"^payload\.trace\.builds_on\.approach$", ("strategy",), {"previous-approach", "segment"}),
        # a failed lever was tried on its parent: what the lever itself changed is no approach it built on
        (r"^payload\.trace\.builds_on\.approach$", ("anti-strategy",), {"previous-approach"}),
        (r"^payload\.trace\.builds_on\.approach$", None, {"change", "subject", "body"}),
        (r"^payload\.trace\.techniques_applied_before\[\d+\]$", None, {"previous-approach"}),
        (r"^payload\.problem\.statement$", None, {"operator", "segment"}),
        (r"^payload\.problem\.bottleneck$", ("strategy",), {"stated-bottleneck"} | (_PARENT - {"bottleneck-type"})),
        (r"^payload\.problem\.bottleneck$", None, {"conclusion"}),
        (r"^evidence\.summary\.bottleneck_evidence\.note$", ("strategy",), {"parent-conclusion"}),
        (r"^evidence\.summary\.bottleneck_evidence\.note$", None, {"conclusion"}),
        (r"^payload\.(?:change|goal)$", ("strategy",), _OWN),
        # what a lever was meant to achieve: its name's purpose, its step record's expected impact, its body
        (r"^payload\.goal$", None, {"lever", "segment", "change", "subject", "body", "expected-impact", "correctness"}),
        # why the step worked: never its own after-profile, which says what limits the new kernel (the
        # problem the next step attacks); the parent's capture says what this one attacked
        (r"^payload\.mechanism$", ("strategy",), _OWN | {"parent-conclusion"}),
        (r"^payload\.attempted$", None, {"lever", "change", "subject"}),
        (r"^payload\.lesson$", None, _CAUSE | {"direction", "segment"}),
        # what was observed is what happened, not the advice to fix it
        (r"^payload\.observed$", None, _CAUSE - {"fix", "pitfall-fix"}),
        (r"^payload\.(?:root_cause|hypothesis|would_retry_if)$", None, _CAUSE),
        # a fact's cause rests on what the trace states, never on the pipeline's own description of the segment
        # (its condition may name the segment's identity)
        (r"^payload\.established_fact\.condition\.", None, _CAUSE | {"segment"}),
        (r"^payload\.established_fact\.", None, _CAUSE),
        # an open map of this step's configuration says what the step itself did
        (
            r"^payload\.(?:config|problem\.shape_contract)\.",
            None,
            {"change", "subject", "body", "experiment", "operator"},
        ),
        (r"^payload\.applies_when\[\d+\]$", None, _OWN | _PARENT),
        (
            r"^retrieval\.technique_tags\[\d+\]$",
            None,
            {"change", "subject", "lever", "lever-cause", "cause", "category"},
        ),
        (
            r"^payload\.trace\.technique_here\[\d+\]$",
            None,
            {"change", "subject", "lever", "lever-cause", "cause", "category"},
        ),
        (r"^retrieval\.signals\.symptoms\[\d+\]$", ("strategy",), _PARENT | {"stated-bottleneck"}),
        (r"^retrieval\.signals\.symptoms\[\d+\]$", None, _CAPTURE | {"lever", "cause"}),
        (r"^retrieval\.triggers\[\d+\]$", ("strategy",), _PARENT | {"stated-bottleneck", "segment", "change"}),
        (r"^retrieval\.triggers\[\d+\]$", None, _CAPTURE | {"lever", "cause", "segment"}),
        (r"^worth\.gain\.", None, {"gate-verdict", "segment", "correctness"}),
        (r"^evidence\.raw\.effect\.", None, {"gate-verdict", "segment", "correctness"}),
        (r"^.*$", None, _OWN | _CAUSE | _CAPTURE | _PARENT | {"operator"}),
    )
)


def kinds_for(path: str, record_type: object) -> set[str] | None:
    if record_type is None or isinstance(record_type, str):  # hashable: one scan of KINDS_FOR per field and type
        return _kinds_for(path, record_type)
    return _scan_kinds(path, record_type)


@lru_cache(maxsize=1 << 12)
def _kinds_for(path: str, record_type: str | None) -> set[str] | None:
    return _scan_kinds(path, record_type)


def _scan_kinds(path: str, record_type: object) -> set[str] | None:
    for pattern, types, kinds in KINDS_FOR:
        if pattern.match(path) and (types is None or record_type in types):
            return kinds
    return ALL_KINDS


@lru_cache(maxsize=1 << 14)
def exempt(loc: str) -> bool:
    """EXEMPT on one location; records of a trace share their locations, so each is matched once."""
    return EXEMPT.match(loc) is not None


def claim_strings(record: dict) -> Iterator[tuple[str, str]]:
    """(path, text) of every claim string of the record (rule 1)."""
    # each node carries its location as format_loc writes it before the strip of leading dots, built
    # from its parent's: no path is formatted again for each node
    stack: list[tuple[str, object]] = [("", record)]
    root = True
    while stack:
        raw, node = stack.pop()
        loc = raw.lstrip(".")
        if not root and exempt(loc):
            continue
        root = False
        if isinstance(node, dict):
            known = OPEN_MAPS.get(loc)
            if known is not None:
                yield from ((f"{loc}.{key}<key>", str(key)) for key in node if key not in known)
            stack.extend((f"{raw}[{k}]" if isinstance(k, int) else f"{raw}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{raw}[{i}]", v) for i, v in enumerate(node))
        elif isinstance(node, str) and node.strip():
            yield loc, node


def collapsed(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=1 << 12)
def _lever_words(text: str) -> frozenset[str]:
    return content_words(text)


def names(text: str, lever: str) -> bool:
    """The text names the lever: most of its content words (at least two) are the text's."""
    mine = _lever_words(lever)
    return len(mine) >= 2 and len(mine & content_words(text)) >= max(2, 0.6 * len(mine))


class PacketClaims:
    """One packet's evidence as the claims rule reads it."""

    def __init__(self, ev: PacketEvidence):
        self.ev, agent = ev, ev.packet.agent_facing
        self.agent = agent
        items = agent.get("evidence")
        listed = items if isinstance(items, list) else []
        self.items = {i["id"]: i for i in listed if isinstance(i, dict) and isinstance(i.get("id"), str)}
        op, scope = obj(agent, "operator"), obj(ev.packet.target, "scope")
        identity = [str(v) for v in list(scope.values()) + [op.get("gpu"), op.get("dsl"), op.get("harness")] if v]
        identity += ["kernel", "operator"]
        self.identity = frozenset(w for t in identity for w in read(t).all_words)
        self.identity_runs = frozenset(w.lower() for t in identity for w in rules.GLUED.findall(normalize(t)))
        m = obj(agent, "measurements")
        change = m.get("improve_pct_vs_floor")
        self.change = change if type(change) in (int, float) else None
        floor, geo = m.get("floor_before_us"), m.get("geomean_us")
        self.exact = (
            (Decimal(repr(floor)) - Decimal(repr(geo))) / Decimal(repr(floor)) * 100
            if isinstance(floor, (int, float))
            and isinstance(geo, (int, float))
            and floor > 0
            and not isinstance(floor, bool)
            and not isinstance(geo, bool)
            else None
        )
        self.correctness = tuple(
            sorted((k, v) for k, v in obj(m, "correctness").items() if isinstance(v, (str, int, float)))
        )
        measured = m.get("shapes_measured")
        self.shapes_measured = measured if type(measured) is int else None
        self.is_baseline = obj(agent, "builds_on").get("was_the_untouched_baseline") is True
        lever = agent.get("the_failed_lever")
        self.lever = lever if isinstance(lever, str) else None
        self.check_refuted = any(
            i.get("kind") in RULED_OUT_BY and isinstance(i.get("text"), str) and rules.states_failed_check(i["text"])
            for i in self.items.values()
        )
        self.own_names = {
            n for n in (agent.get("the_failed_lever"), obj(agent, "what_the_run_said").get("change")) if n
        }

    @cached_property
    def foreign_words(self) -> frozenset[str]:
        """The packet's own words in letters outside ASCII (a "µs", a name the trace spells so)."""
        texts = [s for _, s in claim_strings(self.agent)]
        return frozenset(w for t in texts for w in rules.foreign_words(t))

    @cached_property
    def levers_sharing_prose(self) -> list[tuple[str, frozenset[str], float]]:
        """(lever, its words, how many a text must hold to name it) of the other failed levers of its
        version (the packets manifest's shares_prose_with)."""
        name_of = self.ev.trace.name_of
        others = sorted(
            name_of[sid] for sid in self.ev.trace.prose_peers.get(self.ev.packet.seg_id, ()) if sid in name_of
        )
        return [(n, ws, max(2, 0.6 * len(ws))) for n in others if len(ws := _lever_words(n)) >= 2]

    def rewords_a_stated_cause(self, says: str, cites: list[str]) -> bool:
        """The cited item closest to the claim (most content words shared) is a stated-cause field: the
        claim is read as that field is (optrace.facts: `labelled`)."""
        mine = content_words(says)
        scored = [
            (len(mine & content_words(self.items[c]["text"])), self.items[c].get("kind"))
            for c in cites
            if c in self.items and isinstance(self.items[c].get("text"), str)
        ]
        if not scored:
            return False
        best = max(score for score, _ in scored)
        return best > 0 and all(kind in STATED_CAUSE_KINDS for score, kind in scored if score == best)

    def text_of(self, c: str) -> str | None:
        """An item's text as this record may rest on it: the version's prose, where the version tried
        other levers too, only in its parts about this lever (facts.parts_about); None for none."""
        item = self.items.get(c, {})
        text = item.get("text")
        if not isinstance(text, str):
            return None
        if self.lever is not None and self.levers_sharing_prose and item.get("kind") in VERSION_PROSE:
            others = tuple(name for name, _, _ in self.levers_sharing_prose)
            return " ".join(parts_about(text, self.lever, others)) or None
        return text

    def cited(self, cites: list[str]) -> rules.Cited:
        """What the claim rests on: the cited items' texts (text_of) and slots."""
        texts = tuple(t for c in cites if (t := self.text_of(c)))
        meanings = tuple(k.meaning + " " + c.replace(".", " ") for c in cites if (k := kind_of(c)) is not None)
        return cited_of(
            texts,
            meanings,
            self.identity,
            self.identity_runs,
            self.change,
            self.correctness,
            self.is_baseline,
            self.shapes_measured,
            self.check_refuted,
        )


@lru_cache(maxsize=1 << 14)
def said_against(
    field: str,
    says: str,
    slots: tuple[tuple[str, str, float | int | None], ...],
    cited: rules.Cited,
    exact: Decimal | None,
    record_type: str,
    stated_cause: bool,
    quoted: bool = False,
) -> tuple[str, ...]:
    """Rule 3 and 5 for one claim: what it says against what it cites (`field`: a tag, a cause field, or
    prose; `quoted`: the claim is a whole cited item or sentence, which says what its evidence says).
    Records of one trace repeat claims (one operator, one GPU, the same tags): each distinct claim is
    judged once."""
    says_read = read(says)
    problems = (
        []
        if quoted
        else rules.content(
            read(binding.slug_content(says, cited)) if field == "tag" else rules.without_connectives(says, says_read),
            cited,
        )
        + rules.numbers(says, slots, cited, exact, spelled_counts=field != "tag")
    )
    if quoted:
        pass
    elif field == "tag":  # a slug drops the function words its polarity and direction turn on
        problems += (
            rules.negators(says_read, cited)
            + binding.slug_stance(says, cited)
            + rules.scope(says_read, cited, says.replace("-", " "))
        )
    else:
        problems += (
            rules.polarity(says_read, cited)
            + rules.direction(says_read, cited)
            + rules.speed(says_read, cited)
            + rules.cause_order(says, cited)
            + rules.verdict(says_read, cited, record_type)
            + rules.scope(says_read, cited, says)
            + rules.correctness(says, cited)
            + rules.placed_numbers(says_read, says, cited)
            + rules.payoff_regime(says, cited)
            + rules.kept_qualifiers(says_read, says, cited)
            + binding.traded_words(says, closest_sentences(says_read, cited))
            + binding.number_sense(says, slots, cited.texts)
        )
    if field == "cause":
        j = judge(says, None, stated_cause)
        if not j.states_cause:
            problems.append(f"states no cause ({j.reason})")
    return tuple(problems)


def closest_sentences(says: object, cited: rules.Cited) -> list[str]:
    """The cited sentences sharing the most content words with the claim (the ones it rewords)."""
    scored = [(len(r.content & says.content), t) for r, t in zip(cited.sentences, cited.sentence_texts, strict=True)]  # type: ignore[attr-defined]
    best = max((n for n, _ in scored), default=0)
    return [t for n, t in scored if n == best] if best else []


@lru_cache(maxsize=1 << 13)
def cited_of(*parts: object) -> rules.Cited:
    """One Cited per distinct evidence (its cached readings are then made once per trace, not per claim)."""
    return rules.Cited(*parts)  # type: ignore[arg-type]


def restates_what_rules_it_out(says: str, cites: list[str], pc: PacketClaims) -> bool:
    """A retry condition asserting (negating nothing it asserts) what a cited cause states, word for word or nearly
    (four fifths of its content words one such item's): the cause that rules the lever out is no condition
    under which to retry it."""
    r = read(says)
    mine = {t.canon for t in r.tokens if t.negated}
    for c in cites:
        item = pc.items.get(c, {})
        if item.get("kind") in RULED_OUT_BY and isinstance(item.get("text"), str) and r.content:
            theirs = read(item["text"])
            same_sense = mine <= {t.canon for t in theirs.tokens if t.negated}  # negates nothing the cause asserts
            if same_sense and len(r.content & theirs.content) >= 0.8 * len(r.content):
                return True
    return False


# imperatives that say to do something (not "avoid", "drop", "check" ...), optrace.facts' IMPERATIVES
ADVISING = word_set(
    """
    run use keep set compile target add pin call move make put try increase raise split fuse pad align cast
    prefer switch enable hoist stage store launch retry allocate copy apply adopt restore reapply
    """
)
LEVER_JOINS = re.compile(r"\s+(?:with|and|plus|using|via|then|on)\s+|[,;:]\s*|\s[—–-]\s")
COUNTED = re.compile(r"(?<![\w.])\d+(?:x\d+)*[\s-]+[A-Za-z]+")
ADVICE_CLAUSES = re.compile(r"[:;—–]|,\s*(?:then|and)\s|\.\s")
ADVICE_AFTER = frozenset({"should", "must", "to", "always", "please", "just"})


@lru_cache(maxsize=1 << 12)
def lever_parts(lever: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """(numbers, content words) of the whole lever, of each of its parts ("1024 threads per row", "64-bit
    loads" of "1024 threads per row with 64-bit loads") and of each count it makes ("4096 threads"); a
    part with no number needs two words."""
    parts = [p for p in LEVER_JOINS.split(lever) if p and p.strip()]
    parts += [m.group(0) for m in COUNTED.finditer(lever)]  # each count of the lever ("4096 threads")
    out = []
    for part in dict.fromkeys([lever, *parts]):
        nums, words = frozenset(re.findall(r"\d+", part)), content_words(part)
        if nums or len(words) >= 2:
            out.append((nums, words))
    return tuple(out)


def _advises(sentence: str) -> bool:
    """A clause of the sentence opens with an imperative that says to do something, or one follows
    "should", "to", "must" ("1024 threads per row: keep it.", "retry it with 64-bit loads")."""
    for clause in ADVICE_CLAUSES.split(sentence):
        toks = read(clause).tokens
        if toks and toks[0].raw in ADVISING and not toks[0].negated:
            return True
        if any(a.raw in ADVICE_AFTER and b.raw in ADVISING and not b.negated for a, b in pairwise(toks)):
            return True
    return False


def advised_parts(text: str, lever: str) -> frozenset[int]:
    """The parts of the lever (lever_parts) a sentence of the text advises doing: an advising sentence
    (_advises) asserting, not negating, every number of the part and most of its words (three fifths)."""
    out: set[int] = set()
    for s in sentences(text) or [text]:
        if not _advises(s):
            continue
        asserted = {c for t in read(s).tokens if not t.negated for c in (t.raw, *t.canon)}
        for k, (nums, words) in enumerate(lever_parts(lever)):
            need = max(1 if nums else 2, 0.6 * len(words))
            if nums <= asserted and len(words & asserted) >= need:
                out.add(k)
    return frozenset(out)


ADVICE_FIELDS = frozenset({"payload.lesson", "payload.would_retry_if", "payload.hypothesis"})


def _value_forms(value: object) -> list[str] | None:
    """How a configuration value may be written (an int also as its count word), or None for a value
    no text writes (an object)."""
    if isinstance(value, bool):
        return [str(value).lower()]
    if isinstance(value, int):
        word = next((w for w, n in rules.SMALL_NUMBERS.items() if n == str(value)), None)
        return [str(value)] + ([word] if word else [])
    if isinstance(value, float):
        return [repr(value), format(value, "g")]
    if isinstance(value, str) and value.strip():
        return [value.strip()]
    return None


def written_beside(key: str, value: object, texts: tuple[str, ...]) -> bool:
    """A cited text writes the value beside its key: `key=value`, `key: value`, `key of value`, or the
    value before the key's words (`2 rows per block` for rows_per_block, `8 warps` for num_warps); a
    list, each of its values so."""
    if isinstance(value, list):
        return bool(value) and all(written_beside(key, v, texts) for v in value)
    forms = _value_forms(value)
    if forms is None:
        return False
    parts = [p for p in re.split(r"[\s_-]+", key.strip()) if p]
    if not parts:
        return False
    k = r"[\s_-]*".join(map(re.escape, parts))
    bare = r"[\s_-]*".join(map(re.escape, parts[1:])) if parts[0].lower() in {"num", "n", "number"} else None
    v = "|".join(re.escape(f) for f in forms)
    after = rf"(?<![\w]){k}\s*(?:=|:|\bof\b|\bis\b|\bto\b)?\s*(?:{v})(?![\w.])"
    before = rf"(?<![\w.])(?:{v})[\s-]+(?:{k}{'|' + bare if bare else ''})(?!\w)"
    return any(re.search(after, t, re.I) or re.search(before, t, re.I) for t in texts)


def config_values(record: dict, fields: dict, pc: PacketClaims) -> list[str]:
    """Rule 6: each value of payload.config is written beside its key in what that key's claims cite."""
    config = obj(record, "payload", "config")
    out = []
    for key, value in config.items():
        entries = fields.get(f"payload.config.{key}<key>")
        cites = (
            [c for e in entries if isinstance(e, dict) for c in e.get("cites") or []]
            if isinstance(entries, list)
            else []
        )
        if not written_beside(str(key), value, pc.cited([c for c in cites if isinstance(c, str)]).texts):
            out.append(f"payload.config.{key}: {value!r} is not written beside {key!r} in the evidence its key cites")
    return out


ENTRY_KEYS = frozenset({"says", "cites", "slots"})
REGIME_PATH = "payload.established_fact.condition.shape_regime"
BLOCK_KEYS = frozenset({"packet", "fields"})


def entry_problems(where: str, entry: object, pc: PacketClaims, record_type: object) -> list[str]:
    if not isinstance(entry, dict) or not isinstance(entry.get("says"), str) or not entry.keys() <= ENTRY_KEYS:
        return [f"{where}: a claim is an object with `says` (text), `cites` (ids) and `slots`, nothing else"]
    says, cites, slots = entry["says"], entry.get("cites"), entry.get("slots", {})
    if not isinstance(cites, list) or not cites or not all(isinstance(c, str) for c in cites):
        return [f"{where}: {says[:60]!r} cites no evidence (cites must list item ids or slot names)"]
    if not isinstance(slots, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in slots.items()):
        return [f"{where}: slots must map each number as written to a slot name"]
    out = []
    allowed = kinds_for(where, record_type)
    for c in cites:
        if c in pc.items:
            kind = pc.items[c].get("kind")
            if allowed is not None and kind not in allowed:
                out.append(f"{where}: cites {c} ({kind}), which this field may not rest on")
        elif kind_of(c) is None or resolve(pc.agent, c) is None:
            out.append(f"{where}: cites {c!r}, which is no evidence item or slot of this packet")
    if out:
        return out
    cited = pc.cited(cites)
    field = "tag" if TAG_FIELDS.match(where) else "cause" if where.split("[")[0] in CAUSE_FIELDS else "prose"
    stated = field == "cause" and pc.rewords_a_stated_cause(says, cites)
    if where == REGIME_PATH:
        # a regime derived from what the cited items state, held to that derivation exactly (its
        # number is then the cited one, on the side the rule puts it)
        problems = rules.failure_regime(says, cited)
    elif not slots and collapsed(says) in cited.quotable:
        # a whole cited item or sentence, as written: what it says is what its evidence says (only a
        # cause field's judgement is left to make)
        problems = list(said_against(field, says, (), cited, pc.exact, str(record_type), stated, quoted=True))
    else:
        resolved = tuple(sorted((token, name, resolve(pc.agent, name)) for token, name in slots.items()))
        problems = list(
            said_against(field, rules.as_stated(says, cited), resolved, cited, pc.exact, str(record_type), stated)
        )
    if where == "payload.would_retry_if" and restates_what_rules_it_out(says, cites, pc):
        problems.append("restates the cited cause as the condition to retry (say when that cause no longer holds)")
    if where in ADVICE_FIELDS and pc.lever is not None:
        # the failed lever, or a part of it, advised where no evidence it cites advises that part
        advised = advised_parts(says, pc.lever) - {k for t in cited.texts for k in advised_parts(t, pc.lever)}
        if advised:
            problems.append("advises doing the failed lever (or a part of it), and no evidence it cites advises it")
    if pc.lever is not None and LEVER_FIELDS.match(where):
        # one version's prose about several levers (its subject or body names the other too): the
        # sentence about another lever is not this one's, whatever it cites (a pitfall of the version is
        # about its own lever)
        words = content_words(says)
        other = next((n for n, ws, need in pc.levers_sharing_prose if len(ws & words) >= need), None)
        if other is not None and not names(says, pc.lever):
            problems.append(f"speaks of another lever of the version ({other[:60]!r}), not of {pc.lever[:60]!r}")
    return [f"{where}: {says[:60]!r}: {p}" for p in problems]


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    rel, record = view.relpath, view.record
    block = obj(record, *CLAIMS_AT)
    if not block:
        return [f"{rel}: evidence.raw.evidence_extra.claims: missing; every claim must cite its evidence"]
    out = []
    if not block.keys() <= BLOCK_KEYS:
        out.append(
            f"{rel}: evidence.raw.evidence_extra.claims: holds {sorted(block.keys() - BLOCK_KEYS)}, not only packet and fields"
        )
    if block.get("packet") != ev.packet.seg_id:
        out.append(
            f"{rel}: evidence.raw.evidence_extra.claims.packet: {block.get('packet')!r} is not this record's "
            f"packet {ev.packet.seg_id!r}"
        )
    fields = block.get("fields")
    if not isinstance(fields, dict):
        return out + [f"{rel}: evidence.raw.evidence_extra.claims.fields: missing or not an object"]
    pc = PacketClaims(ev)
    strings = dict(claim_strings(record))
    for path, text in strings.items():
        if not text.isascii():  # an ASCII string writes no letter outside ASCII: nothing to look alike
            out += [f"{rel}: {path}: {p}" for p in rules.look_alikes(text, pc.foreign_words)]
        entries = fields.get(path)
        if not isinstance(entries, list) or not entries:
            out.append(f"{rel}: {path}: {collapsed(text)[:60]!r} cites no evidence (no claim for it)")
            continue
        joined = " ".join(
            e.get("says", "") if isinstance(e, dict) and isinstance(e.get("says"), str) else "" for e in entries
        )
        if collapsed(joined) != collapsed(text):
            out.append(f"{rel}: {path}: its claims do not say what the field says")
            continue
        for entry in entries:
            out += [f"{rel}: {m}" for m in entry_problems(path, entry, pc, record.get("type"))]
    out += [f"{rel}: {p}" for p in config_values(record, fields, pc)]
    out += [
        f"{rel}: evidence.raw.evidence_extra.claims: {p!r} is no claim string of this record"
        for p in fields
        if p not in strings
    ]
    return out


GATE = Gate("claims", "every claim cites its own packet's evidence and says what that evidence says", check=check)
