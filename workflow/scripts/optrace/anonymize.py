"""Scrub agent-facing text of everything that identifies people, machines, pages or runs.

`optrace scrub-check PATH...` reports what would still leak in files already scrubbed: one
`PATH: <leak>` line per leak, exit 0 clean, 1 leaks, 2 usage or an unreadable file.

What counts as a leak lives in `anonymize_patterns` (shared with the store's anonymization gate);
this module decides what each leak becomes. Every rule finds spans in the *original* text and the
spans are replaced in one pass: where two overlap, the wider wins (ties go to the earlier rule). A
sequential rewrite would break a token in two — a denylisted user name inside `/home/alice/x`
would turn into `/home/a private identifier/x`, whose path no longer matches whole. The neutral
words never match a rule, so scrubbing scrubbed text changes nothing.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from .anonymize_patterns import (DENYLIST_ENV, EXPONENT, HARDWARE_NAMES, PYTHON_DSLS, denylist_pattern,
                                 emails, local_paths, markdown_pages, prose_spans, read_denylist, uuids, version_ids)
from .errors import InputError
from .jsonio import read_json, read_jsonl

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
_PATH_CHARS = "_.~+@%=/-"
_PATH_RIGHT = re.compile(r"[\w.~+@%=/-]*")
_TRAILING_PUNCT = ".,;:!?"
_EMAIL_TAIL = re.compile(r"(?:\.[A-Za-z0-9-]+)*")  # alice@mail.corp.example.com: the whole domain


def _trim(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _TRAILING_PUNCT:
        end -= 1
    return end


def _path_start(text: str, start: int) -> int:
    """Start of the path holding text[start], by a backwards scan (an end-anchored search is quadratic)."""
    i = start
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in _PATH_CHARS):
        i -= 1
    return i - 5 if text[max(0, i - 5):i] == "file:" else i


def _local_path_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for start, token in local_paths(text):
        end = _PATH_RIGHT.match(text, start + len(token)).end()
        yield _path_start(text, start), _trim(text, start, end), "a local path"


def _email_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for start, token in emails(text):
        yield start, _EMAIL_TAIL.match(text, start + len(token)).end(), "an address"


def _markdown_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """The finder's stem starts at a word character: take the `../` or `/` in front of it too."""
    for start, token in markdown_pages(text):
        lead = start
        if text[start - 1:start] == "/":
            while lead > 0 and text[lead - 1] in "./~":
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


# Hex ids: lowercase hex words with a letter (a run of digits is a number). Not a decimal fraction's
# digits (1.662843e-02), a mantissa before its exponent, or the tail of a dashed token: a record id's
# content hash (`...-s1a2b3c`) names no run, and the store's gate skips those too.
_HEX_WORD = re.compile(r"\b[0-9a-f]{7,64}\b")


def hex_ids(text: str) -> Iterator[tuple[int, str]]:
    for m in _HEX_WORD.finditer(text):
        token, a, b = m.group(0), m.start(), m.end()
        before = text[max(0, a - 2):a]
        if token.isdigit() or before.endswith("-") or (before[-1:] == "." and before[:1].isdigit()):
            continue
        if token.endswith("e") and EXPONENT.match(text, b):
            continue
        yield a, token


def _hex_phrase(token: str) -> str:
    n = len(token)
    if n == 32:
        return "a shape"  # an undashed uuid: a workload's shape key
    if n == 40 or (7 <= n <= 12 and n != 8):
        return "a commit"
    return "an identifier"  # 8 hex (a short hash), or a content hash of another length


def _hex_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for start, token in hex_ids(text):
        yield start, start + len(token), _hex_phrase(token)


# Versions: "v12: " opening a line is a commit-subject prefix and goes; runs of ids joined by
# list words become one phrase. version_ids already spares vector widths and V100.
_LINE_PREFIX = re.compile(r"^[ \t]*([vV]\d+(?:_(?:rerun|baseline|base)\d*)?):[ \t]*", re.M)
_LIST_GAP = re.compile(r"[ \t]*(?:,|/|&|\+|->|-|–|—|\.\.|to\b|and\b|or\b|vs\.?|through\b)?"
                       r"[ \t]*(?:(?:and|or)\b[ \t]*)?")


def _version_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _LINE_PREFIX.finditer(text):
        if m.group(1) not in HARDWARE_NAMES:
            yield m.start(1), m.end(), ""
    found = [(start, start + len(token), token) for start, token in version_ids(text)]
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and _LIST_GAP.fullmatch(text, found[j][1], found[j + 1][0]):
            j += 1
        token = found[i][2]
        phrase = "earlier steps" if j > i else "a re-measurement" if "_" in token else "an earlier step"
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
    if before[cut:cut + 1].isupper():
        phrase = phrase[0].upper() + phrase[1:]
    return before[:cut], phrase


def _apply(text: str, spans: list[Span]) -> str:
    out, pos = [], 0
    for s in spans:
        before, phrase = _join(text[pos:s.start], s.phrase)
        out += [before, phrase]
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}")
_LINE_END_SPACES = re.compile(r"[ \t]+$", re.M)


