"""The 8 trace gates, rule by rule, on the drafter's records of the example trace (and mutations of them).

Every test validates a whole trace's records in memory with the same judge/finish as `optrace validate
trace`, so a rule is proven on a real passing record and no other gate is disturbed by accident.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import re
from decimal import Decimal

import pytest

from optrace.gates.store.store import store_path
from optrace.gates.trace import layout, numbers
from optrace.gates.trace.fabrication import Pool, tokens
from optrace.gates.trace.injection import mine_example, validate_records, workbench
from optrace.gates.trace.layout import staged_path
from optrace.gates.trace.model import Packet, TraceContext
from optrace.gates.trace.runner import ALL_GATES, finish, judge
from optrace.gates.trace.store_overlap import Claim, LiveStore, holders, overlaps
from optrace.gates.trace.verbatim import kernel_lines_of_diff


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return workbench(mine_example(tmp_path_factory.mktemp("example")))


def seg(seg_id: str):
    """Pick the record whose packet is seg_id."""
    return lambda bench, rel, rec: bench.packet_at(rel).seg_id == seg_id


def of_type(rtype: str):
    return lambda bench, rel, rec: rec["type"] == rtype


def failing_after(bench, pick, mutate, live=LiveStore(), trace=None) -> dict[str, list[str]]:
    """{gate: messages} of every gate failing anywhere once `mutate(row)` changed the picked record."""
    rows = [[rel, copy.deepcopy(rec)] for rel, rec in bench.records]
    i = next(i for i, (rel, rec) in enumerate(rows) if pick(bench, rel, rec))
    mutate(rows[i])
    used = bench if trace is None else dataclasses.replace(bench, trace=trace)
    verdicts = validate_records(used, rows, live)
    found: dict[str, list[str]] = {}
    for v in verdicts:
        for gate in v.failed:
            found.setdefault(gate, []).extend(v.gates[gate][1])
    return found


def record_edit(change):
    return lambda row: change(row[1])


def goal_plus(words: str):
    return record_edit(lambda r: r["payload"].update(goal=f"{r['payload']['goal']} {words}"))


def test_the_drafted_example_records_pass_all_19_gates(bench):
    verdicts = validate_records(bench, bench.records, LiveStore())
    assert len(verdicts) >= 10
    assert {t for v in verdicts for t in ("strategy", "anti-strategy", "reference-kernel")}
    for v in verdicts:
        assert v.failed == [], v.gates
        assert list(v.gates) == list(ALL_GATES)
    assert {v.gates["index"][0] for v in verdicts} == {"SKIP"}  # judged on the staged store, by check-store


# --- profile ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, patch",
    [
        (lambda r: r["evidence"]["raw"].update(page_path=None), "raw-keys"),
        (lambda r: r["evidence"]["summary"].update(measured_on={}), "measured-on"),
        (lambda r: r["evidence"]["summary"].pop("measured_on"), "measured-on"),
        (lambda r: r["worth"]["gain"].pop("kind"), "gain-kind"),
    ],
)
def test_profile_names_the_patch_a_record_breaks(bench, change, patch):
    found = failing_after(bench, of_type("strategy"), record_edit(change))
    assert list(found) == ["profile"] and f"(patch {patch})" in found["profile"][0]


def test_breaking_the_base_contract_is_the_schema_gates_finding_not_the_profiles(bench):
    found = failing_after(bench, of_type("strategy"), record_edit(lambda r: r.update(notes=None)))
    assert list(found) == ["schema"]


def test_an_abbreviated_commit_breaks_the_profile_and_provenance(bench):
    found = failing_after(
        bench,
        of_type("strategy"),
        record_edit(lambda r: r["evidence"]["raw"].update(git_commit=r["evidence"]["raw"]["git_commit"][:7])),
    )
    assert set(found) == {"profile", "provenance"}


# --- layout ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda r: r["retrieval"]["scope"].update(dsl="gluon"), "retrieval.scope.dsl"),
        (lambda r: r["retrieval"]["scope"].update(product="h200"), "retrieval.scope.product"),
        (lambda r: r["retrieval"]["scope"].update(operator_family="softmax"), "retrieval.scope.operator_family"),
        (lambda r: r.update(episode_key=r["episode_key"] + "x"), "episode_key"),
        (lambda r: r.update(level="cross-operator"), "level"),
    ],
)
def test_layout_keeps_what_the_partition_decided(bench, change, field):
    found = failing_after(bench, seg("strategy-b1be26"), record_edit(change))
    assert list(found) == ["layout"] and f": {field}: " in found["layout"][0]


def _alternatives(pattern: str) -> list[str]:
    """The top-level `|` alternatives of a regular expression's text."""
    out, depth, start, escaped = [], 0, 0, False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    return out + [pattern[start:]]


