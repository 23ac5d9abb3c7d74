"""Planted kinds and honest twins of the third red-team round (issues #25, #26), each a class the rules
now close: numbers that trade places inside one field, counts in words.
"""

from __future__ import annotations

import re

from tests.adversarial.claim_attacks import CLM, A, Case, Ctx, S, add, at, edit

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
COUNT_WORDS = ("two", "three", "four", "five", "six", "seven", "eight")
COUNT_WORD = re.compile(rf"\b({'|'.join(COUNT_WORDS)})\b")
SWAP_FIELDS = ("payload.mechanism", "payload.root_cause", "payload.change", "payload.established_fact.mechanism")


NUMBER_AND_NOUN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[\s-]+([a-z]+)")


def _two_numbers(text: str) -> tuple[str, str] | None:
    """Two distinct numbers of one sentence that count the same thing (the same word after each: the
    numbers the same-use rule of one word could not tell apart)."""
    for sentence in re.split(r"(?<=[.;])\s+", text):
        by_noun: dict[str, list[str]] = {}
        for m in NUMBER_AND_NOUN.finditer(sentence):
            values = by_noun.setdefault(m.group(2).rstrip("s"), [])
            if m.group(1) not in values:
                values.append(m.group(1))
        pair = next((v[:2] for v in by_noun.values() if len(v) >= 2), None)
        if pair:
            return pair[0], pair[1]
    return None


def _swapped(text: str) -> str:
    pair = _two_numbers(text)
    assert pair
    a, b = pair
    return NUMBER.sub(lambda m: b if m.group(1) == a else a if m.group(1) == b else m.group(1), text)


def _field(c: Ctx, test) -> str | None:
    for path in SWAP_FIELDS:
        try:
            value = at(c.record, path)
        except (KeyError, TypeError):
            continue
        if isinstance(value, str) and test(value):
            return path
    return None


def _swap_field(c: Ctx) -> str | None:
    return _field(c, lambda t: _two_numbers(t) is not None)


def _swap(r, c) -> None:
    path = _swap_field(c)
    assert path
    edit(path, lambda t, c: _swapped(t))(r, c)


def _count_field(c: Ctx) -> str | None:
    return _field(c, lambda t: COUNT_WORD.search(t) is not None)


def _packet_counts(c: Ctx) -> list[str]:
    """The count words the packet's evidence writes (a false count made of the packet's own words)."""
    texts = " ".join(i.get("text") or "" for i in c.agent["evidence"]).lower()
    return [w for w in COUNT_WORDS if re.search(rf"\b{w}\b", texts)]


def _recount_field(c: Ctx) -> str | None:
    return _field(c, lambda t: bool(COUNT_WORD.search(t)) and len(_packet_counts(c)) >= 2)


def _recount(r, c) -> None:
    """A count in words made another count the packet writes ("three kernels" where the trace says five)."""
    path = _recount_field(c)
    assert path
    counts = _packet_counts(c)
    other = lambda w: next(o for o in counts if o != w)  # noqa: E731
    edit(path, lambda t, c: COUNT_WORD.sub(lambda m: other(m.group(1)), t, count=1))(r, c)


def _in_digits(r, c) -> None:
    """A count in words written in digits: the same number."""
    path = _count_field(c)
    assert path
    digit = {w: str(i) for i, w in enumerate(COUNT_WORDS, 2)}
    edit(path, lambda t, c: COUNT_WORD.sub(lambda m: digit[m.group(1)], t))(r, c)


ROUND9 = [
    Case("1 two numbers of a strategy's field trade places", 1, S, _swap, (CLM,), lambda c: bool(_swap_field(c))),
    Case("1 two numbers of a failed lever's field trade places", 1, A, _swap, (CLM,), lambda c: bool(_swap_field(c))),
    Case("1 a count in words made another count", 1, S, _recount, (CLM,), lambda c: bool(_recount_field(c))),
    Case("1 a failed lever's count in words changed", 1, A, _recount, (CLM,), lambda c: bool(_recount_field(c))),
]

