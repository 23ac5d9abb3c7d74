"""Scrub agent-facing text of everything that identifies people, machines, pages or runs.

`optrace scrub-check PATH...` reports what would still leak in files already scrubbed: one
`PATH: <leak>` line per leak, exit 0 clean, 1 leaks, 2 usage or an unreadable file.

What counts as a leak lives in `anonymize_patterns` (shared with the store's anonymization gate);
this module decides what each leak becomes. Every rule finds spans in the *original* text and the
spans are replaced in one pass: where two overlap, the wider wins (ties go to the earlier rule). A
sequential rewrite would break a token in two — a denylisted user name inside `/home/alice/x`
would turn into `/home/a private identifier/x`, whose path no longer matches whole. The neutral
words never match a rule, so scrubbing scrubbed text changes nothing.

A denylisted term, in any spelling `anonymize_patterns.Denylist` folds, takes its whole token in
prose (`<term>ics` -> "a private identifier") and, in code outside comments and strings, becomes
`redacted` in the term's case (`get<Term>Grid` -> `getRedactedGrid`): a pure function of the
spelling, so both sides of a diff rename alike. Every scan is linear in the text.
"""

from __future__ import annotations

import os
import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from optrace.errors import InputError
from optrace.jsonio import read_json, read_jsonl
from optrace.scrub.leak_patterns import (
    DENYLIST_ENV,
    HARDWARE_NAMES,
    PYTHON_DSLS,
    Leak,
    compat,
    compile_denylist,
    emails,
    hex_runs,
    local_paths,
    markdown_pages,
    outermost,
    prose_spans,
    read_denylist,
    uuids,
    version_ids,
)

USAGE = "usage: optrace scrub-check PATH..."

# --- spans -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    phrase: str  # what replaces text[start:end]
    rank: int  # rule order: breaks ties between identical spans


Finder = Callable[[str], Iterator[tuple[int, int, str]]]


def _spans_of(matches: Callable[[str], Iterator[tuple[int, str]]], phrase: str) -> Finder:
    """A finder of (start, token) matches as (start, end, phrase) spans."""
    return lambda text: ((start, start + len(token), phrase) for start, token in matches(text))


# Local paths run on through later segments; a sentence's full stop is not part of a path.
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~+@%=/\\:-")
_PATH_RIGHT = re.compile(r"[\w.~+@%=/\\-]*")
_TRAILING_PUNCT = ".,;:!?"
_EMAIL_TAIL = re.compile(r"(?:\.[A-Za-z0-9-]+)*")  # alice@mail.corp.example.com: the whole domain


def _trim(text: str, start: int, end: int) -> int:
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


def _local_path_spans(text: str) -> Iterator[tuple[int, int, str]]:
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
        yield lead, _trim(text, start, end), "a local path"


def _email_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for start, token in emails(text):
        yield start, _match_end(_EMAIL_TAIL, text, start + len(token)), "an address"


def _markdown_spans(text: str) -> Iterator[tuple[int, int, str]]:
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


def _trace_path_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for needle, pattern, phrase in _TRACE_PATHS:
        if needle in text:
            for m in pattern.finditer(text):
                yield m.start(), _trim(text, m.start(), m.end()), phrase


def _hex_phrase(token: str) -> str:
    n = len(token)
    if n == 32:
        return "a shape"  # an undashed uuid: a workload's shape key
    if n == 40 or (7 <= n <= 12 and n != 8):
        return "a commit"
    return "an identifier"  # 8 hex (a short hash), or a content hash of another length


def _hex_spans(text: str) -> Iterator[tuple[int, int, str]]:
    # Prose has no all-letter hex words worth keeping, so "deadbeef" goes too (the gate needs a digit).
    for start, token in hex_runs(text, need_digit=False):
        yield start, start + len(token), _hex_phrase(token)


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


def _version_spans(text: str) -> Iterator[tuple[int, int, str]]:
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