def test_the_name_scan_skips_only_positions_no_name_can_start_at():
    # HARDWARE_WORDS_LOWER passes over a boundary not followed by a letter: right only while every name
    # starts with a letter, and it must find exactly what the plain pattern finds
    for alternative in (a for names in layout.NAMES for a in _alternatives(names)):
        assert re.match(r"[a-z]|\[[a-z]+\]", alternative), alternative
    plain = re.compile(rf"\b(?:{'|'.join(layout.NAMES)})\b")  # the rule, without the fast path
    parts = [
        "h100",
        "a800",
        "b200",
        "gb200",
        "rtx 4090",
        "rtx4090ti",
        "mi300x",
        "t4",
        "p100",
        "hopper",
        "blackwell-ultra",
        "ada",
        "sm_90a",
        "sm90",
        "gfx942",
        "compute_90",
        "bf16",
        "fp8",
        "e4m3",
        "float8_e4m3fn",
        "nvfp4",
        "mxfp4",
        "cutlass",
        "cute",
        "cutedsl",
        "triton",
        "hip",
        "cuda",
        "softmax",
        "layer_norm",
        "rmsnorm",
        "conv2d",
        "top_k",
        "all_reduce",
        "x",
        "_",
        "-",
        "9",
        ".",
        "  ",
        "\n",
        "(",
        "gemm",
        "tensor",
        "done",
    ]
    for text in _mixed_texts(parts, 4000, seed=5):
        assert [m.span() for m in layout.HARDWARE_WORDS_LOWER.finditer(text)] == [
            m.span() for m in plain.finditer(text)
        ]


def test_packet_facts_read_lazily_are_the_whole_packets():
    # PacketFacts reads the target and operator first and the whole packet only when they fall short:
    # its answers must be those of the whole packet's names and phrases, for names anywhere in it
    names = ["h100", "a800", "hopper", "ampere", "bf16", "fp8", "triton", "cutlass", "gemm", "softmax"]
    phrases = ["any gpu", "portable", "cross-vendor"]
    rng = random.Random(11)
    for _ in range(300):
        pick = lambda pool, k: " and ".join(rng.sample(pool, k))  # noqa: E731
        data = {
            "target": {"scope": {"arch": pick(names, rng.randint(0, 2))}},
            "agent_facing": {
                "operator": {"gpu": pick(names, rng.randint(0, 2))},
                "notes": [pick(names + phrases, rng.randint(0, 3))],
            },
        }
        packet = Packet("p", data, pick(names, rng.randint(0, 1)) or None)
        texts = [data["target"]["scope"]["arch"], data["agent_facing"]["operator"]["gpu"]]
        texts += data["agent_facing"]["notes"] + ["operator", "gpu", "notes", "scope", "arch"]
        texts += [packet.code] if packet.code else []
        whole_names = set().union(*(layout.text_facts(t)[0] for t in texts))
        whole_wide = set().union(*(layout.text_facts(t)[1] for t in texts))
        facts = layout.PacketFacts(packet)
        stated = frozenset(rng.sample([n.replace("-", "") for n in names], 3))
        widening = frozenset(layout.text_facts(rng.choice(phrases))[1])
        assert facts.unnamed(stated) == stated - whole_names
        assert facts.unclaimed(widening) == widening - whole_wide


def test_a_record_filed_under_another_trace_fails_layout(bench):
    def move(row):
        row[0] = row[0].replace(f"distilled/{bench.slug}/", "distilled/other-trace/")

    found = failing_after(bench, seg("strategy-b1be26"), move)
    assert list(found) == ["layout"] and "filed at the wrong place" in found["layout"][0]


def test_a_staged_copy_is_judged_by_the_store_layout(bench):
    rel, record = next((rel, rec) for rel, rec in bench.records if bench.packet_at(rel).seg_id == "strategy-b1be26")
    packet = bench.packet_at(rel)
    staged = staged_path(packet)
    assert staged == (f"records/strategy/nvidia/hopper/triton/norm/{record['id']}.json")
    verdict = finish([judge(staged, record, None, packet, bench.trace, None)], LiveStore())[0]
    assert verdict.failed == []
    wrong = staged.replace("/triton/", "/cuda/")
    verdict = finish([judge(wrong, record, None, packet, bench.trace, None)], LiveStore())[0]
    assert verdict.failed == ["layout"]


def test_a_record_without_an_operator_family_is_staged_under_misc():
    packet = Packet(
        "s",
        {
            "record_type": "strategy",
            "target": {
                "id": "a.b.c.d.e",
                "scope": {"vendor": "nvidia", "arch": "hopper", "dsl": "triton", "operator_family": None},
            },
        },
    )
    assert staged_path(packet) == "records/strategy/nvidia/hopper/triton/misc/a.b.c.d.e.json"


