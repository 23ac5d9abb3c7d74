"""Hostile inputs to the scrubber and the anonymization gate (issue #10 class 6, #13 classes 2 and 4).

Each leak shape is checked both ways: the scrubber removes it (and what it writes is clean by its own
check and by the store gate's), and the gate finds it in raw text. Benign controls must come through
unchanged. Denylist evasions (case, substrings, separators, zero-width and combining characters,
look-alike and full-width letters, escapes, base-N) must neither survive scrubbing nor pass the gate.
The big-input cases are sized so that a quadratic scan would run for minutes; they assert results,
not times (timings live in benchmarks/, the report quotes them).
"""

import json

import pytest

from optrace.gates.store import anonymization, specimens
from optrace.gates.store.model import GateContext, RecordView
from optrace.report import recon
from optrace.scrub.anonymize import Scrubber
from optrace.scrub.leak_patterns import (
    Denylist,
    code_language,
    compile_denylist,
    denylist_pattern,
    find_cross_references,
    find_leaks,
    prose_spans,
)
from tests.support.mined import packet_file


def contains_denied(text: str, terms) -> bool:
    """Whether `text` holds any of `terms` in any spelling the gates' Denylist sees."""
    return compile_denylist(tuple(terms)).contains(text)


TERMS = ("alice", "gpu-node7", "corp.example", "Strauß")


@pytest.fixture
def scrubber():
    return Scrubber(TERMS)


def assert_clean(scrubber, out):
    assert scrubber.leaks(out) == [], out
    assert find_leaks(out) == [], out
    assert not contains_denied(out, TERMS), out
    assert scrubber.text(out) == out, "scrubbing scrubbed text changed it"


# --- leak shapes: (name, text, what must be gone) --------------------------------------------------

SHAPES = [
    ("upper-case 40-hex sha", "fixed in 0123456789ABCDEF0123456789ABCDEF01234567", "0123456789ABCDEF"),
    ("upper-case 8-hex id", "run DEADBEE1 crashed", "DEADBEE1"),
    ("upper-case uuid", "shape E4F80B39-1C2D-4E5F-8A9B-0C1D2E3F4A5B was slow", "E4F80B39"),
    ("hash glued to _", "see commit_abc1234 for it", "abc1234"),
    ("hash glued to -", "branch run-abc1234 won", "abc1234"),
    ("hash before a full stop", "reverted by abc1234.", "abc1234"),
    ("hash with a file extension", "saved as abc1234.json", "abc1234"),
    ("version spelled out", "as version 7 showed", "version 7"),
    ("versions listed", "versions 3 and 5 regressed", "versions 3"),
    ("version in capitals", "as VERSION 7 showed", "VERSION 7"),
    ("version in words", "as version seven showed", "seven"),
    ("version split by a zero-width space", "as v\u200b7 showed", "7"),
    ("version spelled with an entity", "as ver&#115;ion 7 showed", "7"),
    ("hash split by a zero-width space", "fixed in abc1\u200b234", "234"),
    ("path in capitals", "copied to /HOME/bob/x", "bob"),
    ("path with entities", "copied to &#47;home&#47;bob", "bob"),
    ("version glued in an identifier", "tried kernel_v7 first", "v7"),
    ("version after _", "the _v7 path", "_v7"),
    ("version with a type far away", "v4 switched to bf16 loads later", "v4"),
    ("version next to half", "v4 used half the registers", "v4"),
    ("~user path", "cloned to ~alice/runs/x", "~alice"),
    ("scratch path", "copied to /scratch/bob/trace", "/scratch/bob"),
    ("Windows path", r"from C:\Users\bob\trace", "Users"),
    ("UNC path", r"from \\fileserver\share\x", "fileserver"),
    ("upper-case TLD", "mail BOB@CORP.COM now", "CORP.COM"),
    ("one-letter local part", "write to j@corp.io", "j@corp.io"),
    ("hyphenated domain", "write to jo@my-corp.com", "my-corp"),
    ("hyphenated subdomain", "write to jo@mail.my-corp.com", "my-corp.com"),  # the whole domain, not `@mail.my`
    ("hyphens in several labels", "write to jo@eu-west.mail.my-corp.co.uk", "corp.co.uk"),
    ("spelled-out e-mail", "write to bob at example dot com", "example dot com"),
    ("spelled-out e-mail in capitals", "write to bob AT example DOT com", "example"),
    ("parenthesised e-mail", "write to bob (at) example (dot) com", "example"),
    ("bracketed e-mail, no spaces", "write to bob[at]example[dot]org", "example"),
    ("e-mail opening the text", "bob@corp.io wrote it", "corp.io"),
    ("handle of a fediverse account", "follow @bob@mastodon.social", "mastodon"),
    ("e-mail after a long run of dashes", "-" * 300 + "bob@corp.io", "bob@corp"),
    ("bracketed e-mail", "write to bob [at] example [dot] org", "example"),
    ("upper-case markdown page", "see NOTES.MD", "NOTES"),
    ("markdown page, mixed case", "see docs/Plan.Md today", "Plan"),
    ("full-width path", "see \uff0fhome\uff0fbob/x", "bob"),
    ("full-width e-mail", "mail bob\uff20corp\uff0ecom", "corp"),
    ("URL-encoded path", "GET /x?f=%2Fhome%2Fbob%2Fy", "bob"),
    ("full-width hash", "commit \uff21\uff22\uff23\uff11\uff12\uff13\uff14", "\uff21\uff22\uff23"),
]


