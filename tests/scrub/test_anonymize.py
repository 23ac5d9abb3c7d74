"""optrace.scrub.anonymize: every rewrite rule, the reference's scrubber bugs fixed, and `optrace scrub-check`.

Every prose case is also checked to be idempotent, to leave nothing `leaks()` or the store's
anonymization gate would report, and to carry no denylisted term in any case.
"""

import json
import os

import pytest

from optrace import cli
from optrace.errors import InputError
from optrace.scrub.anonymize import Scrubber, ShapeLabels
from optrace.scrub.leak_patterns import find_leaks

HOST = "gpu-node7"
DENYLIST = f"# private names, one a line\n{HOST}\n\nAlice\n{HOST}.corp.example\n"
UUID_A = "e4f80b39-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
UUID_B = "9b2c0e1a-1111-2222-3333-444455556666"
UNDASHED = "c0ffee00aa11bb22cc33dd44ee55ff66"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def scrubber(tmp_path, monkeypatch):
    """The denylist comes from a file named by the environment, as in a real run."""
    path = tmp_path / "denylist.txt"
    path.write_text(DENYLIST)
    monkeypatch.setenv("ATREX_WIKI_DENYLIST", str(path))
    return Scrubber.from_env()


def assert_clean(scrubber, out, shapes=None):
    assert scrubber.text(out, shapes) == out, "scrubbing scrubbed text changed it"
    assert scrubber.leaks(out) == []
    assert find_leaks(out) == [], "the store's anonymization gate would still fire"
    assert HOST not in out.lower() and "alice" not in out.lower()


PROSE = [
    # denylist: whole terms, any case, longest first
    ("denylisted host", f"Measured on {HOST} overnight.", "Measured on a private identifier overnight."),
    ("denylisted host, mixed case", "GPU-Node7 was busy", "a private identifier was busy"),
    ("longest term first", f"ssh {HOST}.corp.example", "ssh a private identifier"),
    (
        "denylisted name inside an identifier: the whole token goes",
        "alice_runs and ALICE",
        "a private identifier and a private identifier",
    ),
    # leak shapes
    ("home path holding a denylisted user", "see /home/alice/runs/x.py.", "see a local path."),
    ("file:// path", "open file:///Users/bob/trace/REPORT.md now", "open a local path now"),
    ("/root path", "cd /root/work && make", "cd a local path && make"),
    ("e-mail", "Signed-off-by: Bob <bob.smith@mail.example.com>", "Signed-off-by: Bob <an address>"),
    (".md paths", "details in notes/REPORT.md and ../docs/plan.md", "details in a document and a document"),
    # uuids and hashes: the reference matched neither a 32-hex uuid nor a sha in prose
    ("dashed uuid", f"workload {UUID_B} regressed", "a shape regressed"),
    ("undashed uuid", f"key {UNDASHED} regressed", "key a shape regressed"),
    ("40-hex sha", f"fixed in {SHA}", "fixed in a commit"),
    ("7-hex commit", "reverted by commit abc1234.", "reverted by a commit."),
    ("10-hex commit", "cherry-picked 1a2b3c4d5e", "cherry-picked a commit"),
    ("8-hex id", "run deadbeef crashed", "run an identifier crashed"),
    # trace paths
    ("git command", "git log -p kernel.py showed the regression", "the history showed the regression"),
    ("git command without arguments", "git log showed it.", "the history showed it."),
    ("step record", "see memory/v3.json for the pitfall", "see the step record for the pitfall"),
    ("profile", "the profiles/v3/ncu.csv capture", "the profile capture"),
    ("snapshot", "diffed versions/kernel_v4.py against kernel_v2.py", "diffed that snapshot against that snapshot"),
    (
        "kernel sources",
        "kernel.py, reference.py, test_kernel.py and bench.py",
        "the kernel source, the kernel source, the kernel source and the kernel source",
    ),
    (
        "trace metadata",
        "read definition.json, solution.json and workload.jsonl",
        "read the trace metadata, the trace metadata and the trace metadata",
    ),
    ("workspace name", "tuned in kernel_opt_3_rmsnorm_fp8 first", "tuned in this operator first"),
    # version ids
    ("commit-subject prefix", "v12: committed (+18.6%)", "committed (+18.6%)"),
    ("uppercase prefix", "V7: 17.9 us | fused epilogue", "17.9 us | fused epilogue"),
    (
        "re-measurement",
        "v3_rerun confirmed it, as did v0_baseline",
        "a re-measurement confirmed it, as did a re-measurement",
    ),
    ("list of versions", "as in v3, v5 and v7", "as in several steps"),
    ("range of versions", "from v3 to v5 the time fell", "from a step to a later one the time fell"),
    (
        "single version, article repaired",
        "The v12 kernel spilled; a v9 idea",
        "A step's kernel spilled; a step's idea",
    ),
    (
        "vector widths stay",
        "vectorized v4 loads, ld.global.v4.f32, float4 v2",
        "vectorized v4 loads, ld.global.v4.f32, float4 v2",
    ),
    ("GPU names stay", "V100 vs H100 vs MI300X on sm_90", "V100 vs H100 vs MI300X on sm_90"),
    (
        "measurements stay",
        "17.9 us -> 14.6 us (+18.6%) with BLOCK=8192, 1.662843e-02 error, 4096x4096, 12345678",
        "17.9 us -> 14.6 us (+18.6%) with BLOCK=8192, 1.662843e-02 error, 4096x4096, 12345678",
    ),
    ("software versions stay", "Triton v3.1 and CUDA 12.4", "Triton v3.1 and CUDA 12.4"),
    ("abbreviated version", "as ver. 7 showed", "as a step showed"),
    ("abbreviated version in capitals", "as VER. 7 showed", "as a step showed"),
    ("a version after V100", "V100 beat v7 there", "V100 beat a step there"),
    ("an id and a spelled-out version", "v3, then version 5", "a step, then a step"),
    ("versions in capitals", "VERSIONS 3 AND 5 regressed", "several steps regressed"),
    ("a list drops its `the` where it would not read", "the v3 and v5 kernels", "several steps' kernels"),
    ("a list drops its `a`", "a v3 and v5 kernel", "several steps' kernel"),
    ("12 hex digits are a commit, 13 an identifier", "abcdef123456 and abcdef1234567", "a commit and an identifier"),
    ("file URL", "see file:///home/bob/x now", "see a local path now"),
    ("a path glued to a non-ASCII word", "in caf\u00e9/home/bob/x", "in a local path"),
    ("a path after a dash", "sent\u2014/home/bob/x", "sent\u2014a local path"),
    ("a page with its relative directories", "see ../../docs/x.md now", "see a document now"),
    ("a rooted page ending a sentence", "see /notes.md.", "see a document."),
    ("paths after a path that repeats", "at /home/u/home/v and /home/bob", "at a local path and a local path"),
    # tidy
    ("whitespace", "  two  spaces\tand   more  \n  indented line  ", "two spaces\tand more\n  indented line"),
    (
        "everything at once",
        f"v5: on {HOST}, /home/alice/x and abc1234 beat v3",
        "on a private identifier, a local path and a commit beat a step",
    ),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in PROSE], ids=[c[0] for c in PROSE])