@pytest.mark.parametrize(
    "family,rid",
    [
        ("../../../etc", "a.b.c.d.e"),
        ("norm/../x", "a.b.c.d.e"),
        (".hidden", "a.b.c.d.e"),
        ("norm", "../a.b.c.d.e"),
        ("Norm", "a.b.c.d.e"),
        ("norm", 7),
    ],
)
def test_a_store_path_part_that_could_climb_or_hide_has_no_path(family, rid):
    """Staging, validation and admission share one layout: a part that is not a plain name gives no path."""
    scope = {"vendor": "nvidia", "arch": "hopper", "dsl": "triton", "operator_family": family}
    assert store_path("strategy", scope, rid) is None
    assert (
        store_path("strategy", {**scope, "operator_family": "norm"}, "a.b.c.d.e")
        == "records/strategy/nvidia/hopper/triton/norm/a.b.c.d.e.json"
    )


def test_a_record_no_packet_targets_fails_every_gate_that_needs_one(bench):
    def orphan(row):
        rid = "nvidia.h100.triton.norm.invented-lever-sffffff"
        row[1]["id"] = rid
        row[0] = f"distilled/{bench.slug}/{rid}.json"

    found = failing_after(bench, seg("strategy-b1be26"), orphan)
    assert set(found) == {
        "layout",
        "verbatim",
        "no-fabrication",
        "claims",
        "structured-facts",
        "provenance",
        "ncu-attribution",
        "lineage",
    }
    assert all("no packet targets this record" in msgs[0] for msgs in found.values())


# --- verbatim --------------------------------------------------------------------------------------


def snippet_edit(change):
    def edit(row):
        impl = row[1]["payload"]["implementation"]
        impl["snippet"] = change(impl["snippet"].splitlines())

    return edit


def first_marked(lines):
    return next(i for i, line in enumerate(lines) if line[:1] in "+-" and len(line) > 10)


@pytest.mark.parametrize(
    "name, change",
    [
        (
            "line without its marker",
            lambda ls: "\n".join(ls[: first_marked(ls)] + [ls[first_marked(ls)][1:]] + ls[first_marked(ls) + 1 :]),
        ),
        ("fragment of a line", lambda ls: "\n".join(ls[: first_marked(ls)] + [ls[first_marked(ls)][:12]])),
        ("invented line", lambda ls: "\n".join(ls + ["+    y = fast_path(x)"])),
        ("reordered lines", lambda ls: "\n".join(reversed(ls))),
        ("paraphrase", lambda ls: "+ keep the residual sum in registers"),
    ],
)
def test_verbatim_rejects(bench, name, change):
    found = failing_after(bench, seg("strategy-b1be26"), snippet_edit(change))
    assert list(found) == ["verbatim"], name
    assert "strategy-b1be26.diff" in found["verbatim"][0]


def test_verbatim_accepts_a_selection_of_whole_lines_in_order(bench):
    def select(lines):
        body, _ = kernel_lines_of_diff("\n".join(lines))
        added = next(i for i, line in enumerate(lines) if line.startswith("+") and len(line) > 10 and i in body)
        removed = next(i for i, line in enumerate(lines) if line.startswith("-") and line[1:].strip())
        # trailing blanks and a blank line, and a removed line left out: every line of the new side of a
        # hunk it quotes stays (leaving one out quotes other code, the next test)
        picked = [ln for i, ln in enumerate(lines) if i != removed]
        picked[picked.index(lines[added])] = lines[added] + "   "
        return "\n".join([*picked[:2], "", *picked[2:]]) + "\n"

    assert failing_after(bench, seg("strategy-b1be26"), snippet_edit(select)) == {}


def test_verbatim_refuses_a_snippet_that_leaves_out_code_inside_a_hunk_it_quotes(bench):
    def select(lines):
        changed = [
            i for i, ln in enumerate(lines) if ln[:1] in "+-" and ln[:3] not in ("+++", "---") and ln[1:].strip()
        ]
        # a context line of code: leaving an added one out could also tip the share of added lines
        inner = next(
            i for i in range(changed[0] + 1, changed[-1]) if lines[i][:1] == " " and any(c.isalnum() for c in lines[i])
        )
        return "\n".join(ln for i, ln in enumerate(lines) if i != inner) + "\n"

    found = failing_after(bench, seg("strategy-b1be26"), snippet_edit(select))
    assert list(found) == ["verbatim"] and "code between two lines it quotes of one hunk" in found["verbatim"][0]