ROUND9_TWINS = [
    Case("t a count in words written in digits", 0, S, _in_digits, (), lambda c: bool(_count_field(c))),
    Case("t a failed lever's count written in digits", 0, A, _in_digits, (), lambda c: bool(_count_field(c))),
]


def _check_refuted(c: Ctx) -> bool:
    """The packet's status says PASS while the lever's own account says the correctness check rejected it."""
    account = " ".join(i["text"] for i in c.agent["evidence"] if i.get("kind") in {"cause", "lever-cause", "observed"})
    return c.m["correctness"].get("status") == "PASS" and bool(
        re.search(r"\bcorrectness\b[^.]*\b(?:rejects|rejected|fails|failed)\b", account)
    )


def _correctness_item(c: Ctx) -> str:
    return next(i["text"] for i in c.agent["evidence"] if i.get("kind") == "correctness")


ROUND9 += [
    Case(
        "3 a lever the correctness check rejected said to pass it (the version's status quoted)",
        3,
        A,
        lambda r, c: add(
            "payload.observed", lambda c: _correctness_item(c)[0].upper() + _correctness_item(c)[1:] + "."
        )(r, c),
        (CLM,),
        _check_refuted,
    ),
]


SETTING = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=(\d+)\b|(?<![\w.])(\d+) ([a-z]+(?: per [a-z]+)?)\b")


