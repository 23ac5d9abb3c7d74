"""The shared vocabulary of the store gates: gate names, results, and a read-only view of one record.

Records are untrusted JSON: every accessor here tolerates any shape (a list where an object belongs,
a number where a string belongs) and answers "absent" instead of raising, so a malformed record
becomes a FAIL message, never a traceback.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from optrace.scrub.leak_patterns import Denylist, code_language, prose_spans

# Run order of the store's checker; every gate has an injection case (gates.store.injection).
C = TypeVar("C")  # what a gate's per-record check reads beside the record

GATES = (
    "schema",
    "ids",
    "anonymization",
    "raw-isolation",
    "relations",
    "index",
    "self-contained",
    "no-cross-reference",
    "established-fact",
)

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"

# Values under these keys are code: only their comments and string literals are prose.
CODE_KEYS = frozenset({"snippet", "dispatch_snippet", "attempted_code"})
# where a mined record carries its claims' citations: the claims gate reads it; the walk every other
# trace gate shares (RecordView.leaves) leaves it out, since it repeats the record's own strings
CLAIMS_AT = ("evidence", "raw", "evidence_extra", "claims")


@dataclass(frozen=True)
class GateResult:
    gate: str
    status: str  # PASS | FAIL | SKIP
    summary: str  # what was checked, with a count
    messages: tuple[str, ...] = ()  # each names the record (or index) path


@dataclass(frozen=True)
class GateContext:
    """What a per-record gate needs beyond the record: the ids it may link to and the denylist."""

    known_ids: frozenset[str] = frozenset()
    denylist: Denylist | None = None  # anonymize_patterns.denylist_pattern: folded, any substring


def obj(value: Any, *keys: str) -> dict:
    """The dict at value[k1][k2]..., or {} when any step is missing or not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    """A string field's stripped text; "" for anything that is not a string."""
    return value.strip() if isinstance(value, str) else ""


def format_loc(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _walk(value: Any, path: tuple, texts: list, paths: list | None, code: Callable[[str], str] | None) -> None:
    """Append every string of a JSON value (object keys included) to texts, in document order.

    paths, when given, receives each string's path: the fast pass leaves it None and the (rare)
    pass that must say where a hit is re-walks with it. `code` turns the text of a code-valued key
    into its prose; None drops code (an empty piece keeps both passes aligned).
    """
    if isinstance(value, str):
        texts.append(value)
        if paths is not None:
            paths.append(path)
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str):
            texts.append(key)
            if paths is not None:
                paths.append(path)
        if isinstance(item, str):
            if key in CODE_KEYS:
                item = code(item) if code is not None else ""
            texts.append(item)
            if paths is not None:
                paths.append(path + (key,))
        elif isinstance(item, (dict, list)):
            _walk(item, path + (key,) if paths is not None else path, texts, paths, code)


def verbatim(code: str) -> str:
    """The `code` argument of TextBlob that reads code like any other text."""
    return code


def keys_named(value: Any, names: tuple[str, ...], path: tuple = ()) -> list[tuple]:
    """Paths of every object key in `names`, at any depth."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if key in names:
            found.append(path + (key,))
        if isinstance(item, (dict, list)):
            found += keys_named(item, names, path + (key,))
    return found


def json_leaves(value: Any, skip: tuple = CLAIMS_AT) -> list[tuple[tuple, Any, bool]]:
    """(where, leaf, is a key) for every object key, string and JSON number (int or float, not bool) of a
    JSON value, in the order of one stack walk; a key's `where` is the path of its object, any other
    leaf's its own path. The subtree at path `skip` is left out (its key is a leaf)."""
    out: list[tuple[tuple, Any, bool]] = []
    stack: list[tuple[tuple, Any]] = [((), value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                out.append((where, key, True))
                if where + (key,) != skip:
                    stack.append((where + (key,), item))
        elif isinstance(node, list):
            stack.extend((where + (i,), item) for i, item in enumerate(node))
        elif isinstance(node, str) or type(node) in (int, float):
            out.append((where, node, False))
    return out


class TextBlob:
    """The strings of some JSON parts joined into one text, so each pattern runs once per record.

    Offsets map back to JSON paths only when asked (a hit), by walking the parts again with paths.
    """

    def __init__(self, parts: tuple[tuple[tuple, Any], ...], code: Callable[[str], str] | None = None):
        self.parts, self.code = parts, code
        texts: list[str] = []
        for prefix, value in parts:
            _walk(value, prefix, texts, None, code)
        self.text = "\n".join(texts)

    def where(self, offset: int) -> str:
        texts: list[str] = []
        paths: list[tuple] = []
        for prefix, value in self.parts:
            _walk(value, prefix, texts, paths, self.code)
        starts, pos = [], 0
        for t in texts:
            starts.append(pos)
            pos += len(t) + 1
        return format_loc(paths[bisect_right(starts, offset) - 1])


@dataclass
class RecordView:
    """One parsed record (a dict) and its path relative to the store root (`records/.../<id>.json`)."""

    record: dict
    relpath: str

    @cached_property
    def dsl(self) -> Any:
        return obj(self.record, "retrieval", "scope").get("dsl")

    def code_prose(self, code: str) -> str:
        return "\n".join(code[a:b] for a, b in prose_spans(code, code_language(self.dsl)))

    @cached_property
    def served_text(self) -> TextBlob:
        """What an agent can be shown, code reduced to its prose: payload, retrieval, summary, gain."""
        r = self.record
        return TextBlob(
            (
                (("payload",), r.get("payload")),
                (("retrieval",), r.get("retrieval")),
                (("evidence", "summary"), obj(r, "evidence").get("summary")),
                (("worth", "gain"), obj(r, "worth").get("gain")),
            ),
            code=self.code_prose,
        )

    @cached_property
    def payload_and_gain_text(self) -> TextBlob:
        """Payload and gain with code left out entirely (code may legitimately contain paths and dots)."""
        r = self.record
        return TextBlob(((("payload",), r.get("payload")), (("worth", "gain"), obj(r, "worth").get("gain"))))

    @cached_property
    def leaves(self) -> list[tuple[tuple, Any, bool]]:
        """json_leaves of the record: the one walk the gates that read every string or number share."""
        return json_leaves(self.record)

    @cached_property
    def raw(self) -> dict:
        return obj(self.record, "evidence", "raw")

    @cached_property
    def from_trace(self) -> bool:
        """Mined from an optimization trace: its raw provenance names a repo, version or commit."""
        return any(isinstance(self.raw.get(k), str) and self.raw[k] for k in ("source_repo", "version", "git_commit"))


@dataclass(frozen=True)
class Gate(Generic[C]):
    """One store gate: a per-record check, a whole-store check, or both. `C` is what a per-record check
    reads beside the record: a GateContext for the store gates, the trace gates' Evidence for theirs."""

    name: str
    summary: str  # what passing means, shown on the PASS/FAIL/SKIP line
    check: Callable[[RecordView, C], list[str]] | None = None
    check_store: Callable[..., list[str]] | None = None  # (store, views) -> messages
    applies: Callable[[RecordView], bool] | None = None  # None: every record; no applicable record -> SKIP