def test_verbatim_quotes_a_reference_kernel_from_its_py(bench):
    assert failing_after(bench, seg("refk-final"), snippet_edit(lambda ls: "\n".join(ls))) == {}
    found = failing_after(bench, seg("refk-final"), snippet_edit(lambda ls: next(x for x in ls if len(x) > 20)[:10]))
    assert "verbatim" in found and any("is not a whole line of refk-final.py" in m for m in found["verbatim"])


def test_a_reference_kernel_is_its_whole_core_kernel(bench):
    """#25: two lines of the source are lines of it, but not the kernel: the whole span of the core
    kernel function (or the whole file) is."""
    found = failing_after(bench, seg("refk-final"), snippet_edit(lambda ls: "\n".join(ls[1:3])))
    assert list(found) == ["verbatim"] and "not the whole span of kernel" in found["verbatim"][0]


def test_verbatim_format_must_name_the_quoted_file(bench):
    found = failing_after(
        bench,
        seg("strategy-b1be26"),
        record_edit(lambda r: r["payload"]["implementation"].update(format="source (verbatim)")),
    )
    assert "verbatim" in found and "for code quoted from strategy-b1be26.diff" in found["verbatim"][-1]


def test_a_snippet_needs_a_packet_with_code(bench):
    def add_snippet(row):
        row[1]["payload"]["implementation"] = {"format": "source (verbatim)", "snippet": "x = 1"}

    found = failing_after(bench, seg("anti-74f02b"), add_snippet)
    assert list(found) == ["verbatim"] and "the packet has no code file" in found["verbatim"][0]


# --- no-fabrication --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "sm_90 x37.91 up-to-3% 提升5% ..7",
            [("90", False), ("37.91", False), ("3", True), ("5", True), (".7", False)],
        ),
        (
            "a 4096-wide row, 8 KB, 2x faster, [4, 1024] tile, -3.3%, eps 1e-5, .5 of it",
            [
                ("4096", False),
                ("8", False),
                ("2", False),
                ("4", False),
                ("1024", False),
                ("3.3", True),
                ("1e-5", False),
                (".5", False),
            ],
        ),
        ("batch_size <= 64, num_warps=8, 41us, 18.54 %", [("64", False), ("8", False), ("41", False), ("18.54", True)]),
        ("thirty-eight percent, ¾", [("0.75", False), ("38", True)]),
        # digits of other scripts read as the digits they are; a look-alike letter in a run of digits as a digit
        ("３７．５％ and ٤٢ and x１O and 4\u2009096", [("37.5", True), ("42", False), ("10", False), ("4096", False)]),
        ("18 per cent, 7 pct, 3 Percent", [("18", True), ("7", True), ("3", True)]),
        ("two thousand and forty, three million, a dozen", [("2040", False), ("3000000", False), ("12", False)]),
    ],
)
def test_number_tokens_read_every_written_form(text, expected):
    assert sorted(tokens(text)) == sorted(expected)


@pytest.mark.parametrize("token,places", [("18", 0), ("18.54", 2), ("0.50", 2), ("1e-5", 5), ("1E+3", 0)])
def test_decimal_places_as_written(token, places):
    # an integer has none: it is never taken for a rounding of a longer number
    from optrace.gates.trace.numbers import decimals, magnitude

    assert decimals(magnitude(token)) == places


def _mixed_texts(alphabet: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))) for _ in range(n)]


def test_the_fast_word_scan_finds_exactly_what_the_pattern_finds():
    # word_matches tries a number/factor word only where one starts a word; it must find every match
    # pattern.finditer finds, in every case, separator and glued position (and fall back off ASCII)
    parts = [
        "one",
        "One",
        "ONE",
        "two",
        "twenty",
        "thirty-eight",
        "hundred and five",
        "half the",
        "Twice",
        "double",
        "doubled",
        "halving",
        "thrice",
        "orders of magnitude",
        "an order of magnitude",
        "order",
        "tensor",
        "done",
        "stone",
        "x2",
        "_one",
        "one_",
        "quarter",
        "dozen",
        "zero",
        "ten",
        "often",
        "ſix",
        "Ｏne",
        "4x",
        "times",
        "%",
        "percent",
        " ",
        "-",
        "_",
        "1",
        "a",
        ".",
        "\n",
    ]
    for text in _mixed_texts(parts, 4000, seed=7):
        for pattern, starts in (
            (numbers.NUMBER_WORDS, numbers.NUMBER_WORD_STARTS),
            (numbers.FACTOR_WORDS, numbers.FACTOR_WORD_STARTS),
        ):
            want = [(m.span(), m.groupdict()) for m in pattern.finditer(text)]
            assert [(m.span(), m.groupdict()) for m in numbers.word_matches(pattern, starts, text)] == want, text


