"""Red-team round on the #10 gates: attacks each gate let through when read literally, one case per
class, on three traces -- the example, the FlashInfer-Bench A800 CUDA run and a third shape the suite had
not (b200_trace: V<N> grammar, a CUDA GEMM on a B200, an `ncu --csv` export and a summary.txt + REPORT.md
capture). Each case asserts the gate that must fire; the benign controls are honest rewrites the new
rules must still let through; the byte- and file-level cases must FAIL by name, never crash or hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from optrace.gates.store.store import parse_json_bytes
from optrace.gates.trace.fabrication import Pool
from optrace.gates.trace.injection import validate_records, workbench
from optrace.gates.trace.store_overlap import LiveStore
from optrace.pipeline_facts import capture_for_signals
from tests.support.mined import copy_mined

from .b200_trace import NAME as B200_NAME
from .b200_trace import build_b200_trace
from .conftest import mine
from .test_planted_defects import CRASH, measurements, packet, pick, setter, verdicts_after, with_capture
from .test_planted_defects import goal_plus as goal

S, A, R = "strategy", "anti-strategy", "reference-kernel"
# class 7 (words the packet never states) is the claims gate's since #25; the signals label structured-facts'
CLM, STRUCT = "claims", "structured-facts"
FAB, LAY, NCU, VERB = "no-fabrication", "layout", "ncu-attribution", "verbatim"
TRACES = ("example", "fib", "b200")


@pytest.fixture(scope="session")
def all_benches(benches, tmp_path_factory):
    root = tmp_path_factory.mktemp("adv-b200")
    mine(build_b200_trace(root / B200_NAME), root, "b200")
    return {**benches, "b200": workbench(root, "b200")}


def fmt(v) -> str:
    return f"{v:g}"


def m(bench, i, key):
    return fmt(measurements(bench, i)[key])


def first_shape_us(bench, i):
    return fmt(measurements(bench, i)["per_shape_latency"][0]["latency_us"])


def n_shapes(bench, i):
    return packet(bench, i).agent_facing["operator"]["n_benchmarked_shapes"]


def unstated_factor(bench, i):
    stated = Pool(packet(bench, i)).with_unit.get("x", frozenset())
    return next(k for k in range(3, 99) if Decimal(k) not in stated)


def with_conclusion(bench, rel, rec):
    return with_capture(bench, rel, rec) and bool(bench.packet_at(rel).agent_facing["profiler"].get("conclusion"))


def only_lines(mark):
    def mutate(r, bench, i):
        code = packet(bench, i).code
        lines = [line for line in code.splitlines() if line.startswith(mark) and not line.startswith(mark * 3)]
        r["payload"]["implementation"]["snippet"] = "\n".join(lines[:6])

    return mutate


def has_diff(bench, rel, rec):
    p = bench.packet_at(rel)
    return (p.code_file or "").endswith(".diff") and "snippet" in rec["payload"].get("implementation", {})


# (name, record type, mutation, gate that must fire[, which records it suits])
ATTACKS = [
    # units: a packet number written with a unit the packet never gives it
    (
        "unit: the geomean (us) written as a percentage",
        S,
        goal(lambda b, i: f"latency cut by {m(b, i, 'geomean_us')}%"),
        FAB,
    ),
    (
        "unit: the floor (us) written as a percentage",
        S,
        goal(lambda b, i: f"{m(b, i, 'floor_before_us')} percent faster"),
        FAB,
    ),
    (
        "unit: the improvement (%) written as a factor",
        S,
        goal(lambda b, i: f"{m(b, i, 'improve_pct_vs_floor')}x faster"),
        FAB,
    ),
    ("unit: microseconds written as milliseconds", S, goal(lambda b, i: f"geomean {m(b, i, 'geomean_us')} ms"), FAB),
    ("unit: a per-shape latency written in ns", R, goal(lambda b, i: f"{first_shape_us(b, i)} ns per call"), FAB),
    (
        "unit: max_abs_err written as a percentage",
        S,
        goal(lambda b, i: f"error {fmt(measurements(b, i)['correctness']['max_abs_err'])}%"),
        FAB,
    ),
    (
        "unit: a pct key holding the geomean",
        S,
        lambda r, b, i: r["evidence"]["raw"]["effect"].update(vs_baseline_pct=measurements(b, i)["geomean_us"]),
        FAB,
    ),
    ("factor words: twice as fast", S, goal("It is twice as fast."), FAB),
    ("factor words: halved the latency", S, goal("It halved the latency."), FAB),
    ("factor words: an order of magnitude", S, goal("An order of magnitude faster."), FAB),
    ("factor words: N times slower", A, goal(lambda b, i: f"It was {unstated_factor(b, i)} times slower."), FAB),
    ("factor: 4x speedup", S, goal("a 4x speedup"), FAB),
    ("factor: multiplication sign", R, goal("4× the bandwidth"), FAB),
    # what a reader cannot see splits or disguises a number
    ("invisible: zero-width space inside a number", S, goal("latency cut by 4\u200b7%"), FAB),
    ("invisible: soft hyphen inside a number", S, goal("latency cut by 4\u00ad7%"), FAB),
    ("invisible: combining mark inside a number", A, goal("4\u03017 percent slower"), FAB),
    ("invisible: thin space as a digit group", S, goal("cut by 4\u20097%"), FAB),
    (
        "invisible: bidi override reorders a true number",
        S,
        goal(lambda b, i: f"latency \u202e{first_shape_us(b, i)}\u202c us"),
        FAB,
    ),
    ("look-alike: Cyrillic O for zero", S, goal("latency cut by 4\u041e%"), FAB),
    ("look-alike: Latin O glued after a letter", R, goal("x7O3 faster"), FAB),  # 703, a factor no packet states
    ("look-alike: a leading Cyrillic O", S, goal("\u041e7% faster"), FAB),
    # a run the look-alike reader once rescanned at every position (16 s per string): read once, fails
    ("look-alike: a 15 000-digit run after a look-alike", A, goal("1O " + "1" * 15000), FAB),
    # derived facts the packet determines
    (
        "derived: n_shapes changed",
        S,
        setter(("retrieval", "signals", "shape_regime", "n_shapes"), lambda b, i, r: n_shapes(b, i) + 1),
        LAY,
    ),
    (
        "derived: var_axes widened to a constant axis",
        S,
        lambda r, b, i: r["retrieval"]["signals"]["shape_regime"].update(
            var_axes=r["retrieval"]["signals"]["shape_regime"]["var_axes"] + ["hidden_size"]
        ),
        LAY,
    ),
    (
        "derived: predicate narrows the regime",
        A,
        setter(("retrieval", "signals", "shape_regime", "predicate"), "batch_size >= 64"),
        LAY,
    ),
    (
        "derived: measured_over counts other shapes",
        S,
        lambda r, b, i: r["worth"]["gain"]["metrics"][0].update(
            measured_over=f"geomean over {n_shapes(b, i) + 1} benchmarked shapes"
        ),
        LAY,
    ),
    (
        "derived: is_baseline flipped",
        S,
        lambda r, b, i: r["payload"]["trace"]["builds_on"].update(
            is_baseline=not r["payload"]["trace"]["builds_on"]["is_baseline"]
        ),
        LAY,
    ),
    ("derived: edit_scope understated", S, setter(("payload", "cost", "edit_scope"), "one-line"), LAY),
    (
        "gain: latency metric direction flipped",
        S,
        lambda r, b, i: r["worth"]["gain"]["metrics"][0].update(direction="higher-better"),
        FAB,
    ),
    # quoted code: the removed lines or untouched context presented as the implementation
    ("verbatim: snippet of the diff's removed lines", S, only_lines("-"), VERB, has_diff),
    ("verbatim: snippet of unchanged context only", S, only_lines(" "), VERB, has_diff),
    (
        "verbatim: core_kernel_name of the harness kernel",
        R,
        lambda r, b, i: r["payload"]["implementation"].update(
            core_kernel_name="distribution_elementwise_grid_stride_kernel"
        ),
        VERB,
    ),
    (
        "verbatim: core_kernel_name of a kernel the trace lacks",
        R,
        lambda r, b, i: r["payload"]["implementation"].update(core_kernel_name="flash_attention_fwd"),
        VERB,
    ),
    # names of hardware, dtype, DSL and operator written so the reader did not see them
    ("names: another operator in the goal", S, goal("Also speeds up softmax and layernorm."), LAY),
    (
        "names: problem.statement of another operator",
        R,
        lambda r, b, i: r["payload"]["problem"].update(statement="Row softmax over 4096 columns."),
        CLM,
    ),
    ("names: a DSL the packet never names", S, goal("Ported to CUTLASS."), LAY),
    ("names: a DSL in a key", A, setter(("payload", "config"), {"tilelang": True}), LAY),
    ("names: dtype with a hyphen", S, goal("Inputs are FP-8."), LAY),
    ("names: dtype in words", R, goal("Quantized to 8-bit integers."), LAY),
    ("names: an architecture the regex lacked", S, goal("Also on Jetson Thor."), LAY),
    ("names: a Grace-Hopper product", A, goal("Also on GH200."), LAY),
    ("scope: any GPU in a trigger", S, lambda r, b, i: r["retrieval"]["triggers"].append("any GPU"), LAY),
    (
        "scope: all-architectures tag",
        S,
        lambda r, b, i: r["retrieval"]["technique_tags"].append("all-architectures"),
        LAY,
    ),
    ("scope: vendor-agnostic goal", R, goal("The kernel is vendor-agnostic."), LAY),
    ("scope: verified_on_all_gpus key", A, setter(("payload", "config"), {"verified_on_all_gpus": True}), LAY),
    # the account of the step is the packet's own
    (
        "account: change names a technique the step never used",
        S,
        lambda r, b, i: r["payload"].update(change="uses TMA multicast and warp specialization"),
        CLM,
    ),
    (
        "account: lesson invents a mechanism",
        A,
        lambda r, b, i: r["payload"].update(lesson="bank conflicts serialize the warps"),
        CLM,
    ),
    (
        "account: attempted invents what was tried",
        A,
        lambda r, b, i: r["payload"].update(attempted="register spills to local memory"),
        CLM,
    ),
    (
        "account: a symptom nobody observed",
        S,
        lambda r, b, i: r["retrieval"]["signals"]["symptoms"].append("high register pressure"),
        CLM,
    ),
    (
        "account: builds_on of another approach",
        S,
        lambda r, b, i: r["payload"]["trace"]["builds_on"].update(approach="cuBLAS epilogue fusion"),
        CLM,
    ),
    # profiler words disguised, and claims without a capture
    (
        "profiler: NCU glued to a word",
        S,
        goal("NCUreport says memory bound"),
        NCU,
        lambda b, rel, rec: not with_capture(b, rel, rec),
    ),
    (
        "profiler: full-width letters",
        A,
        goal("\uff4e\uff43\uff55 shows it"),
        NCU,
        lambda b, rel, rec: not with_capture(b, rel, rec),
    ),
    (
        "profiler: Cyrillic look-alike letter",
        A,
        goal("N\u0455ight shows it"),
        NCU,
        lambda b, rel, rec: not with_capture(b, rel, rec),
    ),
    (
        "profiler: a roofline claim",
        S,
        goal("the roofline says it is bandwidth bound"),
        NCU,
        lambda b, rel, rec: not with_capture(b, rel, rec),
    ),
    (
        "profiler: a bottleneck note without a capture",
        S,
        setter(("evidence", "summary", "bottleneck_evidence", "note"), "dram bandwidth saturated"),
        NCU,
        lambda b, rel, rec: not with_capture(b, rel, rec),
    ),
    # with a capture: a fragment of the conclusion is another claim
    (
        "capture: bottleneck a two-word fragment",
        S,
        setter(("payload", "problem", "bottleneck"), "not hide"),
        NCU,
        with_conclusion,
    ),
    (
        "capture: bottleneck a one-word fragment",
        S,
        setter(("payload", "problem", "bottleneck"), "is"),
        NCU,
        with_conclusion,
    ),
    (
        "capture: note cut mid-clause",
        S,
        lambda r, b, i: r["evidence"]["summary"]["bottleneck_evidence"].update(
            note=" ".join(packet(b, i).agent_facing["profiler"]["conclusion"].split()[1:3])
        ),
        NCU,
        with_conclusion,
    ),
]


def applied(all_benches, trace, rtype, suits):
    """(bench, index) of the first record of the trace the case applies to; skips when there is none."""
    if trace not in all_benches:
        pytest.skip("../shared/data is absent")
    i = pick(all_benches[trace], rtype, suits)
    if i is None:
        pytest.skip(f"the {trace} trace has no {rtype} record this case applies to")
    return all_benches[trace], i


def attack_cases():
    return [pytest.param(t, *c[:4], c[4] if len(c) > 4 else None, id=f"{t}-{c[0]}") for t in TRACES for c in ATTACKS]


@pytest.mark.parametrize("trace, name, rtype, mutate, gate, suits", attack_cases())
def test_a_redteam_attack_fails_its_gate(all_benches, trace, name, rtype, mutate, gate, suits):
    v = verdicts_after(*applied(all_benches, trace, rtype, suits), mutate)
    messages = [msg for g in v.failed for msg in v.gates[g][1]]
    assert gate in v.failed, (name, v.failed, messages[:4])
    assert not any(CRASH.search(msg) for msg in messages), messages


def test_every_class_applies_on_some_trace(all_benches):
    """A class no trace has a record for would prove nothing: each attack must apply somewhere."""
    for c in ATTACKS:
        suits = c[4] if len(c) > 4 else None
        assert any(pick(all_benches[t], c[1], suits) is not None for t in TRACES if t in all_benches), c[0]


def test_every_drafted_record_of_the_b200_trace_passes(all_benches):
    bench = all_benches["b200"]
    assert {rec["type"] for _, rec in bench.records} >= {S, R}
    assert any(with_capture(bench, rel, rec) for rel, rec in bench.records)
    for v in validate_records(bench, bench.records, LiveStore()):
        assert v.failed == [], [msg for g in v.failed for msg in v.gates[g][1]][:4]


# --- benign: the same truth, written with units, clauses and words the rules must accept --------------


def capture_clause(r, bench, i):
    """A whole clause of the conclusion the record is entitled to (a strategy's: its parent's capture)."""
    first = capture_for_signals(packet(bench, i).data)["conclusion"].split(":")[0]
    r["payload"]["problem"]["bottleneck"] = first + "."


def entitled_conclusion(bench, rel, rec):
    capture = capture_for_signals(bench.packet_at(rel).data)
    return bool(capture and capture.get("conclusion"))


BENIGN = [
    ("the improvement with a percent sign", S, goal(lambda b, i: f"{m(b, i, 'improve_pct_vs_floor')}% lower latency")),
    (
        "the improvement spelled percent",
        S,
        goal(lambda b, i: f"{m(b, i, 'improve_pct_vs_floor')} percent lower latency"),
    ),
    ("the geomean in us", S, goal(lambda b, i: f"geomean {m(b, i, 'geomean_us')} us")),
    ("the geomean in µs", S, goal(lambda b, i: f"geomean {m(b, i, 'geomean_us')} µs")),
    ("the floor in us", S, goal(lambda b, i: f"from {m(b, i, 'floor_before_us')}us")),
    (
        "a per-shape latency in us",
        R,
        goal(lambda b, i: f"{first_shape_us(b, i)} us on {measurements(b, i)['per_shape_latency'][0]['shape']}"),
    ),
    ("a Latin word glued to digits is not a look-alike", S, goal("(block0 of the grid)")),
    (
        "the record's own GPU in full-width letters",
        S,
        lambda r, b, i: r["payload"].update(
            goal=r["payload"]["goal"]
            + " "
            + r["payload"]["problem"]["target"].split()[0].translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)})
        ),
    ),
    ("a plain 'any' that widens nothing", S, goal("without any change to the harness")),
    (
        "the change as the packet says it",
        S,
        lambda r, b, i: r["payload"].update(change=packet(b, i).agent_facing["what_the_run_said"]["change"]),
    ),
    (
        "a symptom copied from the packet",
        S,
        lambda r, b, i: r["retrieval"]["signals"]["symptoms"].append(
            packet(b, i).agent_facing["what_the_run_said"]["change"]
        ),
    ),
]


# Controls of one gate's reading that add words no evidence states: the gate they were written for must
# let them through, and the claims gate (#25) rejects what they say (an identifier nobody wrote, a claim
# about the harness nobody made, a change read as a symptom); its own honest twins are in test_claims.
UNCITED = {
    "a Latin word glued to digits is not a look-alike",
    "a plain 'any' that widens nothing",
    "a symptom copied from the packet",
}


@pytest.mark.parametrize(
    "trace, name, rtype, mutate", [pytest.param(t, *c, id=f"{t}-{c[0]}") for t in TRACES for c in BENIGN]
)
def test_a_benign_rewrite_passes_the_redteam_rules(all_benches, trace, name, rtype, mutate):
    v = verdicts_after(*applied(all_benches, trace, rtype, None), mutate)
    failed = [g for g in v.failed if not (name in UNCITED and g == "claims")]
    assert failed == [], (name, [msg for g in v.failed for msg in v.gates[g][1]][:4])


@pytest.mark.parametrize(
    "text, read",
    [
        ("the l2 cache, built with -O3", ["2", "3"]),  # a leading Latin look-alike stays a letter
        ("1O% x1O 4\u041e.5", ["10", "10", "40.5"]),  # after a digit it is the digit it looks like
        ("4\u200b7 4\u00a0096", ["47", "4096"]),  # invisible characters and digit-group spaces join
    ],
)
def test_the_reader_sees_what_a_person_sees(text, read):
    from optrace.gates.trace.numbers import number_tokens

    assert [t for t, _ in number_tokens(text)] == read


def test_a_whole_clause_of_the_conclusion_is_a_bottleneck(all_benches):
    bench = all_benches["b200"]
    found = (pick(bench, rtype, entitled_conclusion) for rtype in (S, R, A))
    i = next((i for i in found if i is not None), None)
    assert i is not None, "a b200 record whose capture concludes (the final kernel's own)"
    v = verdicts_after(bench, i, capture_clause)
    assert v.failed == [], [msg for g in v.failed for msg in v.gates[g][1]][:4]


# --- bytes and files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, why",
    [
        (b'{"a": 1, "a": 2}', "appears twice"),
        (b'{"worth": {"gain": {"pct": 99.0, "pct": 3.07}}}', "appears twice"),
        (b'{"goal": "\\ud800"}', "lone surrogate"),
        (b'{"\\udfff": 1}', "lone surrogate"),
    ],
)
def test_duplicate_keys_and_lone_surrogates_are_not_records(data, why):
    record, error = parse_json_bytes(data)
    assert record is None and why in error


def test_a_fifo_or_link_in_distilled_fails_by_name_without_hanging(benches, mined_roots, tmp_path):

    bench = benches["example"]
    root = tmp_path / "results"
    copy_mined(mined_roots["example"], root, bench.slug)
    distilled = root / "distilled" / bench.slug
    distilled.mkdir(parents=True)
    rel, record = bench.records[0]
    (root / rel).write_text(json.dumps(record), encoding="utf-8")
    os.mkfifo(distilled / "a-fifo.json")
    os.symlink(root / rel, distilled / "a-link.json")
    env = {**os.environ, "OPTRACE_CACHE_KEY": str(tmp_path / "key")}
    run = subprocess.run(
        [sys.executable, "-m", "optrace", "validate", "trace", "--results", str(root), "--slug", bench.slug],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads((root / "staging" / "reports" / bench.slug / "validation.json").read_text(encoding="utf-8"))
    rows = {Path(r["path"]).name: r for r in report["records"]}
    assert (
        rows["a-fifo.json"]["failed"] == ["schema"]
        and "not a regular file" in rows["a-fifo.json"]["gates"]["schema"]["messages"][0]
    )
    assert rows["a-link.json"]["failed"] == ["schema"]
    assert rows[Path(rel).name]["status"] == "PASS"


def test_stage_reads_no_fifo_swapped_in_after_validation(tmp_path):
    from optrace.distill.records import TraceRecords
    from optrace.publish.staging import validated_record

    (tmp_path / "distilled" / "t").mkdir(parents=True)
    os.mkfifo(tmp_path / "distilled" / "t" / "r.json")
    records = TraceRecords(tmp_path / "distilled" / "t", {"r.json": b"{}"})  # the area's file comes first
    assert validated_record(records, "t", "distilled/t/r.json", "0" * 64) is None  # at once: no writer needed