def _resolve(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans, left to right: the wider span wins and absorbs any partial overlap."""
    chosen: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end, s.rank)):
        if chosen and s.start < chosen[-1].end:
            if s.end > chosen[-1].end:
                last = chosen[-1]
                chosen[-1] = Span(last.start, s.end, last.phrase, last.rank)
            continue
        chosen.append(s)
    return chosen


# --- joining a phrase to the words before it -----------------------------------------------------

_ARTICLE_TAIL = re.compile(r"\b(?:a|an|the)[ \t]+\Z", re.I)
# "commit abc1234" -> "a commit", not "commit a commit"; likewise for versions, shapes and hashes.
_NOUN_TAIL = re.compile(r"\b(?:commit|sha|hash|version|uuid|shape|workload)s?[ \t]+\Z", re.I)
_KIND_PHRASES = ("a commit", "an identifier", "a shape", "an earlier step", "earlier steps", "a re-measurement")
_DETERMINERS = ("a ", "an ", "the ", "this ", "that ")


def _drops_article(phrase: str, article: str) -> bool:
    if phrase.startswith(_DETERMINERS):
        return True  # "a v3 kernel" -> "an earlier step kernel", never "a an earlier step"
    return phrase == "earlier steps" and article.strip().lower() != "the"


def _join(before: str, phrase: str) -> tuple[str, str]:
    """`before` without the words `phrase` makes redundant, and the phrase capitalised if they were."""
    if not phrase:
        return before, phrase
    cut = len(before)
    if phrase in _KIND_PHRASES or phrase.startswith("shape-"):
        noun = _NOUN_TAIL.search(before, max(0, cut - 16))
        cut = noun.start() if noun else cut
    article = _ARTICLE_TAIL.search(before, max(0, cut - 8), cut)
    if article and _drops_article(phrase, article.group(0)):
        cut = article.start()
    if before[cut : cut + 1].isupper():
        phrase = phrase[0].upper() + phrase[1:]
    return before[:cut], phrase


def _apply(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for s in spans:
        before, phrase = _join(text[pos : s.start], s.phrase)
        out += [before, phrase]
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}")


def _tidy(text: str) -> str:
    # line ends by split, not by a `[ \t]+$` search, which backtracks over every long run of spaces
    return "\n".join(line.rstrip(" \t") for line in _INNER_SPACES.sub(" ", text).split("\n")).strip()


# --- shape labels --------------------------------------------------------------------------------

_UUID_KEY = re.compile(r"[0-9a-f]{8}(?:-?[0-9a-f]{4}){3}-?[0-9a-f]{12}", re.I)
# A uuid-shaped token in prose: dashed, undashed, or its 8-hex prefix.
_SHAPE_TOKEN = re.compile(r"\b[0-9a-f]{8}(?:(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{24})?\b", re.I)


def _canonical(key: str) -> str:
    """A uuid key in one spelling (lowercase, undashed), so tables and prose agree; others as given."""
    return key.lower().replace("-", "") if _UUID_KEY.fullmatch(key) else key


@dataclass(frozen=True)
class ShapeLabels:
    """Neutral labels (shape-1, shape-2, ...) for a trace's benchmark shape keys, in sorted key order."""

    by_key: Mapping[str, str]
    by_prefix: Mapping[str, str]  # 8-hex prefix of a uuid key -> its label; a shared prefix names neither

    @classmethod
    def from_keys(cls, keys: Iterable[str]) -> ShapeLabels:
        ordered = sorted({_canonical(k) for k in keys})
        by_key = {k: f"shape-{i}" for i, k in enumerate(ordered, 1)}
        prefixes = [k[:8] for k in ordered if _UUID_KEY.fullmatch(k)]
        by_prefix = {k[:8]: by_key[k] for k in ordered if _UUID_KEY.fullmatch(k) and prefixes.count(k[:8]) == 1}
        return cls(by_key, by_prefix)

    def label(self, key: str) -> str:
        canon = _canonical(key)
        found = self.by_key.get(canon) or self.by_prefix.get(canon.lower())
        if found is None:
            raise KeyError(f"unknown shape key {key!r}")
        return found

    def spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        for m in _SHAPE_TOKEN.finditer(text):
            token = _canonical(m.group(0)).lower()
            found = self.by_key.get(token) if len(token) == 32 else self.by_prefix.get(token)
            if found:
                yield m.start(), m.end(), found


# --- the scrubber --------------------------------------------------------------------------------

# Code: Python-hosted DSLs read `#` comments and strings (`//` is floor division). CUDA is C++
# (`//`, `/* */`, strings) unless the source shows it is Python passing CUDA to load_inline; a trace's
# kernel.py usually is, and a diff hunk may show neither its imports nor its quotes, so CUDA that
# shows no Python also has its `#` lines read.
_PYTHON_HOST = re.compile(
    r"\bload_inline\b|\bcpp_extension\b|\"{3}|'{3}"
    r"|^[ +-]?[ \t]*(?:import [\w.]+|from [\w.]+ import\b|def \w+\(|@\w)",
    re.M,
)


def _shown_language(source: str) -> str:
    return "python" if _PYTHON_HOST.search(source) else "any"


def code_language(source: str, dsl: str) -> str:
    """Which `anonymize_patterns.PROSE_IN_CODE` syntax holds the prose of `source`."""
    if dsl == "cuda":
        return _shown_language(source)
    if dsl in PYTHON_DSLS or dsl == "any":
        return "python"
    raise ValueError(f"unknown dsl {dsl!r}")


# --- the denylist: prose and code -----------------------------------------------------------------

# A denied term takes its whole token in prose: `<term>ics`, `get<Term>Grid`, a host name under a
# denylisted domain (gpu-node-17.<domain>) or a path through a denylisted directory; a sentence's
# full stop stays.
_TOKEN_STOPS = frozenset("()[]{}<>\"'`,;!?|")
_PRIVATE_PHRASES = ("a private identifier", "a private name", "a withheld name", "a name")
# In code a denied term becomes a word that keeps the identifier valid; the same spelling always gets
# the same word, so both sides of a diff rename alike.
_IDENTIFIER_WORDS = ("redacted", "anon", "priv", "xx", "q")


def _token_around(text: str, a: int, b: int, floor: int) -> tuple[int, int]:
    """The token holding text[a:b], not reaching back before `floor`."""
    lead, end, n = a, b, len(text)
    while lead > floor and not text[lead - 1].isspace() and text[lead - 1] not in _TOKEN_STOPS:
        lead -= 1
    while end < n and not text[end].isspace() and text[end] not in _TOKEN_STOPS:
        end += 1
    return lead, max(b, _trim(text, lead, end))


def _styled(word: str, like: str) -> str:
    letters = [c for c in like if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return word.upper()
    return word.capitalize() if letters and letters[0].isupper() else word


class Scrubber:
    """Rewrites leaks into neutral words: prose with `text`, code with `code` (comments and strings
    rewritten like prose, denied terms in identifiers renamed)."""

    def __init__(self, denylist: Iterable[str] = ()):
        self.denylist = tuple(denylist)
        self._deny = compile_denylist(self.denylist)
        # the replacement words must not hold a term themselves (a denylisted "act" is in "redacted")
        self._phrase = next((p for p in _PRIVATE_PHRASES if not self._deny.contains(p)), "")
        self._word = next((w for w in _IDENTIFIER_WORDS if not self._deny.contains(w)), "_")

    @classmethod
    def from_env(cls, env_var: str = DENYLIST_ENV, environ: Mapping[str, str] = os.environ) -> Scrubber:
        """Denylist from the file named by `env_var`; unset = empty, unreadable = InputError."""
        return cls(read_denylist(environ, env_var))

    def denied_terms(self, text: str) -> Iterator[tuple[int, str]]:
        """(start, spelling) of every denied term in `text`, in any spelling `Denylist` sees."""
        for a, b in self._deny.spans(text):
            yield a, text[a:b]

    def _denied_spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        reach = 0  # a token is expanded once, however many terms it holds (linear in the text)
        for a, b in self._deny.spans(text):
            if a < reach:
                continue
            a, b = _token_around(text, a, b, reach)
            reach = b
            yield a, b, self._phrase

    def _clear(self, out: str, rewrite: Callable[[str], str]) -> str:
        """`out` with no denied term left, even one that a replacement formed with its neighbours."""
        for _ in range(3):
            if not self._deny.spans(out):
                return out
            out = rewrite(out)
        spans = self._deny.spans(out)
        return "".join(out[a:b] for a, b in zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(out)]))

    def _private_rewrite(self, s: str) -> str:
        return _apply(s, _resolve(Span(a, b, phrase, 0) for a, b, phrase in self._denied_spans(s)))

    @overload
    def private(self, s: str) -> str: ...
    @overload
    def private(self, s: None) -> None: ...
    def private(self, s: str | None) -> str | None:
        """Only denylisted terms replaced: for human-facing reports, where labels and versions belong."""
        if not s or not self._deny:
            return s
        return self._clear(self._private_rewrite(s), self._private_rewrite)

    def private_json(self, value):
        """A JSON value with `private` applied to every string, object keys included: for reports."""
        if not self._deny:
            return value
        if isinstance(value, str):
            return self.private(value)
        if isinstance(value, dict):
            return {self.private(k) if isinstance(k, str) else k: self.private_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.private_json(v) for v in value]
        return value

    def _finders(self, shapes: ShapeLabels | None) -> list[Finder]:
        """In rule order: earlier rules win ties between identical spans (a path through a denied
        directory reads "a local path"; any denied term a later rule would leave is then cleared)."""
        return [
            _local_path_spans,
            _email_spans,
            _markdown_spans,
            _trace_path_spans,
            self._denied_spans,
            *([shapes.spans] if shapes else []),
            _spans_of(uuids, "a shape"),
            _hex_spans,
            _version_spans,
        ]

    def _rewrite(self, s: str, shapes: ShapeLabels | None = None) -> str:
        finders = self._finders(shapes)
        spans = [Span(a, b, phrase, rank) for rank, finder in enumerate(finders) for a, b, phrase in finder(s)]
        view, starts, ends = compat(s)
        if (
            starts is not None and ends is not None
        ):  # full-width, escaped or look-alike spellings of a path, address, hash...
            spans += [
                Span(starts[a], ends[b - 1], phrase, rank)
                for rank, finder in enumerate(finders)
                if finder != self._denied_spans
                for a, b, phrase in finder(view)
                if b > a
            ]
        chosen = _resolve(spans)
        out = _apply(s, chosen)
        # unchanged text was just searched; a replacement may join its neighbours into a term
        return self._clear(out, self._private_rewrite) if self._deny and chosen else out

    @overload
    def text(self, s: str, shapes: ShapeLabels | None = None) -> str: ...
    @overload
    def text(self, s: None, shapes: ShapeLabels | None = None) -> None: ...
    def text(self, s: str | None, shapes: ShapeLabels | None = None) -> str | None:
        """Scrubbed prose with tidied whitespace; None stays None."""
        return None if s is None else _tidy(self._rewrite(s, shapes))

    def _rename(self, code: str, keep: list[tuple[int, int]]) -> str:
        """Denied terms outside the `keep` spans (comments and strings) replaced by an identifier word."""
        starts = [a for a, _ in keep]
        out, pos = [], 0
        for a, b in self._deny.spans(code):
            i = bisect_right(starts, a) - 1
            if i >= 0 and b <= keep[i][1]:
                continue  # prose: rewritten as prose
            out += [code[pos:a], _styled(self._word, code[a:b])]
            pos = b
        out.append(code[pos:])
        return "".join(out)

    def code(self, s: str, dsl: str) -> str:
        """`s` with its comments and string literals scrubbed and denied terms in identifiers renamed;
        layout is left alone."""
        language = code_language(s, dsl)
        if self._deny:
            s = self._rename(s, prose_spans(s, language))
        out, pos = [], 0
        for a, b in prose_spans(s, language):
            out += [s[pos:a], self._rewrite(s[a:b])]
            pos = b
        out.append(s[pos:])
        result = "".join(out)
        return self._clear(result, lambda c: self._rename(c, [])) if self._deny else result

    def code_leaks(self, s: str, dsl: str) -> list[str]:
        """What `code` would still change: leaks of comments and strings, denied terms anywhere."""
        found = [leak for a, b in prose_spans(s, code_language(s, dsl)) for leak in self.leaks(s[a:b], denied=False)]
        return found + [f"denylisted {self._deny.label(spelling)}" for _, spelling in self.denied_terms(s)]

    def leaks(self, s: str, denied: bool = True) -> list[str]:
        """What still leaks in (scrubbed) text, left to right, as `<kind> '<match>'`; a denied term as
        `denylisted term #k` (its place in the list), since leak reports land in logs."""
        finders = ((("denylisted term", self.denied_terms),) if denied else ()) + (
            ("local path", local_paths),
            ("e-mail address", emails),
            ("markdown page", markdown_pages),
            ("uuid", uuids),
            ("hex id", lambda t: hex_runs(t, need_digit=False)),
            ("version id", version_ids),
        )
        found = [Leak(kind, token, a) for kind, finder in finders for a, token in finder(s)]
        view, starts, ends = compat(s)
        if starts is not None and ends is not None:
            found += [
                Leak(kind, s[starts[a] : ends[a + len(token) - 1]], starts[a])
                for kind, finder in (finders[1:] if denied else finders)
                for a, token in finder(view)
            ]
        found = outermost(found)
        return [
            f"denylisted {self._deny.label(leak.token)}"
            if leak.kind == "denylisted term"
            else f"{leak.kind} {leak.token!r}"
            for leak in found
        ]