def _tidy(text: str) -> str:
    return _LINE_END_SPACES.sub("", _INNER_SPACES.sub(" ", text)).strip()


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
    def from_keys(cls, keys: Iterable[str]) -> "ShapeLabels":
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
_PYTHON_HOST = re.compile(r"\bload_inline\b|\bcpp_extension\b|\"{3}|'{3}"
                          r"|^[ +-]?[ \t]*(?:import [\w.]+|from [\w.]+ import\b|def \w+\(|@\w)", re.M)


def _shown_language(source: str) -> str:
    return "python" if _PYTHON_HOST.search(source) else "any"


def code_language(source: str, dsl: str) -> str:
    """Which `anonymize_patterns.PROSE_IN_CODE` syntax holds the prose of `source`."""
    if dsl == "cuda":
        return _shown_language(source)
    if dsl in PYTHON_DSLS or dsl == "any":
        return "python"
    raise ValueError(f"unknown dsl {dsl!r}")


def _outermost(found: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """Drop finds inside another find (a uuid's first 8 hex are not a second leak)."""
    kept, reach = [], -1
    for f in sorted(found, key=lambda f: (f[0], -f[1])):
        if f[1] > reach:
            kept.append(f)
            reach = f[1]
    return kept


class Scrubber:
    """Rewrites leaks into neutral words: prose with `text`, code's comments and strings with `code`."""

    def __init__(self, denylist: Iterable[str] = ()):
        self.denylist = tuple(denylist)
        pattern = denylist_pattern(self.denylist)
        # Whole terms only: a denylisted "ann" must not eat "annotate"; `_` and `.` still separate.
        self._denied = pattern and re.compile(rf"(?<![^\W_])(?:{pattern.pattern})(?![^\W_])", re.I)
        self._denied_spans = _spans_of(self.denied_terms, "a private identifier")

    @classmethod
    def from_env(cls, env_var: str = DENYLIST_ENV, environ=os.environ) -> "Scrubber":
        """Denylist from the file named by `env_var`; unset = empty, unreadable = InputError."""
        path = environ.get(env_var)
        return cls(read_denylist({DENYLIST_ENV: path} if path else {}))

    def private(self, s: str | None) -> str | None:
        """Only denylisted terms replaced: for human-facing reports, where labels and versions belong."""
        return self._denied.sub("a private identifier", s) if s and self._denied else s

    def denied_terms(self, text: str) -> Iterator[tuple[int, str]]:
        if self._denied:
            for m in self._denied.finditer(text):
                yield m.start(), m.group(0)

    def _finders(self, shapes: ShapeLabels | None) -> list[Finder]:
        """In rule order: earlier rules win ties between identical spans."""
        return [self._denied_spans, _local_path_spans, _email_spans, _markdown_spans, _trace_path_spans,
                *([shapes.spans] if shapes else []), _spans_of(uuids, "a shape"), _hex_spans, _version_spans]

    def _rewrite(self, s: str, shapes: ShapeLabels | None = None) -> str:
        spans = (Span(a, b, phrase, rank) for rank, finder in enumerate(self._finders(shapes))
                 for a, b, phrase in finder(s))
        return _apply(s, _resolve(spans))

    def text(self, s: str | None, shapes: ShapeLabels | None = None) -> str | None:
        """Scrubbed prose with tidied whitespace; None stays None."""
        return None if s is None else _tidy(self._rewrite(s, shapes))

    def code(self, s: str, dsl: str) -> str:
        """`s` with only its comments and string literals scrubbed; layout is left alone."""
        out, pos = [], 0
        for a, b in prose_spans(s, code_language(s, dsl)):
            out += [s[pos:a], self._rewrite(s[a:b])]
            pos = b
        out.append(s[pos:])
        return "".join(out)

    def code_leaks(self, s: str, dsl: str) -> list[str]:
        """`leaks` of the comments and string literals `code` would scrub."""
        return [leak for a, b in prose_spans(s, code_language(s, dsl)) for leak in self.leaks(s[a:b])]

    def leaks(self, s: str) -> list[str]:
        """What still leaks in (scrubbed) text, left to right, as `<kind> '<match>'`."""
        finders = (("denylisted term", self.denied_terms), ("local path", local_paths), ("e-mail address", emails),
                   ("markdown page", markdown_pages), ("uuid", uuids), ("hex id", hex_ids), ("version id", version_ids))
        found = [(a, a + len(token), kind, token) for kind, finder in finders for a, token in finder(s)]
        return [f"{kind} {token!r}" for _, _, kind, token in _outermost(found)]


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


def _json_strings(obj) -> Iterator[str]:
    """Every string in a JSON document, keys included (a table keyed by a uuid leaks it)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _json_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _json_strings(v)


def prose_of_file(path: Path) -> Iterator[str]:
    """The parts of a file an agent reads as prose: JSON strings, code comments and strings, or all text."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        yield from _json_strings(read_json(path))
    elif suffix == ".jsonl":
        yield from _json_strings(read_jsonl(path))
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
    report = [f"{path}: {leak}" for path in argv for chunk in prose_of_file(Path(path))
              for leak in scrubber.leaks(chunk)]
    for line in report:
        print(line)
    return 1 if report else 0


if __name__ == "__main__":
    from .cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
