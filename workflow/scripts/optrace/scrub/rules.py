"""What each kind of leak becomes in scrubbed prose: local paths, addresses, documents, trace file paths and
hashes, as (start, end, phrase) spans of the original text."""

from __future__ import annotations

import re
from collections.abc import Container, Iterator

from optrace.scrub.finders import emails, hex_runs, local_paths, markdown_pages

# Local paths run on through later segments; a sentence's full stop is not part of a path.
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~+@%=/\\:-")
_PATH_RIGHT = re.compile(r"[\w.~+@%=/\\-]*")
_TRAILING_PUNCT = ".,;:!?"
_EMAIL_TAIL = re.compile(r"(?:\.[A-Za-z0-9-]+)*")  # alice@mail.corp.example.com: the whole domain


def trim(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _TRAILING_PUNCT:
        end -= 1
    return end


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where `pattern`, which matches the empty string, stops matching from `pos`."""
    m = pattern.match(text, pos)
    assert m is not None
    return m.end()


def _run_back(text: str, start: int, chars: Container[str], floor: int) -> int:
    """Start of the run of `chars` ending at `start`, never before `floor`."""
    i = start
    while i > floor and (text[i - 1] in chars or (not text[i - 1].isascii() and text[i - 1].isalnum())):
        i -= 1
    return i


def local_path_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Whole paths. A match inside the path just found is skipped, and the backwards scan stops where
    the previous path ended, so every character is scanned a bounded number of times (140 KB of
    `/home/u/home/u...` is one path, found in one pass)."""
    reach = 0
    for start, token in local_paths(text):
        if start < reach:
            continue
        end = _match_end(_PATH_RIGHT, text, start + len(token))
        lead = _run_back(text, start, _PATH_CHARS, reach)
        if text[max(reach, lead - 5) : lead] == "file:":
            lead -= 5
        reach = end
        yield lead, trim(text, start, end), "a local path"


def email_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for start, token in emails(text):
        yield start, _match_end(_EMAIL_TAIL, text, start + len(token)), "an address"


def markdown_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """The finder's stem starts at a word character: take the `../` or `/` in front of it too."""
    for start, token in markdown_pages(text):
        lead = start
        if text[start - 1 : start] == "/":
            while lead > 0 and start - lead < 64 and text[lead - 1] in "./~":
                lead -= 1
        yield lead, start + len(token), "a document"


# Trace file paths, with any relative (or non-home absolute) directories in front of them.
_DIRS = r"(?<![\w./-])/?(?:[\w.-]+/)*"
_TOKEN = r"[^\s`'\"]"
# git arguments: options, and words that look like revisions or paths (a digit, /, :, ~, ^, @, or an
# inner dot), so "git log showed ..." stops before "showed".
_GIT_ARG = rf"-{_TOKEN}*|(?={_TOKEN}*[\d/:~^@]){_TOKEN}+|{_TOKEN}+\.\w{_TOKEN}*"
_TRACE_PATHS = (  # (needle, pattern, phrase)
    ("git", re.compile(rf"\bgit[ \t]+(?:log|show|diff|blame)\b(?:[ \t]+(?:{_GIT_ARG}))*"), "the history"),
    ("memory/", re.compile(_DIRS + r"memory/v\d+[\w.-]*?\.json\b"), "the step record"),
    ("profiles/", re.compile(_DIRS + r"profiles/[\w./-]*"), "the profile"),
    ("kernel_v", re.compile(_DIRS + r"kernel_v\d+\.py\b"), "that snapshot"),
    (".py", re.compile(_DIRS + r"(?:test_kernel|kernel|reference|bench)\.py\b"), "the kernel source"),
    (".json", re.compile(_DIRS + r"(?:definition|solution|workload)\.jsonl?\b"), "the trace metadata"),
    ("kernel_opt_", re.compile(_DIRS + r"kernel_opt_\d+[\w.-]*(?:/[\w.-]+)*"), "this operator"),
)


def trace_path_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for needle, pattern, phrase in _TRACE_PATHS:
        if needle in text:
            for m in pattern.finditer(text):
                yield m.start(), trim(text, m.start(), m.end()), phrase


def _hex_phrase(token: str) -> str:
    n = len(token)
    if n == 32:
        return "a shape"  # an undashed uuid: a workload's shape key
    if n == 40 or (7 <= n <= 12 and n != 8):
        return "a commit"
    return "an identifier"  # 8 hex (a short hash), or a content hash of another length


def hex_spans(text: str) -> Iterator[tuple[int, int, str]]:
    # Prose has no all-letter hex words worth keeping, so "deadbeef" goes too (the gate needs a digit).
    for start, token in hex_runs(text, need_digit=False):
        yield start, start + len(token), _hex_phrase(token)
