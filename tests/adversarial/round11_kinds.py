"""Planted kinds and honest twins of the fourth red-team round (issue #25), each a class the rules now
close: words traded between two clauses of one sentence (a role or adjective swap, a negation moved to
the other clause's subject), a gain or loss word beside a number that runs the other way.
"""

from __future__ import annotations

import re

from optrace.gates.trace.claim_binding import _parts
from optrace.wording import CLAUSE_BREAK, FUNCTION_WORDS, NEGATORS, SPECIAL, folded, read, sentences
from tests.adversarial.claim_attacks import CLM, A, Case, Ctx, S, at, edit

CAUSE_FIELDS = ("payload.mechanism", "payload.root_cause", "payload.established_fact.mechanism")
_PART = re.compile(r"(,\s*|;\s*|:\s*|\s+and\s+|\s+so\s+|\s+because\s+|\s+but\s+)")


def _get(c: Ctx, path: str):
    try:
        return at(c.record, path)
    except (KeyError, TypeError):
        return None


def _exclusive(clauses: list[str]) -> list[tuple[int, str]]:
    """(clause, its first word no other clause of the sentence holds and it holds once), for clauses of
    three words or more that have one."""
    words = [
        [w for w in re.findall(r"[A-Za-z_]{4,}", c) if w.lower() not in FUNCTION_WORDS and w.lower() not in NEGATORS]
        for c in clauses
    ]
    out = []
    for k, ws in enumerate(words):
        others = {c for j, o in enumerate(clauses) if j != k for c in read(o).all_words}
        own = next((w for w in ws if ws.count(w) == 1 and read(w).content and not read(w).all_words & others), None)
        if own and len(clauses[k].split()) >= 3:
            out.append((k, own))
    return out


def _traded(text: str) -> str | None:
    """The text with the own words of two clauses of one sentence traded (each clause's first word no
    other clause holds), or None where no sentence has two such clauses."""
    for sentence in sentences(text) or [text]:
        pieces = _PART.split(sentence)
        clauses = pieces[::2]
        own = _exclusive(clauses)
        if len(own) < 2 or len(_parts(sentence)) < 2:
            continue
        (k1, w1), (k2, w2) = own[0], own[1]
        clauses[k1] = re.sub(rf"\b{w1}\b", w2, clauses[k1], count=1)
        clauses[k2] = re.sub(rf"\b{w2}\b", w1, clauses[k2], count=1)
        pieces[::2] = clauses
        return text.replace(sentence, "".join(pieces), 1)
    return None


def _trade_field(c: Ctx) -> str | None:
    return next((p for p in CAUSE_FIELDS if isinstance(_get(c, p), str) and _traded(_get(c, p))), None)


def _trade(r, c) -> None:
    path = _trade_field(c)
    assert path
    edit(path, lambda t, c: _traded(t) or t)(r, c)


ROUND11 = [
    Case(
        "2 own words of two clauses traded in a strategy's cause", 2, S, _trade, (CLM,), lambda c: bool(_trade_field(c))
    ),
    Case(
        "2 own words of two clauses traded in a failed lever's cause",
        2,
        A,
        _trade,
        (CLM,),
        lambda c: bool(_trade_field(c)),
    ),
]


AND_CLAUSES = re.compile(r"(?<=[;:] )([^,;:.]{12,}?) and ([^,;.]{12,}?)(?=[.;]|$)")


def _and_field(c: Ctx) -> str | None:
    """A cause field with "..., X and Y" where X and Y are clauses of three words or more, no connective."""
    for p in CAUSE_FIELDS:
        t = _get(c, p)
        m = AND_CLAUSES.search(t) if isinstance(t, str) else None
        if m and all(len(g.split()) >= 3 and not re.search(r"\b(?:so|because|than)\b", g) for g in m.groups()):
            return p
    return None


def _swap_conjuncts(r, c) -> None:
    """ "X and Y" -> "Y and X": two statements in the other order, each whole."""
    path = _and_field(c)
    assert path
    edit(path, lambda t, c: AND_CLAUSES.sub(lambda m: f"{m.group(2)} and {m.group(1)}", t, count=1))(r, c)


ROUND11_TWINS = [
    Case("t two clauses joined by and in the other order", 0, A, _swap_conjuncts, (), lambda c: bool(_and_field(c))),
    Case("t a strategy's two and clauses in the other order", 0, S, _swap_conjuncts, (), lambda c: bool(_and_field(c))),
]


def _change(c: Ctx):
    v = c.m.get("improve_pct_vs_floor")
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v else None


def _observed(word: str, sign: int):
    """A failed lever's observation of its measured change, unsigned, beside a gain or loss word."""

    def mutate(r, c):
        r["payload"]["observed"] = f"The attempt {word} {abs(_change(c))}% against the floor it was tried against."

    return mutate, (lambda c: _change(c) is not None and (_change(c) > 0) == (sign > 0))


LOSS_BY = re.compile(r"\bslower by (\d+(?:\.\d+)?%)")


