"""Commit-subject grammar of all three trace eras, as pure functions over text.

Eras:
  A. skill era:      `V3: 150 TFLOPS | XOR16 swizzle (bottleneck: ...)`, revert marker `V5: revert V4 (...)`
  B. iteration era:  `v4: committed (+3.2%)`, `v7: reverted (<why>) — dead-end recorded`,
                     `dead-end recorded: a, b (x, y), c. Next: ...`, `v1: pin framework baseline <sha8>`
  C. long-horizon:   `episode 5: promote verified long-horizon candidate` (kept; version from the memory
                     file it adds), `v9: long-horizon episode 8 candidate_ready` (not kept)
Words are matched on word boundaries, never as substrings (`BlockedLayout` is not "blocked").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A version or episode number has at most 9 digits: longer is not a number a run writes (and a
# 4400-digit one is past Python's int-from-string limit); such a subject names no version.
NUM = r"(\d{1,9})(?!\d)"
VERSION_RE = re.compile(rf"^\s*[vV]{NUM}\s*:")
TRIAL_RE = re.compile(rf"^\s*[vV]{NUM} trial \d+\s*:")  # episode-branch commits; never the trace
PROMOTE_RE = re.compile(rf"^\s*episode {NUM}: promote\b", re.I)
LH_OUTCOME_RE = re.compile(rf"^\s*[vV]{NUM}:\s*long-horizon episode {NUM} (\w+)", re.I)
# a long-horizon version's own description opens with its episode ("episode 5: two-stage cp.async
# pipeline ..."): the label of the record it is in, not part of what the step changed
EPISODE_LABEL_RE = re.compile(rf"^\s*episode {NUM}\s*:\s*", re.I)
REVERTED_RE = re.compile(r"\breverted\b|\bdead-end recorded\b", re.I)
REVERT_MARKER_RE = re.compile(rf"^\s*[vV]\d+:\s*revert\s+[vV]{NUM}\b", re.I)
PIN_RE = re.compile(r"^\s*[vV]\d+:\s*pin framework baseline\b", re.I)
RECORD_RE = re.compile(r"^\s*[vV]\d+:\s*record baseline measurement\b", re.I)
FRAMEWORK_RE = re.compile(r"\bframework baseline\b", re.I)
COMMITTED_RE = re.compile(r"\bcommitted\b", re.I)
DEADEND_LIST_RE = re.compile(r"\bdead-end recorded:\s*(.+)$", re.I | re.M)
# Phrases that say a version changed nothing measurable: it may take the floor but never claim a gain.
NO_CHANGE_RE = re.compile(
    r"\bNO[_ ]CHANGE\b|\bNO[_ ]OP\b|\bfalsified\b|\bflat[- ]within[- ]noise\b|\bwithin noise\b"
    r"|\bno actionable lever\b|\bno improvement\b",
    re.I,
)
# `blocked` and `unavailable` are status words only where a status stands (the subject's last word, alone
# in brackets, after a machine noun, `blocked on the sandbox`); elsewhere they are English ("the blocked
# persistent grid", "the fast path is unavailable for bf16").
_STATUS = r"(?:blocked|unavailable|down)"
_MACHINE = r"(?:gpus?|machines?|nodes?|hosts?|runners?|devices?|sandbox(?:es)?|clusters?|queues?|quota)"
INFRA_RE = re.compile(
    r"\binfra(?:structure)?\b|\bsandbox\b|\boutage\b|\bnot_run\b|\bno_gpu\b|\bmachine_down\b"
    rf"|\b{_MACHINE}[ \t]+(?:(?:is|was|were|are)[ \t]+)?{_STATUS}\b"
    rf"|\bblocked[ \t]+(?:on|by)[ \t]+(?:the[ \t]+)?{_MACHINE}\b"
    r"|\((?:[ \t]*)(?:blocked|unavailable)[ \t]*\)|\b(?:blocked|unavailable)[ \t]*$",
    re.I,
)
MIN_DEADEND_ITEM_CHARS = 4


@dataclass(frozen=True)
class SubjectClaim:
    """What one commit's subject says about its version."""

    kind: str  # version | promote | untagged (version from the memory file it adds) | trial | other
    version: int | None = None
    episode: int | None = None
    verdict: str | None = None  # baseline | kept | reverted | None (says nothing)
    basis: str = ""
    neutral: bool = False  # metadata-only commit (pin, baseline record): never decides a verdict
    reverts: int | None = None  # skill-era `revert V<N>`
    outcome: str | None = None  # long-horizon outcome status
    deadend_items: tuple[str, ...] = field(default=())