def test_prose(scrubber, text, expected):
    out = scrubber.text(text)
    assert out == expected
    assert_clean(scrubber, out)


def test_denylist_matches_any_substring(scrubber):
    """Issue #13: a term inside a longer word leaks as much as the word alone."""
    assert scrubber.text("gpu-node70 ran Alicevision.") == "a private identifier ran a private identifier."
    assert scrubber.leaks("gpu-node70 ran Alicevision") == ["denylisted term #1", "denylisted term #2"]


def test_none_stays_none(scrubber):
    assert scrubber.text(None) is None
    assert scrubber.private(None) is None


def test_private_json_scrubs_keys_and_values_and_keeps_the_rest(scrubber):
    value = {"alice-run": ["on Alice", 3, None], "n": 3, "v3": "v3"}
    assert scrubber.private_json(value) == {
        "a private identifier": ["on a private identifier", 3, None],
        "n": 3,
        "v3": "v3",
    }


def test_when_every_replacement_holds_a_term_the_term_still_goes():
    assert Scrubber(("private", "name")).text("ask private now") == "ask now"
    code = Scrubber(("act", "anon", "priv", "xx", "q")).code("def act_fn(x):\n    return x\n", "triton")
    assert code == "def __fn(x):\n    return x\n"


def test_a_replacement_that_forms_a_term_with_its_neighbours_is_cleared():
    scrubber = Scrubber(("ean",))
    out = scrubber.text("see e(bob@corp.io)")  # "e(" + "an address" spells the term
    assert out and not scrubber.leaks(out) and "bob" not in out


# --- shape labels ---------------------------------------------------------------------------------


def test_shape_labels_follow_sorted_keys():
    shapes = ShapeLabels.from_keys([UUID_A, UUID_B, "n4096"])
    assert [shapes.label(k) for k in (UUID_B, UUID_A, "n4096")] == ["shape-1", "shape-2", "shape-3"]