def test_the_digit_scan_finds_exactly_the_numbers_the_plain_pattern_finds():
    plain = re.compile(r"(?<!\d)(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
    with_unit = re.compile(rf"(?P<n>{plain.pattern}){numbers.UNIT_AFTER.pattern}", re.I)
    alphabet = list("0123456789....eE+-x%  ab") + ["ms", "us", " times", "e5", "\u0661\u0662"]
    for text in _mixed_texts(alphabet, 20000, seed=13):
        assert [m.span() for m in numbers.DIGITS.finditer(text)] == [m.span() for m in plain.finditer(text)], text
        assert [(m.span(), m.groupdict()) for m in numbers.DIGITS_WITH_UNIT.finditer(text)] == [
            (m.span(), m.groupdict()) for m in with_unit.finditer(text)
        ], text


def test_the_look_alike_scan_changes_exactly_the_runs_of_digits_dots_and_look_alikes():
    # LOOKALIKE_RUN matches only the runs _as_digits changes: the result must be that of every maximal run
    every_run = re.compile(rf"[\d.{numbers._LOOKALIKE}]+")
    alphabet = list("0123456789..oOlI\u041e\u0417\u0431 ax_-%")
    for text in _mixed_texts(alphabet, 20000, seed=11):
        assert numbers.LOOKALIKE_RUN.sub(numbers._as_digits, text) == every_run.sub(numbers._as_digits, text), text


def pool_of(bench, seg_id: str) -> Pool:
    return Pool(next(p for p in bench.packets.values() if p.seg_id == seg_id))


def fabrication_after(bench, pick, mutate) -> list[str]:
    """What rule 1 (numbers) of no-fabrication finds once `mutate` changed the picked record (a number in
    prose also fails the claims gate when no slot or cited item backs it: gates/test_claims.py)."""
    return failing_after(bench, pick, mutate).get("no-fabrication", [])


def test_small_integers_are_checked(bench):
    pool = pool_of(bench, "strategy-b1be26")
    small = next(n for n in range(2, 50) if not pool.supports(Decimal(n)))
    found = fabrication_after(bench, seg("strategy-b1be26"), goal_plus(f"It needs {small} stages."))
    assert f"'{small}' is not a number of the packet" in found[0]
    present = next(n for n in range(1, 50) if pool.supports(Decimal(n)))
    assert fabrication_after(bench, seg("strategy-b1be26"), goal_plus(f"It needs {present} stages.")) == []


def test_identifiers_the_packet_names_pass_and_others_do_not(bench):
    # the packet names sm_90, H100 and bfloat16, so their digits are packet numbers; fp8 is not named
    assert fabrication_after(bench, seg("anti-74f02b"), goal_plus("Seen on sm_90 (H100) with bfloat16 data.")) == []
    assert fabrication_after(bench, seg("anti-74f02b"), goal_plus("Seen with float4 loads at x37.91."))


def test_a_number_of_the_packets_code_is_a_number_of_the_packet(bench):
    pool = pool_of(bench, "strategy-b1be26")
    only_in_code = sorted(n for n in pool.in_code if n not in pool.stated and n == n.to_integral_value())
    assert only_in_code, "the example diff states constants the agent-facing layer does not"
    assert fabrication_after(bench, seg("strategy-b1be26"), goal_plus(f"It uses {only_in_code[-1]} lanes.")) == []


def test_values_match_by_value_and_by_rounding_but_never_to_an_integer(bench):
    # the packet says 18.54 (improvement) and 24.6 (geomean)
    assert fabrication_after(bench, seg("strategy-b1be26"), goal_plus("About 18.5 points, 24.60 on average.")) == []
    assert fabrication_after(bench, seg("strategy-b1be26"), goal_plus("About 19 points."))


def test_the_rounding_index_matches_exactly_what_rounding_each_packet_number_matches():
    # matches() looks a value up among the packet's numbers rounded to its decimals (roundings), where
    # the rule is: equal, or some packet number with more decimals rounds (half-up or half-even) to it
    from optrace.gates.trace.numbers import decimals
    from optrace.gates.trace.pool import matches, rounds_to

    def by_rule(values, value):
        return value in values or (
            decimals(value) > 0 and any(decimals(v) > decimals(value) and rounds_to(v, value) for v in values)
        )

    rng = random.Random(3)
    extremes = [Decimal("9" * 27 + ".95"), Decimal("1" * 27 + ".5"), Decimal("1e45"), Decimal("1." + "5" * 45)]

    def number():
        if rng.random() < 0.15:
            return rng.choice(extremes)
        return Decimal(rng.randint(0, 10 ** rng.randint(1, 6))).scaleb(-rng.choice([0, 1, 2, 3, 4, 6]))

    for _ in range(600):
        values = frozenset(number() for _ in range(rng.randint(0, 20)))
        for _ in range(20):
            value = number()
            if values and rng.random() < 0.5:  # a rounding of a packet number, the case that matters
                try:
                    value = rng.choice(sorted(values)).quantize(Decimal(1).scaleb(-rng.randint(0, 3)))
                except ArithmeticError:
                    pass
            assert matches(values, value) == by_rule(values, value), (sorted(values), value)


def test_a_percentage_may_be_the_packets_own_improvement_rounded_never_one_the_record_derives(bench):
    # the packet: floor 30.2, geomean 24.6, improve_pct_vs_floor 18.54 (exactly 18.543...%)
    assert fabrication_after(bench, seg("strategy-b1be26"), goal_plus("Roughly 18.5% faster.")) == []
    assert (
        failing_after(
            bench,
            seg("strategy-b1be26"),
            record_edit(
                lambda r: (
                    r["worth"]["gain"].update(pct=18.543)
                    or r["worth"]["gain"]["metrics"][0].update(delta_pct=18.543)
                    or r["evidence"]["raw"]["effect"].update(delta_pct=18.543)
                )
            ),
        )
        == {}
    )

    def unmeasured(r):  # a reference the packet never measured cannot make a percentage true
        r["evidence"]["raw"]["effect"]["parent_geomean_us"] = 31.0
        r["payload"]["goal"] += " Roughly 20.65% faster."

    # lineage too: the parent geomean is no longer the one of the version the diff is taken against
    found = failing_after(bench, seg("strategy-b1be26"), record_edit(unmeasured))
    assert {"no-fabrication", "lineage"} <= set(found) and "20.65" in " ".join(found["no-fabrication"])


def test_a_gain_the_packet_does_not_support_fails(bench):
    def invent(r):
        r["worth"]["gain"]["pct"] = r["worth"]["gain"]["metrics"][0]["delta_pct"] = 87.6543

    found = failing_after(bench, seg("strategy-b1be26"), record_edit(invent))
    assert list(found) == ["no-fabrication"]
    assert any("worth.gain.pct: 87.6543 is not the packet's improvement 18.54" in m for m in found["no-fabrication"])


def test_quoted_code_is_left_to_the_verbatim_gate(bench):
    found = failing_after(
        bench, seg("strategy-b1be26"), snippet_edit(lambda ls: "\n".join(ls + ["+    BLOCK = 77777"]))
    )
    assert list(found) == ["verbatim"]


# --- provenance ------------------------------------------------------------------------------------


def raw_edit(**values):
    return record_edit(lambda r: r["evidence"]["raw"].update(values))


def test_the_commit_of_another_version_fails_provenance_and_names_it(bench):
    other = bench.trace.commits["v1"]
    found = failing_after(bench, seg("strategy-b1be26"), raw_edit(git_commit=other))
    assert list(found) == ["provenance"] and "is the commit of v1, not of 'v2'" in found["provenance"][0]


def test_a_commit_recording_several_versions_is_the_commit_of_each_and_of_no_other(bench):
    # one dead-end commit writing memory/v8.json and v9.json is the own commit of both (versions.jsonl)
    own = bench.trace.commits["v2"]
    assert "v99" not in bench.trace.commits
    shared = dataclasses.replace(bench.trace, commits={**bench.trace.commits, "v99": own})
    assert shared.versions_of[own] == ("v2", "v99")
    assert failing_after(bench, seg("strategy-b1be26"), raw_edit(), trace=shared) == {}
    found = failing_after(bench, seg("strategy-b1be26"), raw_edit(git_commit=own, version="v1"), trace=shared)
    assert "provenance" in found
    assert any(f"{own!r} is the commit of v2, v99, not of 'v1'" in m for m in found["provenance"])


@pytest.mark.parametrize(
    "values, says",
    [
        ({"git_commit": "0" * 40}, "is not a commit of a version of this trace"),
        ({"version": "v3"}, "is not the packet's version 'v2'"),
        ({"source_repo": "kernel_opt_999_other"}, "is not the trace"),
    ],
)
def test_provenance_binds_record_packet_and_trace(bench, values, says):
    found = failing_after(bench, seg("strategy-b1be26"), raw_edit(**values))
    assert list(found) == ["provenance"] and says in found["provenance"][0]


def test_provenance_believes_ingest_over_the_packet(bench):
    commits = dict(bench.trace.commits, v2=bench.trace.commits["v1"])  # ingest says v2 is another commit
    found = failing_after(
        bench, seg("strategy-b1be26"), lambda row: None, trace=dataclasses.replace(bench.trace, commits=commits)
    )
    assert "provenance" in found


# --- ncu-attribution -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, field",
    [
        (
            lambda r: r["evidence"]["summary"]["bottleneck_evidence"].update(basis="profiler"),
            "bottleneck_evidence.basis",
        ),
        (lambda r: r["retrieval"]["signals"].update(bottleneck="store-bandwidth-bound"), "signals.bottleneck"),
        (
            lambda r: r["evidence"]["summary"].update(mechanism_metrics={"occupancy_limiter": "registers"}),
            "mechanism_metrics",
        ),
    ],
)
def test_profiler_claims_without_a_usable_capture_fail(bench, change, field):
    found = failing_after(bench, seg("strategy-d77e3f"), record_edit(change))  # neither it nor its parent captured
    assert list(found) == ["ncu-attribution"] and field in found["ncu-attribution"][0]


