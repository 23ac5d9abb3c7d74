"""A trace's version references in prose and code, as neutral words (they mean nothing outside the trace)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from optrace.scrub.finders import HARDWARE_NAMES, version_ids

# Versions: "v12: " opening a line is a commit-subject prefix and goes; runs of ids joined by
# list words become one phrase. version_ids already spares vector widths and V100. An id glued into
# an identifier (kernel_v7, v7_fast, pack_v4) loses only its number: `kernel_vN` still reads as the
# identifier it was, where a phrase inside it would not.
_LINE_PREFIX = re.compile(r"^[ \t]*([vV]\d+(?:_(?:rerun|baseline|base)\d*)?):[ \t]*", re.M)
_LIST_GAP = re.compile(
    r"[ \t]*(?:,|/|&|\+|->|-|–|—|\.\.|to\b|and\b|or\b|vs\.?|through\b)?"
    r"[ \t]*(?:(?:and|or)\b[ \t]*)?"
)
_LIST_GAP_MAX = 24  # longer gaps are prose, and a fullmatch over a huge gap would backtrack
GLUED_VERSION = "vN"


def version_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _LINE_PREFIX.finditer(text):
        if m.group(1) not in HARDWARE_NAMES:
            yield m.start(1), m.end(), ""
    found = []
    for start, token in version_ids(text):
        end = start + len(token)
        if text[start - 1 : start] == "_" or text[end : end + 1] == "_":
            yield start, end, GLUED_VERSION
        else:
            found.append((start, end, token))
    i = 0
    while i < len(found):
        j = i
        while (
            j + 1 < len(found)
            and found[j + 1][0] - found[j][1] <= _LIST_GAP_MAX
            and _LIST_GAP.fullmatch(text, found[j][1], found[j + 1][0])
        ):
            j += 1
        token = found[i][2]
        several = j > i or token.lower().startswith("versions")
        phrase = (
            "earlier steps"
            if several
            else "a re-measurement"
            if "_re" in token or "_base" in token
            else "an earlier step"
        )
        yield found[i][0], found[j][1], phrase
        i = j + 1
