"""Version references become words true relative to the step the text belongs to, in prose and code alike;
verbatim code stays the trace's code outside what the scrubber must replace."""

import pytest

from optrace.scrub.anonymize import Scrubber, Step
from optrace.scrub.versions import kind
from tests.support import trace_swiglu_h20

FINAL = Step(11, builds_on=9)  # a claim at v11 that builds on v9


@pytest.mark.parametrize(
    "text, expected",
    [
        ("as v11 shows", "as this step shows"),
        ("on top of v9", "on top of the version it builds on"),
        ("unlike v3", "unlike an earlier step"),
        ("retried in v12", "retried in a later step"),
        ("V0 was slower", "the baseline was slower"),
        ("see version 3", "see an earlier step"),
        ("as v3 and v5 did", "as earlier steps did"),
        ("v9 and v11 agree", "the version it builds on and this step agree"),
        ("v3, v9 and v14 differ", "several steps differ"),  # three kinds: what is true of all of them
        ("the v3 kernel spilled", "an earlier step's kernel spilled"),
        ("the v3 and v5 kernels", "the earlier steps' kernels"),
        ("from the v11 profile", "from this step's profile"),
        ("v11: committed (+2.3%)", "committed (+2.3%)"),  # the step's own subject prefix goes
        # another version's prefix is named: a history line never reads as this step's own
        ("v9: tried split-K, slower\nv11: committed", "the version it builds on: tried split-K, slower\ncommitted"),
        ("its v3 kernel spilled", "an earlier step's kernel spilled"),  # one determiner, never "its an"
        ("this v12 tile", "a later step's tile"),
        ("replacing V0 PyTorch wrapper", "replacing the baseline's PyTorch wrapper"),  # a name follows
        ("the v3 regressed", "an earlier step regressed"),  # a verb follows: no possessive
        ("from v3 to v11 the time fell", "from an earlier step to this step the time fell"),  # a range's ends
        ("from v3 to v7 the time fell", "from an earlier step to a later one the time fell"),
        ("versions 9-12 spilled", "the version it builds on to a later step spilled"),
        ("upgraded to Triton v3 in v9", "upgraded to Triton v3 in the version it builds on"),  # a tool's version
        ("built with CUDA version 12 in v12", "built with CUDA version 12 in a later step"),
        # ids joined by commas alone are no list: a comma may end a clause, and joined they would be false
        ("compared with V0, v11 is 3x faster", "compared with the baseline, this step is 3x faster"),
        ("v3, v5, v7 regressed", "an earlier step, an earlier step, an earlier step regressed"),
        ("v9..v11", "the version it builds on to this step"),  # a dot before the id is a range, not a suffix
        ("ld.global.v4.f32 in v3", "ld.global.v4.f32 in an earlier step"),  # PTX's suffix is no version
        ("step v3 did it", "an earlier step did it"),  # never "step an earlier step"
    ],
)
def test_a_reference_is_named_by_its_relation_to_the_step(text, expected):
    assert Scrubber().text(text, step=FINAL) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # the garbled prose: "replacing an earlier step PyTorch wrapper"
        (
            "framework baseline (cuda) replacing the V0 PyTorch wrapper",
            "framework baseline (cuda) replacing the baseline's PyTorch wrapper",
        ),
        ("as v3 showed", "as a step showed"),  # no step given: only what holds anyway
        ("as in v3, v5 and v7", "as in several steps"),
        ("v12: committed (+2.3%)", "committed (+2.3%)"),  # a subject prefix, read as the text's own
        ("from v3 to v5 the time fell", "from a step to a later one the time fell"),  # true of any step
    ],
)
def test_without_a_step_only_what_is_true_of_any_step_is_said(text, expected):
    assert Scrubber().text(text) == expected


def test_no_relation_is_ever_false():
    for n in range(0, 25):
        for ref in range(0, 25):
            words = Scrubber().text(f"see v{ref} now", step=Step(n, builds_on=n - 2 if n > 2 else None))
            k = kind(ref, Step(n, builds_on=n - 2 if n > 2 else None))
            assert (
                words
                == {
                    "baseline": "see the baseline now",
                    "this": "see this step now",
                    "parent": "see the version it builds on now",
                    "earlier": "see an earlier step now",
                    "later": "see a later step now",
                }[k]
            )
            assert k == (
                "baseline"
                if ref == 0
                else "this"
                if ref == n
                else "parent"
                if ref == n - 2 and n > 2
                else "earlier"
                if ref < n
                else "later"
            )


def test_a_final_kernels_docstring_says_this_step_where_the_trace_says_its_own_version():
    # the final kernel: its docstring reads "v11: __launch_bounds__..." and v11 is the final step
    code = '"""Fused RMSNorm -- v11: __launch_bounds__(256, 2) keeps two blocks per SM.\n\nv11: 16-byte loads\n"""\nx = 1\n'
    assert Scrubber().code(code, "cuda", step=Step(11)) == (
        '"""Fused RMSNorm -- this step: __launch_bounds__(256, 2) keeps two blocks per SM.\n\n'
        'this step: 16-byte loads\n"""\nx = 1\n'
    )
    assert Scrubber().code(code, "cuda", step=Step(12)).count("an earlier step:") == 2


def test_a_realistic_final_kernel_is_byte_equal_outside_its_two_version_references():
    source = trace_swiglu_h20.fused_kernel(11)
    out = Scrubber().code(source, "triton", step=Step(11))
    changed = [(a, b) for a, b in zip(source.splitlines(), out.splitlines(), strict=True) if a != b]
    assert changed == [
        (
            "# v4: GROUP_M=8 program order, so programs that share W column tiles run back to back",
            "# an earlier step: GROUP_M=8 program order, so programs that share W column tiles run back to back",
        ),
        (
            "# v11: maxnreg=168 caps registers the way __launch_bounds__(256, 2) would: two CTAs per SM",
            "# this step: maxnreg=168 caps registers the way __launch_bounds__(256, 2) would: two CTAs per SM",
        ),
    ]


def test_a_denied_term_is_renamed_like_an_identifier_in_code_strings_and_comments_too():
    scrub = Scrubber(["alice"])
    code = 'def alice_reduce(x):  # alice wrote it\n    return x\n\nKERNEL = "alice_reduce"\n'
    assert scrub.code(code, "triton") == (
        'def redacted_reduce(x):  # redacted wrote it\n    return x\n\nKERNEL = "redacted_reduce"\n'
    )


@pytest.mark.parametrize(
    "code, expected",
    [
        # a name in a comment reads as the code's name, a dotted one too
        ("x = 1  # see alice_reduce and self.alice_grid\n", "x = 1  # see redacted_reduce and self.redacted_grid\n"),
        # what is not a name goes whole: renaming only the term would leave the rest of it standing
        ("x = 1  # mail bob@corp.example\n", "x = 1  # mail an address\n"),
        ("x = 1  # on node3.corp.example\n", "x = 1  # on redacted\n"),
        ('URL = "https://git.corp.example/team/repo"\n', 'URL = "redacted"\n'),
        ('P = "/home/alice/x"\n', 'P = "a local path"\n'),
    ],
)
def test_a_denied_term_in_a_comment_or_string_is_renamed_only_where_it_is_a_name(code, expected):
    scrub = Scrubber(["alice", "corp.example"])
    out = scrub.code(code, "triton")
    assert out == expected
    assert scrub.code_leaks(out, "triton") == [] and scrub.code(out, "triton") == out