def test_a_usable_capture_backs_profiler_claims(bench):
    # strategy-6e81e4 builds on a version with a usable capture whose symptoms give `tail-effect`
    for pick, change in (
        ("strategy-6e81e4", lambda r: r["retrieval"]["signals"].update(bottleneck="tail-effect")),
        ("strategy-6e81e4", lambda r: r["retrieval"]["signals"].pop("bottleneck")),
        ("strategy-b1be26", lambda r: r["evidence"]["summary"]["bottleneck_evidence"].update(tool=None)),
    ):
        assert failing_after(bench, seg(pick), record_edit(change)) == {}


def test_a_strategys_bottleneck_is_its_parents_capture_never_its_own(bench):
    # strategy-b1be26 has its own (after) capture but its parent has none: no bottleneck, basis bench-only
    packet, record = next((bench.packet_of(rel), r) for rel, r in bench.records if r["id"].endswith("sb1be26"))
    assert packet.agent_facing["profiler"]["ncu_measured_the_kernel_under_test"]
    # no bottleneck of its own capture: at most what the parent's step record states (#26)
    parent_said = [i["text"] for i in packet.agent_facing["evidence"] if i["kind"] == "parent-bottleneck-type"]
    assert record["payload"]["problem"]["bottleneck"] in (None, *parent_said)
    assert record["evidence"]["summary"]["bottleneck_evidence"]["basis"] == "bench-only"
    found = failing_after(
        bench,
        seg("strategy-b1be26"),
        record_edit(lambda r: r["evidence"]["summary"]["bottleneck_evidence"].update(basis="profiler", tool="ncu")),
    )
    assert list(found) == ["ncu-attribution"]