def parse_subject(subject: str, body: str = "") -> SubjectClaim:
    """Classify one commit. The verdict is read from the subject only: bodies and memory prose are
    free text in which "not reverted" or "within noise" say nothing about this commit's fate."""
    items = tuple(deadend_items(subject) or deadend_items(body))
    if m := PROMOTE_RE.match(subject):
        return SubjectClaim(
            "promote", episode=int(m.group(1)), verdict="kept", basis="episode promote commit", deadend_items=items
        )
    if m := TRIAL_RE.match(subject):
        return SubjectClaim("trial", version=int(m.group(1)), basis="episode-branch trial commit")
    m = VERSION_RE.match(subject)
    if not m:
        if REVERTED_RE.search(subject):
            # `dead-end recorded: a, b. Next: ...` carries no `v<N>:`; its version is the memory file it adds
            return SubjectClaim("untagged", verdict="reverted", basis="subject: dead-end recorded", deadend_items=items)
        return SubjectClaim("other")
    n = int(m.group(1))
    if lh := LH_OUTCOME_RE.match(subject):
        return SubjectClaim(
            "version",
            n,
            episode=int(lh.group(2)),
            verdict="reverted",
            basis=f"long-horizon outcome {lh.group(3)}",
            outcome=lh.group(3).lower(),
            deadend_items=items,
        )
    if PIN_RE.match(subject):
        return SubjectClaim("version", n, basis="framework pin (metadata only)", neutral=True)
    if RECORD_RE.match(subject):
        return SubjectClaim(
            "version", n, verdict="baseline" if n == 0 else None, basis="baseline measurement record", neutral=True
        )
    if rv := REVERT_MARKER_RE.match(subject):
        return SubjectClaim(
            "version", n, verdict="reverted", basis=f"revert marker (undoes v{rv.group(1)})", reverts=int(rv.group(1))
        )
    if REVERTED_RE.search(subject):
        word = "dead-end recorded" if re.search(r"dead-end recorded", subject, re.I) else "reverted"
        return SubjectClaim("version", n, verdict="reverted", basis=f"subject: {word}", deadend_items=items)
    if n == 0:
        return SubjectClaim("version", 0, verdict="baseline", basis="version 0")
    if FRAMEWORK_RE.search(subject):
        return SubjectClaim("version", n, verdict="kept", basis="subject: framework baseline")
    if COMMITTED_RE.search(subject):
        return SubjectClaim("version", n, verdict="kept", basis="subject: committed")
    # skill era and free-form wins state no verdict word; structure (kernel.py changed) decides
    return SubjectClaim("version", n, verdict=None, basis="subject states no verdict", deadend_items=items)


def deadend_items(text: str) -> list[str]:
    """Split `dead-end recorded: A, B (x, y), C. Next: ...` into levers.

    Only the line that carries the marker is read (a body is never glued on); the list ends at
    `Next:` or at the first sentence boundary; commas inside brackets do not split."""
    m = DEADEND_LIST_RE.search(text or "")
    if not m:
        return []
    blob = re.split(r"\bNext:", m.group(1), maxsplit=1)[0]
    blob = re.split(r"\.\s+(?=[A-Za-z])", blob, maxsplit=1)[0]
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in blob:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    cleaned = []
    for item in items:
        item = _balance(item.strip().rstrip(".;").strip())
        if len(item) >= MIN_DEADEND_ITEM_CHARS:
            cleaned.append(item)
    return cleaned


def _balance(item: str) -> str:
    # a list wrapped in "(...)" leaves its closing bracket on the last item: drop unmatched closers
    while item.endswith(")") and item.count(")") > item.count("("):
        item = item[:-1].rstrip()
    return item


def has_no_change(text: str) -> bool:
    return bool(NO_CHANGE_RE.search(text or ""))


def has_infra(text: str) -> bool:
    return bool(INFRA_RE.search(text or ""))


# ---- the fields of a subject line --------------------------------------------------------------