def test_shape_label_agrees_between_uuid_and_prefix(scrubber):
    shapes = ShapeLabels.from_keys([UUID_A, UUID_B])
    table = {shapes.label(k): k for k in (UUID_A, UUID_B)}
    out = scrubber.text(f"shape {UUID_A[:8]} was slowest; {UUID_A} too", shapes)
    assert out == "shape-2 was slowest; shape-2 too"
    assert table["shape-2"] == UUID_A and shapes.label(UUID_A[:8]) == "shape-2"
    assert_clean(scrubber, out, shapes)


def test_shape_label_agrees_for_undashed_key(scrubber):
    shapes = ShapeLabels.from_keys([UNDASHED])
    out = scrubber.text(f"{UNDASHED[:8]} and {UNDASHED} are one shape", shapes)
    assert out == "shape-1 and shape-1 are one shape"
    assert shapes.label(UNDASHED[:8]) == shapes.label(UNDASHED) == "shape-1"
    assert_clean(scrubber, out, shapes)


def test_dashed_and_undashed_spellings_share_a_label():
    shapes = ShapeLabels.from_keys([UUID_A, UUID_A.replace("-", "")])
    assert shapes.label(UUID_A) == shapes.label(UUID_A.replace("-", "").upper()) == "shape-1"
    assert shapes.by_key == {UUID_A.replace("-", ""): "shape-1"}


def test_unknown_uuid_and_shared_prefix_stay_anonymous(scrubber):
    twin = UUID_A[:8] + "-0000-4000-8000-000000000000"
    shapes = ShapeLabels.from_keys([UUID_A, twin])
    out = scrubber.text(f"{UUID_A[:8]} vs {UUID_B}", shapes)
    assert out == "an identifier vs a shape"
    assert_clean(scrubber, out, shapes)
    with pytest.raises(KeyError):
        shapes.label(UUID_A[:8])


# --- code: only comments and strings ------------------------------------------------------------

CODE = [
    (
        "python // is floor division",
        "triton",
        "x = b // deadbeef  # see deadbeef\n",
        "x = b // deadbeef  # see an identifier\n",
    ),
    ("C // comment", "cuda", "int q = a; // from /home/alice/x\n", "int q = a; // from a local path\n"),
    (
        "C block comment and string",
        "cuda",
        '/* v3 */ printf("v3 done\\n");',
        '/* a step */ printf("a step done\\n");',
    ),
    (
        "denylisted host in a comment",
        "gluon",
        f"n = 4  # tuned on {HOST}\n",
        "n = 4  # tuned on redacted\n",
    ),
    ("denylisted host in a string, mixed case", "any", 'HOST = "GPU-NODE7"\n', 'HOST = "REDACTED"\n'),
    ("layout of comments kept", "cutedsl", "x = 1  #  aligned   v3\n", "x = 1  #  aligned   a step\n"),
    ("identifiers are code", "triton", "v3 = kernel_opt_3_x // 2\n", "v3 = kernel_opt_3_x // 2\n"),
    (
        "load_inline: CUDA in strings is prose, Python // is code",
        "cuda",
        'from torch.utils.cpp_extension import load_inline\nsrc = """// v3 from /home/alice\n"""\nn = a // b  # v3\n',
        'from torch.utils.cpp_extension import load_inline\nsrc = """// a step from a local path\n"""\nn = a // b  # a step\n',
    ),
    (
        "CUDA diff hunk showing no Python: # lines read too",
        "cuda",
        "@@ -7,2 +7,2 @@\n-    # tried v3 tile\n+    n = a // b\n",
        "@@ -7,2 +7,2 @@\n-    # tried a step's tile\n+    n = a // b\n",
    ),
]


@pytest.mark.parametrize("dsl, code, expected", [c[1:] for c in CODE], ids=[c[0] for c in CODE])
def test_code(scrubber, dsl, code, expected):
    out = scrubber.code(code, dsl)
    assert out == expected
    assert scrubber.code(out, dsl) == out
    assert scrubber.code_leaks(out, dsl) == []


def test_code_leaks_read_only_comments_and_strings(scrubber):
    code = 'v3 = a // deadbeef  # from /home/bob/x\nname = "v4"\n'
    assert scrubber.code_leaks(code, "triton") == ["local path '/home/bob'", "version id 'v4'"]


def test_code_rejects_unknown_dsl(scrubber):
    with pytest.raises(ValueError, match="tilelang"):
        scrubber.code("x = 1", "tilelang")


# --- leaks ---------------------------------------------------------------------------------------


def test_leaks_name_each_match_left_to_right(scrubber):
    raw = f"v3 on {HOST} at /home/alice/x, mail bob@corp.io, see REPORT.md; deadbeef {UUID_B} {SHA} 17.9 us on H100"
    assert scrubber.leaks(raw) == [
        "version id 'v3'",
        "denylisted term #1",
        "local path '/home/alice'",
        "e-mail address 'bob@corp.io'",
        "markdown page 'REPORT.md'",
        "hex id 'deadbeef'",
        f"uuid '{UUID_B}'",
        f"hex id '{SHA}'",
    ]