def test_a_capture_ingest_found_unusable_backs_nothing(bench):
    # the v2 packet claims its capture measured the kernel; ingest disagrees
    found = failing_after(
        bench,
        seg("strategy-b1be26"),
        lambda row: None,
        trace=dataclasses.replace(bench.trace, usable_captures=frozenset()),
    )
    assert list(found) == ["ncu-attribution"]


# --- store-overlap ---------------------------------------------------------------------------------


def test_an_id_the_live_store_holds_for_another_episode_fails(bench):
    rel, record = bench.records[0]
    live = LiveStore({record["id"]: "hopper|triton|misc|another_lever|operator"})
    found = failing_after(bench, lambda b, r, rec: r == rel, lambda row: None, live=live)
    assert list(found) == ["store-overlap"] and "it would overwrite that record" in found["store-overlap"][0]
    found = failing_after(bench, lambda b, r, rec: r == rel, lambda row: None, live=LiveStore({record["id"]: None}))
    assert list(found) == ["store-overlap"]


def test_a_held_episode_or_the_already_admitted_record_passes_for_gate_match(bench):
    """A held episode is a confirm or conflict (gate match proposes it), and the record admitted by
    `gate commit-all` holds its own id and episode: neither is a validation failure."""
    rel, record = bench.records[0]
    held_episode = LiveStore({"nvidia.hopper.triton.x.y-z": record["episode_key"]})
    admitted = LiveStore({record["id"]: record["episode_key"]})
    for live in (held_episode, admitted):
        assert failing_after(bench, lambda b, r, rec: r == rel, lambda row: None, live=live) == {}


def test_within_a_trace_every_holder_of_a_duplicate_id_or_episode_fails():
    """One trace's claims: partition gives every segment its own episode, so a second holder of one is a
    record that took another's episode, and a repeat of a lever within one run is no confirmation of it."""
    claims = [
        Claim("distilled/a/x.json", "x", "k1"),
        Claim("distilled/a/y.json", "y", "k1"),
        Claim("records/strategy/x.json", "x", "k2"),
        Claim("distilled/a/z.json", "z", "k3"),
    ]
    found = overlaps(claims, LiveStore())
    assert set(found) == {"distilled/a/x.json", "distilled/a/y.json", "records/strategy/x.json"}
    assert any("episode_key 'k1' is also claimed by distilled/a/y.json" in m for m in found["distilled/a/x.json"])
    assert any("id 'x' is also claimed by distilled/a/x.json" in m for m in found["records/strategy/x.json"])