_NUMBER = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d{1,12})(?:\.\d{1,12})?"  # 8474.7, 8,474.7
# `3389.8 GB/s`, `150 TFLOPS`, `59.1 us`: one measurement field of a skill-era subject (before its `|`)
_PERF_FIELD = re.compile(rf"({_NUMBER})[ \t]*(GFLOPS|TFLOPS|GFLOP/s|TFLOP/s|GB/s|TB/s|GiB/s|us|µs|μs|ms|ns|x)", re.I)
_PERF_SPLIT = re.compile(r"\s+/\s+|\s*,\s+|,(?!\d{3})")  # a field list, not a number's thousands
_LATENCY_UNIT = r"(us|µs|μs|ms|ns)"
_TO_US = {"us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1000.0, "ns": 0.001}
# `59.6->59.1us (-0.7%)`, `1.2 ms → 900 us`: the latency before and after (tried at every number, so that
# `tile 128 → 59.6 µs → 57.0 µs` finds the pair with units), and the delta it states
_LATENCY = re.compile(
    rf"(?=(\d{{1,12}}(?:\.\d{{1,12}})?)[ \t]{{0,3}}(?:{_LATENCY_UNIT}[ \t]{{0,3}})?(?:->|→|=>)[ \t]{{0,3}}"
    rf"(\d{{1,12}}(?:\.\d{{1,12}})?)[ \t]{{0,3}}{_LATENCY_UNIT}\b((?:[ \t]{{0,3}}\([ \t]{{0,3}}[+-]?\d{{1,6}}(?:\.\d{{1,6}})?"
    rf"[ \t]{{0,3}}%[ \t]{{0,3}}\))?))",
    re.I,
)
_PREFIX = re.compile(rf"^\s*[vV]{NUM}\s*:\s*")
_DEADEND_SUFFIX = re.compile(r"\s*[—–-]+\s*dead-end recorded\s*$", re.I)
_CLAIMED = re.compile(r"^committed\b\s*(?:\(\s*([+-]?\d{1,6}(?:\.\d{1,6})?)\s*%[^()]*\))?\s*", re.I)
# `(+3.2% geomean improvement)`, `(+3.2%)`: a gain the subject states, wherever it stands
_STATED_GAIN = re.compile(
    r"\(\s*([+-]?\d{1,6}(?:\.\d{1,6})?)\s*%\s*(?:(?:geomean|geo-mean|mean)\s+)?(?:improvement|speed-?up|faster|gain)?\s*\)",
    re.I,
)
_REVERTED = re.compile(r"^(?:reverted|revert\s+[vV]\d{1,9})\b\s*", re.I)
_BOTTLENECK = re.compile(r"\(\s*bottleneck\s*(?::|-|–|—)\s*", re.I)
_TRAILING_VERDICT = re.compile(r"\s*\bcommitted\s*$", re.I)  # `<change> (bottleneck: ...) committed (+2.1%)`
_DANGLING = " \t-—–:;,>→="  # what a removed field leaves at the change's ends (`tiled load -> `)


def _closing_bracket(text: str) -> int | None:
    """Start of the bracketed group that ends `text` (`... (a (b) c)`), found by one backward scan."""
    end = text.rstrip()
    if not end.endswith(")"):
        return None
    depth = 0
    for i in range(len(end) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(end[i], 0)
        if depth == 0:
            return i
    return None


def _group_end(text: str, start: int) -> int | None:
    """End (past the `)`) of the bracketed group opening at `start`, by one forward scan."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None


def _unit(unit: str) -> str:
    return "us" if unit.lower() in ("us", "µs", "μs") else unit.lower()


def _latency(text: str) -> tuple[tuple[float, float], tuple[int, int]] | None:
    """(before, after) in µs of a latency arrow in `text`, and where it stands: the first whose number
    before the arrow has a unit, else the first."""
    # a match inside a number (`9.6->` of `59.6->`) is no number of its own
    found = [m for m in _LATENCY.finditer(text) if m.start() == 0 or text[m.start() - 1] not in ".0123456789"]
    if not found:
        return None
    m = next((m for m in found if m.group(2)), found[0])
    unit_after = m.group(4).lower()
    before = float(m.group(1)) * _TO_US[(m.group(2) or unit_after).lower()]
    after = float(m.group(3)) * _TO_US[unit_after]
    return (round(before, 6), round(after, 6)), (m.start(), _match_end(m))


def _match_end(m: re.Match[str]) -> int:
    """End of a lookahead match: where its last group ends."""
    return max(m.end(i) for i in range(1, 6) if m.group(i) is not None)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass(frozen=True)
class SubjectFields:
    """What a subject line states, field by field, instead of the line pasted whole."""

    perf: tuple[tuple[float, str], ...] = ()  # measurements before a `|`: (value, unit)
    claimed_pct: float | None = None  # `committed (+3.2%)`, `(+3.2% geomean improvement)`
    latency_us: tuple[float, float] | None = None  # `59.6->59.1us`: before and after, in µs
    change: str | None = None  # what the version changed, in the subject's words
    bottleneck: str | None = None  # `(bottleneck: ...)`
    note: str | None = None  # any other closing bracket: a revert's reason, "within noise"

    def to_json(self) -> dict:
        return {
            "perf": [[v, u] for v, u in self.perf],
            "claimed_pct": self.claimed_pct,
            "latency_us": list(self.latency_us) if self.latency_us else None,
            "change": self.change,
            "bottleneck": self.bottleneck,
            "note": self.note,
        }


def _perf(text: str) -> tuple[list[tuple[float, str]], str]:
    """Measurements before a `|` and the text after it; none when anything before the `|` is not one."""
    if "|" not in text:
        return [], text
    head, rest = text.split("|", 1)
    fields = [f for f in _PERF_SPLIT.split(head.strip()) if f]
    matched = [_PERF_FIELD.fullmatch(f) for f in fields]
    if not (fields and all(matched)):
        return [], text
    return [(_number(m.group(1)), m.group(2)) for m in matched if m], rest.strip()


def _cut(text: str, start: int, end: int) -> str:
    return f"{text[:start].rstrip(_DANGLING)} {text[end:].lstrip(_DANGLING)}".strip()


def subject_fields(subject: str) -> SubjectFields:
    """The fields of any era's subject: `V7: 15971.7 GFLOPS | 2D blocktiling (bottleneck: ...)`,
    `v4: committed (+3.2%) <change>`, `v4: <change> -> 59.6->59.1us (-0.7%)`, `v7: reverted (<why>) —
    dead-end recorded`, `V5: revert V4 (<why>)`. Grammar-only subjects (promote, long-horizon outcome,
    pin, dead-end list) have no change."""
    if PROMOTE_RE.match(subject) or LH_OUTCOME_RE.match(subject) or PIN_RE.match(subject):
        return SubjectFields()
    if not VERSION_RE.match(subject):
        return SubjectFields()
    perf, text = _perf(_DEADEND_SUFFIX.sub("", _PREFIX.sub("", subject, count=1)).strip())
    claimed, reverted = None, False
    if m := _CLAIMED.match(text):
        claimed = float(m.group(1)) if m.group(1) else None
        text = text[m.end() :]
    elif m := _REVERTED.match(text):
        reverted, text = True, text[m.end() :]
    latency = None
    if found := _latency(text):
        latency, (start, end) = found
        text = _cut(text, start, end)
    elif claimed is not None and (found := _latency(subject)):
        latency = found[0]  # stated inside the claim's bracket: `committed (+2.3%, 59.6->58.2us)`
    bottleneck = note = None
    if (b := _BOTTLENECK.search(text)) and (close := _group_end(text, b.start())) is not None:
        bottleneck = text[b.end() : close - 1].strip() or None
        text = _cut(text, b.start(), close)
    if claimed is None and (m := _STATED_GAIN.search(text)):
        claimed = float(m.group(1))
        text = _cut(text, m.start(), m.end())
    if (opening := _closing_bracket(text)) is not None:
        note = text.rstrip()[opening + 1 : -1].strip() or None
        text = text[:opening]
    change = _TRAILING_VERDICT.sub("", text).strip(_DANGLING) or None
    return SubjectFields(tuple(perf), claimed, latency, None if reverted else change, bottleneck, note)


def without_episode_label(description: str | None) -> str | None:
    """A version's description without the episode label that opens it (what the step changed)."""
    if description is None:
        return None
    return EPISODE_LABEL_RE.sub("", description, count=1) or description