def test_leaks_in_a_full_width_spelling_quote_the_text_as_written(scrubber):
    assert scrubber.leaks("mail bob\uff20corp\uff0ecom now") == ["e-mail address 'bob\uff20corp\uff0ecom'"]


def test_code_leaks_name_a_denied_term_in_a_comment_once(scrubber):
    assert scrubber.code_leaks("x = 1  # alice at /home/bob\n", "triton") == [
        "local path '/home/bob'",
        "denylisted term #2",
    ]


def test_from_env_without_the_variable_has_no_denylist():
    assert Scrubber.from_env(environ={}).denylist == ()


def test_from_env_reads_a_named_variable(tmp_path):
    path = tmp_path / "names"
    path.write_text("lab-host\n")
    scrubber = Scrubber.from_env("MY_DENYLIST", environ={"MY_DENYLIST": str(path)})
    assert scrubber.text("on LAB-HOST") == "on a private identifier"


def test_from_env_unreadable_file_names_it(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(InputError) as exc:
        Scrubber.from_env(environ={"ATREX_WIKI_DENYLIST": str(missing)})
    assert exc.value.where == str(missing)


# --- optrace scrub-check -------------------------------------------------------------------------


def test_scrub_check_clean_file(scrubber, tmp_path, capsys):
    path = tmp_path / "packet.json"
    path.write_text(json.dumps({"agent_facing": {"what": scrubber.text(f"v3 on {HOST}: 17.9 us")}}))
    assert cli.main(["scrub-check", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_scrub_check_leaking_files(scrubber, tmp_path, capsys):
    packet = tmp_path / "packet.json"
    packet.write_text(json.dumps({"agent_facing": {"what": f"v3 on {HOST}", "table": {UUID_B: 17.9}}}))
    code = tmp_path / "seg.py"
    code.write_text("v3 = a // deadbeef  # from /home/bob/x\n")
    diff = tmp_path / "seg.diff"
    diff.write_text("@@ -1,2 +1,2 @@\n def f(a, b):\n-    return a // b1c2d3e4  # v7 tile\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("see REPORT.md\n")
    assert cli.main(["scrub-check", str(packet), str(code), str(diff), str(notes)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{packet}: version id 'v3'",
        f"{packet}: denylisted term #1",
        f"{packet}: uuid '{UUID_B}'",
        f"{code}: local path '/home/bob'",
        f"{diff}: version id 'v7'",
        f"{notes}: markdown page 'REPORT.md'",
    ]


def test_scrub_check_reads_json_lines_in_document_order(scrubber, tmp_path, capsys):
    path = tmp_path / "rows.JSONL"
    path.write_text(json.dumps({"a": ["v3", "/home/bob/x"]}) + "\n" + json.dumps({UUID_B: 1}) + "\n")
    assert cli.main(["scrub-check", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: version id 'v3'",
        f"{path}: local path '/home/bob'",
        f"{path}: uuid '{UUID_B}'",
    ]


def test_scrub_check_missing_file(scrubber, tmp_path, capsys):
    missing = tmp_path / "gone.json"
    assert cli.main(["scrub-check", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {missing}: file not found\n"


def test_scrub_check_without_paths(capsys):
    assert cli.main(["scrub-check"]) == 2
    assert capsys.readouterr().err == "error: usage: optrace scrub-check PATH...\n"


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("gone.txt", None, "file not found"),
        ("latin1.txt", b"caf\xe9\n", "not UTF-8 text"),
        ("adir.txt", "dir", "not a regular file; not read"),
        ("fifo.txt", "fifo", "not a regular file; not read"),  # refused, never waited on
    ],
)
def test_scrub_check_unreadable_text_file(tmp_path, capsys, name, content, problem):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif content == "fifo":
        os.mkfifo(path)
    elif content is not None:
        path.write_bytes(content)
    assert cli.main(["scrub-check", str(path)]) == 2
    assert capsys.readouterr().err == f"error: {path}: {problem}\n"


def test_scrub_check_reads_utf8_text(tmp_path, capsys):
    path = tmp_path / "notes.md"
    path.write_text("caf\u00e9 at /home/b\u00f6b\n", encoding="utf-8")
    assert cli.main(["scrub-check", str(path)]) == 1
    assert capsys.readouterr().out == f"{path}: local path '/home/b\u00f6b'\n"


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_scrub_check_help(flag, capsys):
    assert cli.main(["scrub-check", flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: optrace scrub-check PATH...\n\n")
    assert "exit 0 clean, 1 leaks, 2 usage or an unreadable file" in out