# --- scrub-check ---------------------------------------------------------------------------------

_FILE_LANGUAGES = {".py": "python", ".cu": "c", ".cuh": "c"}  # diffs: whichever the hunks show


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})") from None


def json_strings(obj: Any) -> list[str]:
    """Every string in a JSON document in document order, keys included (a table keyed by a uuid
    leaks it); iterative, since packets are walked by the thousand and records may nest deep."""
    out, stack = [], [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed([part for pair in value.items() for part in pair]))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return out


def prose_of_file(path: Path) -> Iterator[str]:
    """The parts of a file an agent reads as prose: JSON strings, code comments and strings, or all text."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        yield from json_strings(read_json(path))
    elif suffix == ".jsonl":
        yield from json_strings(read_jsonl(path))
    elif suffix in _FILE_LANGUAGES or suffix in (".diff", ".patch"):
        text = _read_text(path)
        yield from (text[a:b] for a, b in prose_spans(text, _FILE_LANGUAGES.get(suffix) or _shown_language(text)))
    else:
        yield _read_text(path)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE + "\n\n" + __doc__.split("\n\n")[1])
        return 0
    if not argv:
        print(f"error: {USAGE}", file=sys.stderr)
        return 2
    scrubber = Scrubber.from_env()
    # Read every file before printing, so an unreadable one ends the run with its error alone.
    report = [
        f"{path}: {leak}" for path in argv for chunk in prose_of_file(Path(path)) for leak in scrubber.leaks(chunk)
    ]
    for line in report:
        print(line)
    return 1 if report else 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
