"""The denylist's look-alike folding, pinned pair by pair: each test is named after the rule it keeps
(`cyrillic small letter o reads as o`), so dropping any pair from the folding table fails its own test
(issue #27: dropping the Cyrillic `о` survived every test)."""

import unicodedata

import pytest

from optrace.scrub.denylist import compile_denylist
from optrace.scrub.folding import CONFUSABLES, compat, fold

# Written out here, not read from the module: the look-alike letters the folding must read as Latin.
LOOKALIKES = {
    "cyrillic": "аa вb еe ёe кk мm нh оo рp сc тt уy хx ѕs іi їi јj ԁd һh ԛq ԝw ӏl ьb",
    "latin extensions": "ɡg ıi ȷj ɑa ɩi ɪi ʟl ʙb ɢg ʜh ɴn ʀr ʏy",
    "greek": "αa βb εe ηn ιi κk μu νv οo ρp τt υu χx γy ωw ϲc ϳj",
    "armenian": "օo սu հh ոn",
    "small capitals": "ᴀa ᴄc ᴅd ᴇe ᴊj ᴋk ᴍm ᴏo ᴘp ᴛt ᴜu ᴠv ᴡw ᴢz",
}
PAIRS = [(pair[0], pair[1]) for group in LOOKALIKES.values() for pair in group.split()]


def rule(pair) -> str:
    return f"{unicodedata.name(pair[0]).lower()} reads as {pair[1]}"


@pytest.mark.parametrize("lookalike, latin", PAIRS, ids=[rule(p) for p in PAIRS])
def test_a_lookalike_letter_reads_as_its_latin_letter(lookalike, latin):
    assert fold(lookalike)[0] == latin
    term = f"pri{latin}vate"  # a term holding the letter, spelled with its look-alike
    assert compile_denylist((term,)).contains(f"the {term.replace(latin, lookalike, 1)} kernel")
    assert compat(f"x{lookalike}")[0] == f"x{latin}"  # the shape rules read it the same way


def test_every_pair_of_the_folding_table_has_its_test():
    table = {chr(k): v for k, v in CONFUSABLES.items()}
    assert table == dict(PAIRS)


@pytest.mark.parametrize(
    "spelling, folded",
    [
        ("ＡＬＩＣＥ", "alice"),  # full-width letters: NFKD
        ("straße", "strasse"),  # casefolding: ß -> ss
        ("İo", "io"),  # a dotted capital I: NFKD then casefold, the dot is a combining mark
        ("a\u0301lice", "alice"),  # a combining accent is dropped
        ("al\u200bice", "alice"),  # a zero-width space is dropped
        ("al\u00adice", "alice"),  # a soft hyphen is dropped
        ("al\u3164ice", "alice"),  # a Hangul filler renders as nothing
        ("\U0001f1e6\U0001f1f1", "al"),  # regional indicators render as capital letters
        ("&#97;lice", "alice"),  # an HTML entity
        ("%61lice", "alice"),  # URL-encoding
        ("\\x61lice", "alice"),  # a backslash escape
        ("ali<b></b>ce", "alice"),  # markup renders as nothing
    ],
    ids=lambda v: v if v.isascii() else repr(v),
)
def test_unicode_rules_before_the_lookalike_table(spelling, folded):
    assert fold(spelling)[0] == folded