def _loss_field(c: Ctx) -> str | None:
    fields = ("payload.observed", *CAUSE_FIELDS)
    if LOSS_BY.search(" ".join(i.get("text") or "" for i in c.agent["evidence"] if i.get("kind") == "observed")):
        return next((p for p in fields if isinstance(_get(c, p), str) and LOSS_BY.search(_get(c, p))), None)
    return None


def _loss_to(word: str):
    def mutate(r, c):
        path = _loss_field(c)
        assert path
        edit(path, lambda t, c: LOSS_BY.sub(rf"{word} \1", t, count=1))(r, c)

    return mutate


gained, on_loss = _observed("gained", -1)
saved, _ = _observed("saved", -1)


def _says_gain(c: Ctx) -> bool:
    """The packet's own words hold "gain" (so the content rule alone does not refuse the word)."""
    return on_loss(c) and any(re.search(r"\bgain\b", i.get("text") or "") for i in c.agent["evidence"])


lost, _ = _observed("lost", -1)
ROUND11 += [
    Case("1 a failed lever's measured loss written as a gain", 1, A, gained, (CLM,), _says_gain),
    Case("1 a failed lever's measured loss written as a saving", 1, A, saved, (CLM,), on_loss),
    Case("1 a quoted slowdown written as a saving", 1, A, _loss_to("saving"), (CLM,), lambda c: bool(_loss_field(c))),
]
ROUND11_TWINS += [
    Case("t a failed lever's measured loss written as lost", 0, A, lost, (), on_loss),
    Case("t a quoted slowdown written as lost", 0, A, _loss_to("lost"), (), lambda c: bool(_loss_field(c))),
]


SLUG_FROM = {"cause", "lever-cause", "observed", "gate-verdict"}
BREAK = re.compile(CLAUSE_BREAK.pattern + r"|\band\b")
STANDALONE_NEGATOR = re.compile(r"(?<![\w-])(?:not|no|never|without|instead)(?![\w-])")


def _negated_clauses(c: Ctx) -> list[tuple[str, bool]]:
    """(clause, its negated word is a speed or direction word) of each clause of the failed lever's own
    account that negates a word."""
    out = []
    for item in c.agent["evidence"]:
        if item.get("kind") not in SLUG_FROM:
            continue
        for clause in BREAK.split(item.get("text") or ""):
            toks = read(clause or "").tokens
            negated = [t for t in toks if t.negated]
            plain = STANDALONE_NEGATOR.search(folded(clause or ""))  # not the NO of CUDA_NO_HALF
            if plain and negated and len([t for t in toks if t.canon[0] not in FUNCTION_WORDS]) >= 2:
                out.append((clause, any(t.canon[0] in SPECIAL for t in negated)))
    return out


def _slug(clause: str, keep_negators: bool) -> str:
    negators = NEGATORS | {"instead", "rather"}
    ws = [w for w in re.findall(r"[a-z][a-z0-9_]*", folded(clause)) if w not in FUNCTION_WORDS or w in negators]
    return "-".join(w for w in ws if keep_negators or w not in negators)


def _symptom(make):
    def mutate(r, c):
        r["retrieval"]["signals"]["symptoms"] = [make(c)]

    return mutate


def _asserted_beside_negated(c: Ctx) -> str | None:
    """A negated clause's slug without its negator, beside another negated clause's slug that keeps its
    own (`occupancy-limiter-register-cap-can-not-help`)."""
    found = _negated_clauses(c)
    if len(found) < 2:
        return None
    return f"{_slug(found[0][0], False)}-{_slug(found[1][0], True)}"


def _speed_asserted(c: Ctx) -> str | None:
    """A clause negating a speed or direction word ("the register cap cannot help") as a slug asserting it."""
    return next((_slug(cl, False) for cl, special in _negated_clauses(c) if special), None)


def _negation_kept(c: Ctx) -> str | None:
    return next((_slug(cl, True) for cl, _ in _negated_clauses(c)), None)


FAILED_VERB = re.compile(r"\b(?:do|does|did) not (compile|build|launch|link|fit|run)\b")


def _failure_noun(c: Ctx) -> str | None:
    """ "... do not compile" as `compile-error` (the failure noun names what did not happen)."""
    texts = " ".join(i.get("text") or "" for i in c.agent["evidence"] if i.get("kind") in SLUG_FROM)
    m = FAILED_VERB.search(texts)
    return f"{m.group(1)}-error" if m else None


ROUND11 += [
    Case(
        "2 a slug asserting one negated clause beside another that keeps its negator",
        2,
        A,
        _symptom(_asserted_beside_negated),
        (CLM,),
        lambda c: _asserted_beside_negated(c) is not None,
    ),
    Case(
        "2 a slug asserting a negated speed word",
        2,
        A,
        _symptom(_speed_asserted),
        (CLM,),
        lambda c: _speed_asserted(c) is not None,
    ),
]
ROUND11_TWINS += [
    Case("t a negated clause as a slug keeping its negator", 0, A, _symptom(_negation_kept), (), _negation_kept),
    Case("t a failure noun naming what did not happen", 0, A, _symptom(_failure_noun), (), _failure_noun),
]