@pytest.mark.parametrize("text, gone", [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_scrubber_removes_and_gate_finds_each_shape(scrubber, text, gone):
    assert find_leaks(text), f"the gate misses {text!r}"
    out = scrubber.text(text)
    assert gone.lower() not in out.lower(), out
    assert_clean(scrubber, out)


BENIGN = [
    "sm_90 with bf16 inputs and BLOCK_128 tiles",
    "the v_proj and q_proj weights",
    "17.9 us -> 14.6 us (+18.6%), 1.662843e-02 error, 4096x4096, 12345678",
    "exponents: 1.2345678e5, 12345678e-3 and 12345678E+03 s",
    "CUDA version 12.4 and Triton v3.1",
    "vectorized v4 loads, ld.global.v4.f32, float4 v2, v2 f16 pairs",
    "results cached in ~/.cache/triton",
    "we looked at the dot product at 3 points",
    "see nvidia.h100.gluon.rmsnorm.num-warps-4-a66e116 for the id",
    "an annotated palace of optimal icecream",  # words near, but not holding, a term
    "V100 vs H100 on sm_80",
    "4l1c3 0115 4096",  # mostly digits: numbers, not a term written in digits
    "17.9 \u00b5s, x\u00b2 and \ufb01ne print",  # non-ASCII prose is read through NFKC but kept as written
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_left_alone(scrubber, text):
    assert scrubber.text(text) == text
    assert find_leaks(text, trace_ids=True) == [] or "nvidia." in text  # a record id is another gate's
    assert not contains_denied(text, TERMS)


def test_a_glued_version_loses_only_its_number(scrubber):
    assert (
        scrubber.text("tried kernel_v7, then pack_v4(x) and v7_fast") == "tried kernel_vN, then pack_vN(x) and vN_fast"
    )


def test_a_hash_after_numbers_is_still_found():
    """Numbers, fractions, exponents and record-id tails before a hash are skipped, not the end of the scan."""
    for before in ("12345678", "1.2345678e5", "12345678e-3", "nvidia.h100.gluon.rmsnorm.num-warps-4-a66e116"):
        assert [leak.token for leak in find_leaks(f"{before} then abc1234f")] == ["abc1234f"], before


def test_the_gate_spares_all_letter_hex_words_the_scrubber_removes(scrubber):
    """Prose words like `defaced` are no hash to the gate; the scrubber drops an all-letter lower-case
    hex run (`deadbeef`) anyway, but keeps a shouted word (`DEFACED`)."""
    assert find_leaks("the buffer was defaced") == []
    assert scrubber.text("run deadbeef crashed") == "run an identifier crashed"
    assert scrubber.text("the buffer was DEFACED") == "the buffer was DEFACED"


def test_the_gate_quotes_a_disguised_leak_as_written():
    assert [(leak.kind, leak.token, leak.start) for leak in find_leaks("mail bob\uff20corp\uff0ecom now")] == [
        ("e-mail address", "bob\uff20corp\uff0ecom", 5)
    ]


def test_cross_references_are_pages_store_paths_and_record_ids():
    text = "see docs/guide/x.md, records/strategy/r.json and nvidia.h100.gluon.rmsnorm.num-warps-4-a66e116"
    assert [(leak.kind, leak.token) for leak in find_cross_references(text)] == [
        ("markdown page", "docs/guide/x.md"),
        ("store path", "records/strategy/r.json"),
        ("record id", "nvidia.h100.gluon.rmsnorm.num-warps-4-a66e116"),
    ]


@pytest.mark.parametrize(
    "dsl, prose",
    [
        ("cuda", ["// b"]),  # C++: a `#` line is the preprocessor's
        ("triton", ["# tile"]),  # Python: `//` is floor division
        ("other", ["// b", "# tile"]),  # unknown: both
    ],
)
def test_the_gates_read_each_dsl_s_comments(dsl, prose):
    code = "n = a // b\n# tile\n"
    assert [code[a:b] for a, b in prose_spans(code, code_language(dsl))] == prose


def test_record_id_tail_is_no_hash():
    assert [leak.kind for leak in find_leaks("nvidia.h100.gluon.rmsnorm.num-warps-4-a66e116")] == []


# --- the denylist: every spelling ---------------------------------------------------------------

EVASIONS = [
    ("upper case", "ALICE"),
    ("substring", "aliceics"),
    ("camel case inside", "getAliceGrid"),
    ("split by -", "ali-ce"),
    ("split by _ and .", "a_l.i_c.e"),
    ("zero-width space", "al\u200bice"),
    ("soft hyphen", "ali\u00adce"),
    ("Cyrillic a", "\u0430lice"),
    ("Greek omicron", "gpu-n\u03bfde7"),
    ("full width", "\uff41\uff4c\uff49\uff43\uff45"),
    ("combining accent", "a\u0301lice"),
    ("Turkish dotted capital I", "AL\u0130CE"),
    ("dotless i", "al\u0131ce"),
    ("long s", "Strau\u017f\u017f"),
    ("letter-spaced", "a l i c e"),
    ("HTML entity", "a&#108;ice"),
    ("named HTML entity", "ali&#x63;e"),
    ("URL-encoded", "%61lice"),
    ("backslash escape", "\\x61lice"),
    ("unicode escape", "\\u0061lice"),
    ("base64", "YWxpY2U="),
    ("hex-encoded", "616c696365"),
    ("sharp s folds", "STRAUSS"),
    ("capital sharp s", "STRAU\u1e9e"),
    ("mathematical bold", "\U0001d41a\U0001d425\U0001d422\U0001d41c\U0001d41e"),
    ("host under a denylisted domain", "gpu-node-17.corp.example"),
    ("digits for letters", "a1ice"),
    ("digit for a letter in a host", "gpu-n0de7"),
    ("right-to-left override", "\u202eecila\u202c"),
    ("markup inside", "ali<b></b>ce"),
    ("markdown emphasis inside", "ali**ce**"),
    ("regional indicator letters", "\U0001f1e6\U0001f1f1\U0001f1ee\U0001f1e8\U0001f1ea"),
    ("hyphen breaking the line", "ali-\nce"),
    ("glued string literals", '"ali" "ce"'),
    ("concatenated string literals", "'ali' + 'ce'"),
    ("circled letters", "\u24d0\u24db\u24d8\u24d2\u24d4"),
    ("small capitals", "\u1d00\u029f\u026a\u1d04\u1d07"),
    ("enclosing mark inside", "ali\u20ddce"),
    ("blank letter inside", "ali\u3164ce"),
    ("named unicode escape", "\\N{LATIN SMALL LETTER A}lice"),
    ("octal escape", "\\141lice"),
    ("long unicode escape", "\\U00000061lice"),
    ("URL-encoded UTF-8", "%C3%A1lice"),
    ("base64 without padding", "YWxpY2U"),
    ("URL-safe base64", "YWxpY2U-Pj4="),
    ("base32", "MFWGSY3F"),
    ("padded base32", "MFWGSY3FHY7D4==="),
    ("upper-case hex", "616C696365"),
]


@pytest.mark.parametrize("spelling", [c[1] for c in EVASIONS], ids=[c[0] for c in EVASIONS])
def test_every_spelling_is_denied_scrubbed_and_gated(scrubber, spelling):
    text = f"tuned on {spelling} overnight."
    assert contains_denied(text, TERMS)
    out = scrubber.text(text)
    assert out.replace('"', "").replace("'", "") == "tuned on a private identifier overnight.", out  # quotes stay
    assert_clean(scrubber, out)
    record = specimens.strategy()
    record["payload"]["goal"] += " " + text
    messages = anonymization.check(RecordView(record, "r.json"), GateContext(denylist=denylist_pattern(TERMS)))
    assert any("denylisted term #" in m for m in messages), messages


@pytest.mark.parametrize("escape", ["\\UFFFFFFFF", "\\N{NO SUCH CHARACTER}"])
def test_an_escape_naming_no_character_stays_as_written(scrubber, escape):
    text = f"bad {escape} escape near alice"
    assert scrubber.text(text) == f"bad {escape} escape near a private identifier"


def test_a_separator_in_a_term_may_be_a_space_but_a_term_split_into_words_is_prose():
    deny = Denylist(TERMS)
    assert deny.contains("mail from corp example today")  # the term's own `.` written as a space
    assert not deny.contains("al ice") and not deny.contains("ali ce")  # documented: two words of prose


def test_letter_spacing_needs_three_letters():
    assert Denylist(("bob",)).contains("signed b o b today")
    assert not Denylist(("bo",)).contains("grid b o today")  # two spaced letters are too common to deny


def test_at_most_half_of_a_term_may_be_written_in_digits():
    deny = Denylist(("oils",))
    assert deny.contains("the 01ls run") and deny.contains("the 0i1s run")  # two of four
    assert not deny.contains("the 011s run") and not deny.contains("the 0115 run")  # three or four: a number


def test_the_longest_term_wins_and_spans_come_left_to_right():
    assert Denylist(("ali", "alice")).spans("x alice y") == [(2, 7)]
    assert Denylist(("alice", "icebox")).spans("x YWxpY2U= alice") == [(2, 10), (11, 16)]  # encoded, then plain


def test_a_denylisted_domain_takes_the_whole_host_name(scrubber):
    out = scrubber.text("ran on gpu-node-17.corp.example, then stopped")
    assert out == "ran on a private identifier, then stopped"


def test_reports_name_a_term_by_its_place_never_by_itself(scrubber):
    assert scrubber.leaks("ALICE and gpu-node7") == ["denylisted term #1", "denylisted term #2"]
    assert Denylist(TERMS).label("STRAUSS") == "term #4"


def test_replacement_words_never_hold_a_term():
    """A denylisted 'act' is inside 'redacted', 'private' inside 'a private identifier'."""
    s = Scrubber(("act", "private", "identifier", "anon"))
    out = s.text("the actor private identifier")
    assert not contains_denied(out, s.denylist) and out
    code = s.code("def act_fn(x):\n    return x  # private\n", "triton")
    assert not contains_denied(code, s.denylist) and code.startswith("def ")


# --- code: identifiers renamed consistently ---------------------------------------------------------


def test_identifiers_are_renamed_alike_on_both_sides_of_a_diff(scrubber):
    diff = (
        "@@ -1,4 +1,4 @@\n-def alice_reduce(x):\n+def alice_reduce(x, y):\n"
        "-    g = getAliceGrid(ALICE_BLOCK)  # from alice\n+    g = getAliceGrid(ALICE_BLOCK // 2)\n"
        "     return x // g\n"
    )
    out = scrubber.code(diff, "triton")
    assert out == (
        "@@ -1,4 +1,4 @@\n-def redacted_reduce(x):\n+def redacted_reduce(x, y):\n"
        "-    g = getRedactedGrid(REDACTED_BLOCK)  # from redacted\n"
        "+    g = getRedactedGrid(REDACTED_BLOCK // 2)\n     return x // g\n"
    )
    assert scrubber.code_leaks(out, "triton") == []
    assert scrubber.code(out, "triton") == out


def test_code_leak_check_reads_identifiers(scrubber):
    assert scrubber.code_leaks("def alice_reduce(x):\n    return x\n", "triton") == ["denylisted term #1"]
    assert scrubber.code_leaks("n = a // b  # tuned\n", "triton") == []


def test_cuda_identifiers_and_strings(scrubber):
    src = '__global__ void aliceKernel(float* x) { printf("gpu-node7\\n"); }  // by alice\n'
    out = scrubber.code(src, "cuda")
    assert "redactedKernel" in out and not contains_denied(out, TERMS)


# --- the gate: every string and key of a record -------------------------------------------------------


def _gate(record, terms=TERMS):
    return anonymization.check(RecordView(record, "r.json"), GateContext(denylist=denylist_pattern(terms)))


def _planted(edit):
    record = specimens.strategy()
    edit(record)
    return _gate(record)


INJECTIONS = [
    ("path in evidence.raw", lambda r: r["evidence"]["raw"].update(note="copied from /home/bob/x"), "local path"),
    ("e-mail in evidence.raw.effect", lambda r: r["evidence"]["raw"]["effect"].update(by="j@corp.io"), "e-mail"),
    ("path in payload.config", lambda r: r["payload"].update(config={"cache": "/scratch/bob/c"}), "local path"),
    ("path in a key", lambda r: r["payload"].update(config={"/home/bob/x": 1}), "local path"),
    (
        "path in a config snippet's comment",
        lambda r: r["payload"].update(config={"snippet": "x = 1  # /home/bob"}),
        "local path",
    ),
    (
        "term as a code identifier",
        lambda r: r["payload"]["implementation"].update(snippet="-def alice_reduce(x):\n+def alice_reduce(x, y):"),
        "denylisted",
    ),
    ("term as a substring of a word", lambda r: r["payload"].update(goal="Use aliceics tiling."), "denylisted"),
    ("term in a key", lambda r: r["payload"].update(config={"getAliceGrid": 1}), "denylisted"),
    ("upper-case hash in served text", lambda r: r["payload"].update(goal="As in ABC1234DEF."), "hash"),
    ("glued hash", lambda r: r["payload"].update(goal="As in commit_abc1234."), "hash"),
    ("spelled-out version", lambda r: r["payload"].update(goal="As version 7 showed."), "version id"),
    ("glued version", lambda r: r["payload"].update(goal="As kernel_v7 showed."), "version id"),
    ("Windows path in served text", lambda r: r["payload"].update(goal=r"See C:\Users\bob\x."), "local path"),
]


@pytest.mark.parametrize("edit, kind", [c[1:] for c in INJECTIONS], ids=[c[0] for c in INJECTIONS])
def test_gate_fires_on_each_planted_leak(edit, kind):
    assert _gate(specimens.strategy()) == [], "the specimen must pass before planting"
    messages = _planted(edit)
    assert any(kind in m for m in messages), messages


def test_raw_provenance_still_names_its_version_and_commit():
    record = specimens.strategy()
    assert record["evidence"]["raw"]["version"] and _gate(record) == []


def test_the_real_store_passes(shared_data):
    from optrace.gates.store.runner import run_store_gates

    results = {r.gate: r for r in run_store_gates(shared_data / "upstream-store", ())}
    assert results["anonymization"].status == "PASS", results["anonymization"].messages[:3]


# --- linear scans: inputs a quadratic scan would take minutes on -------------------------------------

MB = 1 << 18  # 256 KB: the old home-path scan took ~1 s at 16 KB and grew with the square
HUGE = [
    ("home paths", "/home/u" * (MB // 7), "a local path"),
    ("list gap", "v1" + " " * MB + "x v2", "a step x a step"),
    ("markdown stems", ("a/" * 120 + " .md ") * (MB // 245), None),
    ("denied run", "alice" * (MB // 5), "a private identifier"),
    ("e-mail local parts", ("a" * 300 + "@b.cc ") * (MB // 306), None),
    ("spelled e-mail gaps", " at " * (MB // 4) + "x dot com", None),
    ("glued hashes", "abc1234_" * (MB // 8), None),
    ("trailing spaces", "x" + " " * MB + "y\n", "x y"),
    ("versions joined by commas alone", "v1, " * (MB // 4), ", ".join(["a step"] * (MB // 4)) + ","),
    ("quote runs between a term's letters", ("al" + '"' * 41) * (MB // 43) + "ice", None),
    ("hyphen-newline runs", "a" + "-\n" * (MB // 2) + "lice", "a private identifier"),
    ("entities and markup", ("&#47;<b>YWxpY2U." * (MB // 16)), None),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in HUGE], ids=[c[0] for c in HUGE])
def test_large_adversarial_inputs_scrub_in_one_pass(scrubber, text, expected):
    out = scrubber.text(text)
    if expected is not None:
        assert out == expected
    assert not contains_denied(out, TERMS)
    find_leaks(text)  # the gate's scan over the same input


def test_large_code_with_a_denied_identifier(scrubber):
    code = "def alice_f(x):\n    return x // 2  # /home/u\n" * (MB // 44)
    out = scrubber.code(code, "triton")
    assert out.startswith("def redacted_f(x):\n    return x // 2  # a local path\n")
    assert not contains_denied(out, TERMS)


# --- reports ------------------------------------------------------------------------------------------


def test_recon_reports_carry_no_denylisted_term(tmp_path, monkeypatch):
    from optrace.ingest import ingest
    from tests.support import tracekit

    trace = tmp_path / "kernel_opt_030_alicecorp"
    tracekit.iteration_era(trace)
    work = tmp_path / "work"
    assert ingest.main([str(trace), "--out-dir", str(work), "--label", "alice-traces", "--hardware", "H100"]) == 0
    deny = tmp_path / "deny.txt"
    deny.write_text("alice\n")
    monkeypatch.setenv("ATREX_WIKI_DENYLIST", str(deny))
    out = tmp_path / "reports"
    assert recon.main(["--work-dir", str(work), "--out-dir", str(out)]) == 0
    for name in ("recon.md", "recon.json", "ladder.svg"):
        text = (out / name).read_text()
        assert not contains_denied(text, ("alice",)), name
    assert json.loads((out / "recon.json").read_text())["identity"]["source_label"] == "a private identifier"


# --- workflow: a term planted everywhere reaches no output ---------------------------------------------

TERM = "Zorblax"


def _planted_trace(dest):
    from optrace.example.repo_builder import CommitSpec, build_trace
    from tests.support import tracekit

    def kernel(step):
        return (
            f"import triton\nimport triton.language as tl\n\n# step {step}, tuned on zorblax-box\n"
            f"BLOCK = {128 * (step + 1)}\n\ndef zorblax_reduce(x):\n    return getZorblaxGrid(x) // 2\n\n"
            f"def getZorblaxGrid(x):\n    return x  # variant {step}\n"
        )

    def memory(n, geomean, what):
        rec = json.loads(tracekit.memory(n, geomean))
        rec["optimization"]["action_description"] = what
        rec["pitfalls_and_fixes"] = [
            {"pitfall": f"the ZorBlax cache spilled at step {n} on zorblax-box", "fix": "call getZorblaxGrid once"}
        ]
        return json.dumps(rec)

    files = tracekit.meta_files()
    files["definition.json"] = files["definition.json"].replace("Row softmax", "Row softmax for the zorblaxics team")
    commits = [
        CommitSpec("V0: baseline", {"kernel.py": kernel(0), "memory/v0.json": memory(0, 50.0, "baseline"), **files}),
        CommitSpec(
            "v1: committed (+20.0%) zorblaxics tiling",
            {"kernel.py": kernel(1), "memory/v1.json": memory(1, 40.0, "getZorblaxGrid tiling from ZORBLAX notes")},
            body="measured on zorblax-box by the Zorblax team",
        ),
        CommitSpec(
            "v2: reverted (register spills at BLOCK=8192) - dead-end recorded",
            {"memory/v2.json": memory(2, 44.0, "zor-blax split-K")},
        ),
        CommitSpec(
            "dead-end recorded: zorblax split-K reduction, fp32 smem accumulate",
            {"memory/v3.json": memory(3, 45.0, "zorblaxics split")},
        ),
        CommitSpec(
            "v4: committed (+5.0%) wider rows",
            {"kernel.py": kernel(4), "memory/v4.json": memory(4, 38.0, "wider rows")},
        ),
    ]
    return build_trace(dest, commits)


def _readable(path) -> str:
    """A file's text; a parquet table's cells and column names (its pages may be compressed)."""
    if path.suffix == ".parquet":
        import pandas as pd

        table = pd.read_parquet(path)
        return "\n".join([*map(str, table.columns), *(str(v) for col in table.columns for v in table[col])])
    return path.read_bytes().decode("utf-8", "replace")


@pytest.mark.workflow
def test_a_denylisted_term_reaches_no_output_file(workdir, tmp_path):
    import os

    from tests.support.workflow import run_snakemake

    trace = tmp_path / "kernel_opt_040_softmax"
    _planted_trace(trace)
    deny = tmp_path / "deny.txt"
    deny.write_text(f"{TERM}\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(deny)}
    run_snakemake(workdir, "--config", f"trace={trace}", "hardware=H100", env=env)
    results = workdir / "results"
    # work/ is ingest's cache of the trace's own text, which later stages read back by path (a profile
    # directory named with a term must still be found); every output built from it is checked.
    checked, leaking = 0, []
    for path in sorted(results.rglob("*")):
        if path.is_file() and "work" not in path.relative_to(results).parts[:1]:
            checked += 1
            if contains_denied(_readable(path), (TERM,)):
                leaking.append(str(path.relative_to(results)))
    assert checked > 20 and leaking == []
    assert contains_denied((results / "work" / "040-softmax" / "versions.jsonl").read_text(), (TERM,)), (
        "the term was planted"
    )
    reports = results / "staging" / "reports" / "040-softmax"
    assert "a private identifier" in (reports / "recon.json").read_text(), "the term reached a report, scrubbed"
    code = [text for name, text in packet_file(results, "040-softmax").files.items() if name.endswith((".diff", ".py"))]
    assert any("redacted_reduce" in text for text in code), "the identifier was renamed, not dropped"
    staged = json.loads((results / "staging" / "staged.json").read_text())
    drafted = list((results / "distilled").rglob("*.json"))
    assert drafted and staged["failed"] == [] and len(staged["staged"]) == len(drafted)


def test_packet_leak_check_reads_keys_and_identifiers(scrubber):
    from optrace.mine.packets import packet_leaks

    packet = {"agent_facing": {"measurements": {"/home/bob/x": 1.0}}, "target": {"id": "x", "scope": {"dsl": "triton"}}}
    assert packet_leaks(packet, None, scrubber) == ["local path '/home/bob'"]
    clean = {"agent_facing": {"measurements": {"geomean_us": 1.0}}, "target": {"id": "x", "scope": {"dsl": "triton"}}}
    assert packet_leaks(clean, "def alice_f(x):\n    return x\n", scrubber) == ["denylisted term #1"]
    assert packet_leaks(clean, scrubber.code("def alice_f(x):\n    return x\n", "triton"), scrubber) == []