def _setting(c: Ctx) -> tuple[str, int, int] | None:
    """(key, the value the change sets, another number of the packet) from the strategy's change."""
    change = c.pl.get("change") or ""
    m = SETTING.search(change)
    if not m:
        return None
    key, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(4).replace(" ", "_"), m.group(3))
    texts = " ".join(i.get("text") or "" for i in c.agent["evidence"])
    other = next((n for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", texts) if n != value), None)
    return (key, int(value), int(other)) if other else None


def _config(value_of):
    def mutate(r, c):
        key, value, other = _setting(c)  # type: ignore[misc]
        r["payload"]["config"] = {key: value_of(value, other)}

    return mutate


ROUND9 += [
    Case(
        "3 a configuration value another number of the packet",
        3,
        S,
        _config(lambda value, other: other),
        (CLM,),
        lambda c: _setting(c) is not None,
    ),
    Case(
        "3 a configuration value written as a string the change never sets",
        3,
        S,
        _config(lambda value, other: str(value * 2)),
        (CLM,),
        lambda c: _setting(c) is not None,
    ),
]
ROUND9_TWINS += [
    Case(
        "t a configuration value as the change sets it",
        0,
        S,
        _config(lambda value, other: value),
        (),
        lambda c: _setting(c) is not None,
    )
]


def _item_of(kind: str):
    return lambda c: next((i["text"] for i in c.agent["evidence"] if i.get("kind") == kind), None)


def _built_on(text_of):
    """An anti-strategy's lineage text set from one of its packet's items."""

    def mutate(r, c):
        base = bool((c.agent.get("builds_on") or {}).get("was_the_untouched_baseline"))
        r["payload"]["trace"] = {"builds_on": {"approach": text_of(c), "is_baseline": base}}

    return mutate


ROUND9 += [
    Case(
        "4 a failed lever said to build on itself",
        4,
        A,
        _built_on(_item_of("change")),
        (CLM,),
        lambda c: _item_of("change")(c) is not None,
    ),
    Case(
        "4 a failed lever said to build on its version's subject",
        4,
        A,
        _built_on(_item_of("subject")),
        (CLM,),
        lambda c: _item_of("subject")(c) is not None,
    ),
]


def _lever(c: Ctx) -> str | None:
    return c.agent.get("the_failed_lever")


def _lever_part(c: Ctx) -> str | None:
    """A part of the failed lever (split at "with", "and") that no item of its packet advises."""
    lever = _lever(c)
    if not lever:
        return None
    parts = [p.strip() for p in re.split(r"\s+(?:with|and)\s+", lever) if len(p.strip().split()) >= 2]
    advice = " ".join(i["text"] for i in c.agent["evidence"] if i.get("kind") in {"fix", "lesson", "pitfall-fix"})
    return next((p for p in parts[1:] + parts[:1] if p != lever and p not in advice), None)


def _anti_says(name: str, field: str, says, needs) -> Case:
    """A planted kind of family 2 setting one payload field of a failed lever's record to says(c), where
    needs(c) is not None."""
    return Case(name, 2, A, lambda r, c: r["payload"].update({field: says(c)}), (CLM,), lambda c: needs(c) is not None)


ROUND9 += [
    _anti_says(
        "2 a lesson advising part of the failed lever", "lesson", lambda c: f"keep {_lever_part(c)}", _lever_part
    ),
    _anti_says(
        "2 a lesson naming the failed lever before its verb", "lesson", lambda c: f"{_lever(c)}: keep it.", _lever
    ),
    _anti_says(
        "2 a retry condition that says to keep the failed lever",
        "would_retry_if",
        lambda c: f"keep {_lever(c)}",
        _lever,
    ),
]


def _payoff(c: Ctx) -> str | None:
    """A regime the packet states as where the lever pays off (a fixed axis, which holds everywhere, aside)."""
    from optrace.facts import failure_regimes

    for item in c.agent["evidence"]:
        for pays, fails in failure_regimes(item.get("text") or "").items():
            if pays != fails:
                return pays
    return None


def _helps_field(c: Ctx) -> str | None:
    regime = _payoff(c)
    return _field(c, lambda t: bool(regime and re.search(rf"\bhelps {re.escape(regime)}", t))) if regime else None


def _helps_to(word: str):
    def mutate(r, c):
        path = _helps_field(c)
        assert path
        edit(path, lambda t, c: re.sub(r"\bonly helps\b|\bhelps\b", word, t, count=1))(r, c)

    return mutate


ROUND9 += [
    _anti_says(
        "2 a lesson forbidding the lever where the trace says it pays off",
        "lesson",
        lambda c: f"Do not retry this lever for {_payoff(c)}.",
        _payoff,
    ),
    Case("2 only helps made only hurts", 2, A, _helps_to("only hurts"), (CLM,), lambda c: bool(_helps_field(c))),
    Case("2 only helps made never helps", 2, A, _helps_to("never helps"), (CLM,), lambda c: bool(_helps_field(c))),
]
ROUND9_TWINS += [
    Case("t only helps reworded helps only", 0, A, _helps_to("helps only"), (), lambda c: bool(_helps_field(c))),
]


SO_AND = re.compile(r", so ([^,;.]+?) and ([^,;.]+?)([.;]|$)")
CAUSE_FIELDS = ("payload.mechanism", "payload.root_cause", "payload.established_fact.mechanism")


def _so_and_field(c: Ctx) -> str | None:
    """A cause field with "A, so B and C" where B is a clause of its own (three words or more, not the
    first noun of "both X and Y")."""
    for path in CAUSE_FIELDS:
        try:
            value = at(c.record, path)
        except (KeyError, TypeError):
            continue
        m = SO_AND.search(value) if isinstance(value, str) else None
        if m and len(m.group(1).split()) >= 3 and len(m.group(2).split()) >= 3 and not m.group(1).startswith("both "):
            return path
    return None


def _keep_conjunct(which: int):
    """ "A, so B and C" -> "A, so C" (which=2: the cause joined to what the trace joins only by "and") or
    "A, so B" (which=1: the clause it joins, the rest left out)."""

    def mutate(r, c):
        path = _so_and_field(c)
        assert path
        edit(path, lambda t, c: SO_AND.sub(lambda m: f", so {m.group(which)}{m.group(3)}", t, count=1))(r, c)

    return mutate


ROUND9 += [
    Case(
        "2 so joining a cause to a clause the trace joins only by and",
        2,
        S,
        _keep_conjunct(2),
        (CLM,),
        lambda c: _so_and_field(c) is not None,
    ),
    Case(
        "2 a failed lever's so joined to its and clause",
        2,
        A,
        _keep_conjunct(2),
        (CLM,),
        lambda c: _so_and_field(c) is not None,
    ),
]
ROUND9_TWINS += [
    Case(
        "t a so clause kept without what follows its and", 0, S, _keep_conjunct(1), (), lambda c: bool(_so_and_field(c))
    ),
    Case("t a failed lever's so clause kept alone", 0, A, _keep_conjunct(1), (), lambda c: bool(_so_and_field(c))),
]


def _so_field(c: Ctx) -> str | None:
    return next((p for p in CAUSE_FIELDS if isinstance(_get(c, p), str) and ", so " in _get(c, p)), None)


def _get(c: Ctx, path: str):
    try:
        return at(c.record, path)
    except (KeyError, TypeError):
        return None


def _reworded(old: str, new: str, find):
    def mutate(r, c):
        path = find(c)
        assert path
        edit(path, lambda t, c: re.sub(old, new, t, count=1))(r, c)

    return mutate


def _word_field(pattern: str):
    return lambda c: next(
        (
            p
            for p in (*CAUSE_FIELDS, "payload.change")
            if isinstance(_get(c, p), str) and re.search(pattern, _get(c, p))
        ),
        None,
    )


ROUND9_TWINS += [
    Case(
        f"t so written as {w} in a {rt}",
        0,
        rt,
        _reworded(", so ", f", {w} ", _so_field),
        (),
        lambda c: bool(_so_field(c)),
    )
    for w in ("therefore", "which means", "as a result,")
    for rt in (S, A)
]
WORD_TWINS = (
    ("needs written as requires", r"\bneeds\b", "requires", r"\bneeds\b"),
    ("one written as a single", r"\bone (?=[a-z]{3,})", "a single ", r"\bone [a-z]{3,}"),
)
ROUND9_TWINS += [
    Case(
        f"t {name} in a {rt}",
        0,
        rt,
        _reworded(old, new, _word_field(where)),
        (),
        lambda c, where=where: bool(_word_field(where)(c)),
    )
    for name, old, new, where in WORD_TWINS
    for rt in (S, A)
]


DROPPABLE = re.compile(r"\s+(?:only\s+)?(?:when|for|if|at|where)\s+[A-Za-z_][\w.]*\s*(?:<=|>=|<|>)\s*\d+")


def _qualified_field(c: Ctx) -> str | None:
    return next(
        (
            p
            for p in (*CAUSE_FIELDS, "payload.observed")
            if isinstance(_get(c, p), str) and DROPPABLE.search(_get(c, p))
        ),
        None,
    )


def _drop_qualifier(r, c) -> None:
    """A restricting qualifier deleted: the claim widens to where the trace never said it."""
    path = _qualified_field(c)
    assert path
    edit(path, lambda t, c: DROPPABLE.sub("", t, count=1))(r, c)


ROUND9 += [
    Case(
        "7 a qualifier dropped from a failed lever's claim",
        7,
        A,
        _drop_qualifier,
        (CLM,),
        lambda c: bool(_qualified_field(c)),
    ),
]


COMPARISON_TWINS = (
    ("a comparison written N or more", r">=\s*(\d+)", r"\1 or more", r">=\s*\d"),
    ("a comparison written with the one-character symbol", r"<=\s*(\d+)", r"≤ \1", r"<=\s*\d"),
    ("a comparison written up to N", r"<=\s*(\d+)", r"up to \1", r"<=\s*\d"),
)
ROUND9_TWINS += [
    Case(
        f"t {name}",
        0,
        A,
        _reworded(old, new, _word_field(where)),
        (),
        lambda c, where=where: bool(_word_field(where)(c)),
    )
    for name, old, new, where in COMPARISON_TWINS
]