def test_across_traces_only_a_duplicate_id_fails():
    """The summary's rule: a shared episode is admission's confirm or conflict, a shared id is one file."""
    claims = [
        Claim("distilled/a/x.json", "x", "k1"),
        Claim("distilled/b/y.json", "y", "k1"),
        Claim("distilled/b/x.json", "x", "k2"),
    ]
    found = overlaps(claims, LiveStore(), kinds=("id",))
    assert set(found) == {"distilled/a/x.json", "distilled/b/x.json"}
    assert not any("episode_key" in m for msgs in found.values() for m in msgs)
    assert holders(claims, "episode_key") == {"k1": ["distilled/a/x.json", "distilled/b/y.json"]}


# --- malformed records: a FAIL with the path, never a traceback ------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        [1, 2],
        "text",
        None,
        {},
        {"id": 5, "payload": "x", "retrieval": [], "evidence": None, "worth": 3},
        {
            "schema": "clean-1.3",
            "id": "a.b.c.d.e",
            "type": "strategy",
            "payload": {"implementation": ["x"]},
            "evidence": {"raw": "v2", "summary": []},
            "retrieval": {"scope": "hopper", "signals": 1},
        },
    ],
)
def test_a_malformed_record_fails_with_its_path(bench, record):
    rel = bench.records[0][0]
    verdict = finish([judge(rel, record, None, bench.packet_at(rel), bench.trace, None)], LiveStore())[0]
    assert "schema" in verdict.failed
    messages = [m for _, msgs in verdict.gates.values() for m in msgs]
    assert all(m.startswith(rel + ": ") for m in messages)
    assert not any("could not read this record" in m for m in messages)  # no gate tripped over the shape


def test_an_unparseable_file_fails_the_schema_gate_only():
    verdict = finish(
        [judge("distilled/t/x.json", None, "not valid JSON (x)", None, TraceContext("t"), None)], LiveStore()
    )[0]
    assert verdict.failed == ["schema"] and verdict.gates["schema"][1] == ["distilled/t/x.json: not valid JSON (x)"]
    assert {s for g, (s, _) in verdict.gates.items() if g != "schema"} == {"SKIP"}


@pytest.mark.parametrize(
    "text",
    [
        "(profiler-confirmed)",
        "confirmed by profiling the kernel",
        "the hardware counters show fewer stalls",
        "ncu shows",
    ],
)
def test_profiler_wording_in_any_form_is_a_profiler_claim(text):
    """#25: "(profiler-confirmed)", "confirmed by profiling", "the hardware counters show" claim a capture."""
    from optrace.gates.trace.ncu_attribution import profiler_hit

    assert profiler_hit(text)


@pytest.mark.parametrize("text", ["the profile of the latency curve", "a profile-guided build", "profiled"])
def test_the_word_profile_alone_claims_no_capture(text):
    from optrace.gates.trace.ncu_attribution import profiler_hit

    assert not profiler_hit(text)


def _gain_packet(pct: float, floor: float, geo: float) -> Packet:
    measurements = {"improve_pct_vs_floor": pct, "floor_before_us": floor, "geomean_us": geo}
    return Packet("strategy-000000", {"agent_facing": {"measurements": measurements}})


def test_a_gain_rounds_half_even_from_the_exact_improvement():
    """(40 - 39.1) / 40 = 2.25 % exactly: half-even gives 2.2, never half-up's 2.3 (#27's surviving mutant),
    in the gain check (Pool) and in a claim's slot (claim_rules.matches_value) alike."""
    from optrace.gates.trace.claim_rules import matches_value

    pool = Pool(_gain_packet(2.25, 40.0, 39.1))
    exact = (Decimal("40.0") - Decimal("39.1")) / Decimal("40.0") * 100
    assert pool.is_improvement(2.2) and not pool.is_improvement(2.3)
    assert matches_value("2.2", 2.25, exact) and not matches_value("2.3", 2.25, exact)


def test_a_gain_rounded_needs_at_least_one_decimal():
    """2.49 % may be written 2.5 (one decimal), never 2 (no decimal: a rounding to an integer is a new number)."""
    from optrace.gates.trace.claim_rules import matches_value

    pool = Pool(_gain_packet(2.49, 100.0, 97.51))
    exact = (Decimal("100.0") - Decimal("97.51")) / Decimal("100.0") * 100
    assert pool.is_improvement(2.5) and not pool.is_improvement(2.0) and not pool.is_improvement(2)
    assert matches_value("2.5", 2.49, exact) and not matches_value("2", 2.49, exact)
