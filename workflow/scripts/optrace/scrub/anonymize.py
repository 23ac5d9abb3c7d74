"""Scrub agent-facing text of everything that identifies people, machines, pages or runs.

What counts as a leak lives in `leak_patterns` (shared with the store's anonymization gate); the
rule modules decide what each leak becomes (`rules`, `versions`, `shapes`) and `spans` applies them.
Every rule finds spans in the *original* text and the spans are replaced in one pass: where two overlap, the wider wins (ties go to the earlier rule). A
sequential rewrite would break a token in two — a denylisted user name inside `/home/alice/x`
would turn into `/home/a private identifier/x`, whose path no longer matches whole. The neutral
words never match a rule, so scrubbing scrubbed text changes nothing.

A denylisted term, in any spelling `denylist.Denylist` folds, takes its whole token in
prose (`<term>ics` -> "a private identifier"). In code it becomes `redacted` in the term's case
(`get<Term>Grid` -> `getRedactedGrid`): a pure function of the spelling, so both sides of a diff, and
a comment or string naming the function, rename alike; in comments and strings a token that is not a
name (a host, an address, a URL) goes whole. Every scan is linear in the text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, overload

from optrace.scrub.check import json_strings
from optrace.scrub.denylist import compile_denylist
from optrace.scrub.denylist_file import DENYLIST_ENV, read_denylist
from optrace.scrub.finders import Leak, emails, hex_runs, local_paths, markdown_pages, outermost, uuids, version_ids
from optrace.scrub.folding import compat
from optrace.scrub.prose_spans import prose_spans, source_language
from optrace.scrub.rules import email_spans, hex_spans, local_path_spans, markdown_spans, trace_path_spans, trim
from optrace.scrub.shapes import ShapeLabels
from optrace.scrub.spans import Finder, Span, apply, resolve, spans_of, tidy
from optrace.scrub.versions import Step, version_spans

__all__ = ["Scrubber", "ShapeLabels", "Step", "json_strings"]  # the scrubber, and what packets take with it

# --- the denylist: prose and code -----------------------------------------------------------------

# A denied term takes its whole token in prose: `<term>ics`, `get<Term>Grid`, a host name under a
# denylisted domain (gpu-node-17.<domain>) or a path through a denylisted directory; a sentence's
# full stop stays.
_TOKEN_STOPS = frozenset("()[]{}<>\"'`,;!?|")
_PRIVATE_PHRASES = ("a private identifier", "a private name", "a withheld name", "a name")
# In code a denied term becomes a word that keeps the identifier valid; the same spelling always gets
# the same word, so both sides of a diff rename alike.
_IDENTIFIER_WORDS = ("redacted", "anon", "priv", "xx", "q")
_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")  # an identifier or a dotted path of them


def _token_around(text: str, a: int, b: int, floor: int) -> tuple[int, int]:
    """The token holding text[a:b], not reaching back before `floor`."""
    lead, end, n = a, b, len(text)
    while lead > floor and not text[lead - 1].isspace() and text[lead - 1] not in _TOKEN_STOPS:
        lead -= 1
    while end < n and not text[end].isspace() and text[end] not in _TOKEN_STOPS:
        end += 1
    return lead, max(b, trim(text, lead, end))


def _styled(word: str, like: str) -> str:
    letters = [c for c in like if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return word.upper()
    return word.capitalize() if letters and letters[0].isupper() else word


def _dotted_term(text: str, spans: list[tuple[int, int]], i: int, end: int) -> bool:
    """Whether a denied term from spans[i] on, before `end`, holds a dot (a domain: `node3.corp.example`)."""
    for x, y in spans[i:]:
        if x >= end:
            return False
        if "." in text[x:y]:
            return True
    return False


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

    def _denied_spans(self, text: str, in_code: bool = False) -> Iterator[tuple[int, int, str]]:
        """The whole token around each denied term, as prose; in code's comments and strings a name
        (`alice_reduce`, `self.alice_grid`) renamed as the code renames it, any other token (a host, an
        address, a URL) replaced whole by the identifier word."""
        reach = 0  # a token is expanded once, however many terms it holds (linear in the text)
        spans = self._deny.spans(text)
        for i, (a, b) in enumerate(spans):
            if a < reach:
                continue
            a, b = _token_around(text, a, b, reach)
            reach = b
            if not in_code:
                yield a, b, self._phrase
            elif _NAME.fullmatch(text, a, b) and not _dotted_term(text, spans, i, b):
                yield a, b, self._rename(text[a:b])
            else:
                yield a, b, _styled(self._word, text[a:b])

    def _clear(self, out: str, rewrite: Callable[[str], str]) -> str:
        """`out` with no denied term left, even one that a replacement formed with its neighbours."""
        for _ in range(3):
            if not self._deny.spans(out):
                return out
            out = rewrite(out)
        spans = self._deny.spans(out)
        return "".join(out[a:b] for a, b in zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(out)]))

    def _private_rewrite(self, s: str) -> str:
        return apply(s, resolve(Span(a, b, phrase, 0) for a, b, phrase in self._denied_spans(s)))

    @overload
    def private(self, s: str) -> str: ...
    @overload
    def private(self, s: None) -> None: ...
    def private(self, s: str | None) -> str | None:
        """Only denylisted terms replaced: for human-facing reports, where labels and versions belong."""
        if not s or not self._deny:
            return s
        return self._clear(self._private_rewrite(s), self._private_rewrite)

    def private_json(self, value: Any) -> Any:
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

    def _finders(self, shapes: ShapeLabels | None, step: Step | None, in_code: bool) -> list[Finder]:
        """In rule order: earlier rules win ties between identical spans (a path through a denied
        directory reads "a local path"; any denied term a later rule would leave is then cleared)."""
        return [
            local_path_spans,
            email_spans,
            markdown_spans,
            trace_path_spans,
            lambda text: self._denied_spans(text, in_code),
            *([shapes.spans] if shapes else []),
            spans_of(uuids, "a shape"),
            hex_spans,
            lambda text: version_spans(text, step, drop_prefix=not in_code),
        ]

    def _rewrite(
        self, s: str, shapes: ShapeLabels | None = None, step: Step | None = None, in_code: bool = False
    ) -> str:
        finders = self._finders(shapes, step, in_code)
        denied = finders[4]
        spans = [Span(a, b, phrase, rank) for rank, finder in enumerate(finders) for a, b, phrase in finder(s)]
        view, starts, ends = compat(s)
        if (
            starts is not None and ends is not None
        ):  # full-width, escaped or look-alike spellings of a path, address, hash...
            spans += [
                Span(starts[a], ends[b - 1], phrase, rank)
                for rank, finder in enumerate(finders)
                if finder is not denied
                for a, b, phrase in finder(view)
                if b > a
            ]
        chosen = resolve(spans)
        out = apply(s, chosen)
        if not (self._deny and chosen):
            return out
        # unchanged text was just searched; a replacement may join its neighbours into a term
        return self._clear(out, self._rename if in_code else self._private_rewrite)

    @overload
    def text(self, s: str, shapes: ShapeLabels | None = None, step: Step | None = None) -> str: ...
    @overload
    def text(self, s: None, shapes: ShapeLabels | None = None, step: Step | None = None) -> None: ...
    def text(self, s: str | None, shapes: ShapeLabels | None = None, step: Step | None = None) -> str | None:
        """Scrubbed prose with tidied whitespace; None stays None. `step`: the step the text belongs to, so
        that its version references become words true of it (`versions.Step`)."""
        return None if s is None else tidy(self._rewrite(s, shapes, step))

    def _rename(self, code: str) -> str:
        """Every denied term replaced by an identifier word in the term's case."""
        out, pos = [], 0
        for a, b in self._deny.spans(code):
            out += [code[pos:a], _styled(self._word, code[a:b])]
            pos = b
        out.append(code[pos:])
        return "".join(out)

    def code(self, s: str, dsl: str, step: Step | None = None) -> str:
        """`s` as the trace wrote it but for what must go: a denied term in code renamed like an
        identifier (the same spelling, the same word: a diff's two sides, and a comment or string that
        names the function, stay consistent); in comments and strings every other leak rewritten, version
        references as words true of `step`; layout left alone."""
        out, pos = [], 0
        for a, b in prose_spans(s, source_language(s, dsl)):
            out += [self._rename(s[pos:a]) if self._deny else s[pos:a], self._rewrite(s[a:b], step=step, in_code=True)]
            pos = b
        out.append(self._rename(s[pos:]) if self._deny else s[pos:])
        result = "".join(out)
        return self._clear(result, self._rename) if self._deny else result

    def code_leaks(self, s: str, dsl: str) -> list[str]:
        """What `code` would still change: leaks of comments and strings, denied terms anywhere."""
        found = [leak for a, b in prose_spans(s, source_language(s, dsl)) for leak in self.leaks(s[a:b], denied=False)]
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
