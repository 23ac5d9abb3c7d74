"""Partition: a trace's versions -> segments, one per record the trace can support.

- one strategy segment per non-baseline milestone (ladder claim); it builds on the previous kept milestone,
- one anti-strategy segment per distinct failed lever per trace, with every occurrence listed,
- one curated-pitfall segment per distinct pitfall recorded in memory,
- reference kernels for the final kernel and each mega milestone.

Ids are content-derived: `<vendor>.<product|arch>.<dsl>.<operator_slug>.<technique>-<marker><hash6>`,
the hash over (trace label, segment kind, anchor, technique). The same trace gives the same ids on
every run, whatever a live store holds. Where two segments of a trace share an id or a segment id (six
hex digits collide in traces of thousands of levers), the later one gets a suffix of non-hex letters
from a digest of its own content (`unique_ids`), so earlier ids never change as a trace grows. Episode keys are `<arch>|<dsl>|<operator>|<technique>|operator`,
unique within the trace: a later segment of a technique an earlier one holds gets `<technique>#2`, `#3`. Technique text is scrubbed before it becomes an id, so no
denylisted term or path can reach an id, an episode key or a file name.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optrace.errors import InputError
from optrace.facts import causal_sentences, pitfall_about, precheck, stated_cause
from optrace.ingest.dsl import store_dsl
from optrace.jsonio import read_json, read_jsonl, write_jsonl, write_text_atomic
from optrace.mine.evidence import lever_parts
from optrace.mine.ladder import ANCHORS, CLAIMS, Step, Thresholds, run_ladder
from optrace.printable import escape_controls
from optrace.rows import (
    REPEAT_MARK,
    Experiment,
    Measured,
    Occurrence,
    PitfallRow,
    RecordType,
    SegmentRow,
    SplitBy,
    VersionRow,
    read_versions,
)
from optrace.run.sheet import NEUTRAL_ALPHABET
from optrace.scrub.leak_patterns import add_denylist_argument
from optrace.wording import sentences

FLOOR_HOLDERS = ANCHORS + ("floor",)  # the outcomes that set the floor a later claim is measured against

MAX_TECHNIQUE_CHARS = 48
MIN_LEVER_CHARS = 12
MARKERS = {"strategy": "s", "anti-strategy": "a", "pitfall": "p", "reference-kernel": "r"}
NOT_A_LEVER_OUTCOMES = {"invalid_handoff", "interrupted", "blocked"}  # process failures, not levers
_BOILERPLATE = [
    r"\d+(?:\.\d+)?\s*(?:us|µs|μs)?\s*(?:->|→|=>)\s*\d+(?:\.\d+)?\s*(?:us|µs|μs)\b",  # 21.3->21.2us
    r"^\s*[vV]\d+\s*:",
    r"^\s*episode \d+:\s*promote verified long-horizon candidate",
    r"\bcommitted\b",
    r"\(?[+-]?\d+(?:\.\d+)?%\s*(?:geomean improvement)?\)?",
    r"\breverted\b",
    r"\bdead-end recorded\b",
    r"[-=]>|→",
    r"\d+(?:\.\d+)?\s*(?:us|µs|μs)\b",
    r"\bNO_CHANGE\b|\bwithin noise\b|\bflat-within-noise\b",
    r"\bno improvement over\b",
    r"\b\d+(?:st|nd|rd|th) consecutive dead-end\b",
]
_BOILERPLATE_RE = re.compile("|".join(_BOILERPLATE), re.I)


@dataclass(frozen=True)
class Context:
    label: str
    vendor: str
    arch: str
    product: str
    operator_slug: str
    workload_family: str


# Words that are measurements, not names: numbers, numbers with a unit, tile sizes (`32x32`), units.
_NUMERIC_WORD = re.compile(r"\d+(?:\.\d+)?(?:x\d+)*(?:us|ms|s|x|k|kb|mb|gb|gflops|tflops|pct)?|\d+(?:st|nd|rd|th)")
_UNIT_WORDS = {"gflops", "tflops", "gbps", "gb", "kb", "mb", "byte", "bytes", "us", "ms", "pct", "percent", "s", "x"}
MAX_TECHNIQUE_WORDS = 6  # a tag, not a sentence: the store's technique tags are 1-4 words


def slug_words(text: str) -> list[str]:
    """The name-like words of a text: version ids, hex runs, numbers and units dropped."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return [
        w
        for w in words
        if not re.fullmatch(r"v\d+|[0-9a-f]{7,40}", w) and not _NUMERIC_WORD.fullmatch(w) and w not in _UNIT_WORDS
    ]


def text_key(text: str) -> str:
    """The normalised full text a segment's hash is taken over: lower-case words (numbers kept, version
    ids and hex runs dropped), joined by '-', within MAX_TECHNIQUE_CHARS at a word boundary. Hashing the
    full text, not the short tag, keeps two levers that share a tag apart."""
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if not re.fullmatch(r"v\d+|[0-9a-f]{7,40}", w)]
    out = ""
    for w in words:
        if len(out) + len(w) + (1 if out else 0) > MAX_TECHNIQUE_CHARS:
            break
        out = f"{out}-{w}" if out else w
    return out or "unnamed"


def slugify(text: str) -> str:
    """Lower-case name words joined by '-', whole words only, within the technique budget."""
    out = ""
    for w in slug_words(text):
        if len(out) + len(w) + (1 if out else 0) > MAX_TECHNIQUE_CHARS:
            break
        out = f"{out}-{w}" if out else w
    return out or "unnamed"


_TAG_STOP = {
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "on",
    "at",
    "as",
    "and",
    "for",
    "by",
    "is",
    "are",
    "each",
    "its",
    "it",
    "this",
    "that",
    "from",
    "into",
    "with",
}


def technique_slug(text: str) -> str:
    """A short technique name: the first clause of the text (clauses end at a bracket, colon, semicolon,
    dash or comma) that holds at least two name words, at most MAX_TECHNIQUE_WORDS of them, never cut
    inside a word and never holding a number or a version's episode prefix."""
    text = re.sub(r"^\s*episode \d+:\s*", "", text, flags=re.I)
    clauses = [
        c
        for c in re.split(r"\s[(\[]|[()\[\]:;—]|\s-\s|,\s|\s(?:so|because|since|which|while|when|where)\s", text)
        if c.strip()
    ]
    named = [[w for w in slug_words(c) if w not in _TAG_STOP] for c in clauses]
    # a one-word clause names the technique unless a number was dropped from it (`BLOCK=8192` is no name)
    whole = [
        len(w) >= 2 or (len(w) == 1 and len(re.findall(r"[a-z0-9]+", c.lower())) == 1) for w, c in zip(named, clauses)
    ]
    words = (
        next((w for w, ok in zip(named, whole) if ok), None) or next((w for w in named if w), []) or slug_words(text)
    )
    return slugify(" ".join(words[:MAX_TECHNIQUE_WORDS]))


def technique_text(row: VersionRow) -> str:
    """What a version changed, in the run's words, without grammar boilerplate."""
    for candidate in (row["action_description"], _strip(row["subject"] or ""), row["action_category"]):
        if candidate and len(candidate.strip()) >= MIN_LEVER_CHARS:
            return candidate.strip()
    return (row["action_description"] or row["action_category"] or row["subject"] or "unnamed").strip()


# a sentence of a step record's description that says what was tried, the lever after its verb
TRIED = re.compile(r"^(?:(?:we|i)\s+)?(?:tried|attempted)\s+(?:to\s+)?", re.I)


def lever_phrase(text: str) -> str:
    """The lever a failed version's description names. A description of several sentences that says
    what was tried in one of them names the lever there (`16-byte loads of x are aligned only when ...
    Tried tl.multiple_of(x_ptr, 16) hints on the x loads.` -> `tl.multiple_of(x_ptr, 16) hints on the x
    loads`): the other sentences are its cause and context, which the packet still carries (the
    description is its `change` evidence). Any other text is the lever as written."""
    parts = sentences(text)
    tried = [s for s in parts if TRIED.match(s)] if len(parts) > 1 else []
    if not tried:
        return text
    phrase = TRIED.sub("", tried[0]).rstrip(".").strip()
    return phrase if len(phrase) >= MIN_LEVER_CHARS else text


def _strip(subject: str) -> str:
    if re.match(r"^\s*[vV]\d+\s*:[^|]*\|", subject):  # `V7: 15971.7 GFLOPS | 2D blocktiling (bottleneck: ...)`
        subject = subject.split("|", 1)[1]
        subject = re.sub(r"\(\s*bottleneck:.*$", "", subject, flags=re.I)
    text = _BOILERPLATE_RE.sub(" ", subject)
    return re.sub(r"[\s()|,;—-]+$", "", re.sub(r"^[\s()|,;:—-]+", "", re.sub(r"\s+", " ", text)))


def revert_reason(subject: str | None) -> str | None:
    """`V9: revert V8 (the second smem stage needs ...)` -> the bracketed reason."""
    m = re.match(r"^\s*[vV]\d+:\s*revert\s+[vV]\d+\s*\((.+)\)\s*$", subject or "", re.S)
    return m.group(1).strip() if m else None


def lever_key(text: str) -> str:
    """Two spellings of one lever are one lever: case, punctuation and spacing do not count."""
    return " ".join(re.findall(r"[a-z0-9.]+", text.lower()))


def seg_identity(ctx: Context, kind: str, dsl: str, technique: str, anchor: str, text: str) -> tuple[str, str]:
    """(id, episode_key), both from content only: the hash is over the segment's full text (`text_key`)."""
    digest = hashlib.sha256(f"{ctx.label}\0{kind}\0{anchor}\0{text_key(text)}".encode()).hexdigest()[:6]
    where = ctx.product if ctx.product and ctx.product != "any" else ctx.arch
    record_id = f"{ctx.vendor}.{where}.{dsl}.{ctx.operator_slug}.{technique}-{MARKERS[kind]}{digest}".lower()
    episode_key = f"{ctx.arch}|{dsl}|{ctx.operator_slug}|{technique.replace('-', '_')}|operator"
    return record_id, episode_key


def _common(
    ctx: Context,
    row: VersionRow,
    record_type: RecordType,
    seg_kind: str,
    seg_id: str,
    technique: str,
    id_kind: str,
    anchor: str,
    text: str,
) -> SegmentRow:
    dsl = store_dsl(row["dsl"])  # the scope's vocabulary (a Helion kernel's records are filed under triton)
    record_id, episode_key = seg_identity(ctx, id_kind, dsl, technique, anchor, text)
    return {
        "seg_id": seg_id,
        "record_type": record_type,
        "seg_kind": seg_kind,
        "id": record_id,
        "episode_key": episode_key,
        "technique": technique,
        "version": row["version"],
        "n": row["n"],
        "sha": row["sha"],
        "kernel_blob": row["kernel_blob"],
        "scope": {
            "vendor": ctx.vendor,
            "arch": ctx.arch,
            "product": ctx.product,
            "dsl": dsl,
            "operator_family": ctx.operator_slug,
        },
        "workload_family": ctx.workload_family,
    }


def gain_pct(parent_us: float, new_us: float) -> float:
    """The one rounding rule of a claimed gain: percent lower latency than the parent, 2 decimals."""
    return round((parent_us - new_us) / parent_us * 100.0, 2)


def diff_base(rows: list[VersionRow], version: str) -> VersionRow | None:
    """The kernel a step edited: the latest version before it that the run kept (or its baseline) with a
    kernel.py. Reverted attempts and chores in between are not part of the step's change, and neither is
    a kept change the floor never measured (its diff is its own)."""
    base = None
    for row in sorted(rows, key=lambda r: r["n"]):
        if row["version"] == version:
            return base
        if row["verdict"] in ("kept", "baseline") and row["kernel_blob"]:
            base = row
    return base


def strategy_segments(
    ctx: Context, rows: dict[str, VersionRow], steps: list[Step], scrub: Callable[[str], str]
) -> list[SegmentRow]:
    """A claim is measured against the floor it beat: the version holding the floor when it ran (a
    baseline, re-baseline, claim or a version that took the floor without a claim). Its gain,
    `builds_on` and parent geomean refer to that version; its diff is against the kernel it edited
    (diff_base), which is the floor's kernel unless a kept, unmeasured change came in between."""
    out, holder = [], None
    ordered = list(rows.values())
    for step in steps:
        if step.outcome in CLAIMS and holder is not None:
            row = rows[step.version]
            text = scrub(technique_text(row))
            seg = _common(
                ctx, row, "strategy", step.outcome, "", technique_slug(text), "strategy", row["version"], text
            )
            seg["seg_id"] = f"strategy-{seg['id'][-6:]}"  # file names reach the agent: no version id in them
            base = rows[holder.version]
            # the floor holder and the claim are measured versions (the ladder rejects the others)
            assert base["geomean_us"] is not None and row["geomean_us"] is not None
            edited = diff_base(ordered, row["version"]) or base
            seg["strategy"] = {
                "improve_pct": gain_pct(base["geomean_us"], row["geomean_us"]),
                "geomean_us": row["geomean_us"],
                "floor_before_us": base["geomean_us"],
                "final": step.final,
                "review": step.review,
                "builds_on": {
                    "version": base["version"],
                    "sha": base["sha"],
                    "kernel_blob": base["kernel_blob"],
                    "geomean_us": base["geomean_us"],
                    "is_baseline": holder.outcome == "baseline",
                },
                "diff_base": {"version": edited["version"], "sha": edited["sha"], "kernel_blob": edited["kernel_blob"]},
            }
            out.append(seg)
        if step.outcome in FLOOR_HOLDERS:
            holder = step
    return out


FAILED_DECISIONS = {"revert", "pivot"}  # an experiment the run gave up on


def experiment_cause(exp: Experiment) -> str | None:
    """What an experiment found, in its own words (evidence, then result)."""
    parts = [p for p in (exp.get("evidence"), exp.get("result")) if p]
    return " ".join(p.rstrip(".") + "." for p in parts) or None


def failed_levers(row: VersionRow, by_version: dict[str, VersionRow]) -> list[tuple[str, SplitBy, str | None]]:
    """(lever text, split_by, its own stated cause) for one version.

    A reverted version: its listed items, else one prose lever; a kept version undone by a later
    `revert V<N> (reason)` is one lever whose cause is that reason (the revert commit itself is no
    lever); every experiment the run reverted or pivoted away from is a lever of its own."""
    out: list[tuple[str, SplitBy, str | None]] = []
    for exp in row.get("experiments") or []:
        text = exp.get("change") or exp.get("name") or ""
        if exp.get("decision") in FAILED_DECISIONS and len(text) >= MIN_LEVER_CHARS:
            out.append((text, "experiment", experiment_cause(exp)))
    if row["verdict"] != "reverted" or row["infrastructure"] or row["outcome"] in NOT_A_LEVER_OUTCOMES:
        return out
    if row.get("reverts"):
        return out
    if row["deadend_items"]:
        return out + [(item, "mechanical", None) for item in row["deadend_items"] if len(item) >= MIN_LEVER_CHARS]
    if out:  # the experiments are this version's levers; its prose belongs to them
        return out
    undone_by = by_version.get(row.get("reverted_by") or "")
    if undone_by is not None:
        text = lever_phrase(technique_text(row))
        cause = revert_reason(undone_by["subject"]) or undone_by.get("body") or None
        return [(text, "revert-pair", cause)] if len(text) >= MIN_LEVER_CHARS else []
    text = lever_phrase(technique_text(row))
    return [(text, "agent", None)] if len(text) >= MIN_LEVER_CHARS else []


def cause_sources(row: VersionRow, lever: str, cause: str | None) -> list[tuple[str, str | None, None]]:
    """What may state why a lever failed, as the packet will name it (kind, text): its own cause (a
    revert's reason, an experiment's evidence), the lever and the reason beside it, the version's step
    record, gate verdict, commit body and evidence summary, and the explanation of a pitfall it recorded
    about this lever; the drafter reads the same kinds (optrace.facts.stated_cause)."""
    out: list[tuple[str, str | None, None]] = [("cause", cause, None)]
    out += [(kind, text, None) for kind, text in lever_parts(lever)]
    out += [
        ("change", row.get("action_description"), None),
        ("gate-verdict", row["quality_gate"]["failure_reason"], None),
        ("body", row.get("body"), None),
        ("evidence-summary", row.get("evidence_summary"), None),
    ]
    out += [("pitfall", s, None) for p in row["pitfalls"] for s in pitfall_about(p["text"], lever)]
    return out


def tried_against(row: VersionRow, floor: float | None, split_by: str) -> Measured | None:
    """The attempt's own measurement against the floor it was tried against; none for an experiment
    (the version's number is the episode's, not the experiment's) or without both numbers."""
    geo = row["geomean_us"]
    if split_by == "experiment" or not geo or not floor:
        return None
    return {"floor_before_us": floor, "improve_pct": gain_pct(floor, geo)}


SEG_KINDS = {
    "mechanical": "deadend-item",
    "agent": "deadend-prose",
    "revert-pair": "deadend-prose",
    "experiment": "deadend-experiment",
}


def anti_segments(
    ctx: Context, rows: list[VersionRow], scrub: Callable[[str], str], steps: Sequence[Step] = ()
) -> list[SegmentRow]:
    levers: dict[str, SegmentRow] = {}
    by_version = {r["version"]: r for r in rows}
    floors = {s.version: s.floor_before_us for s in steps}
    for row in rows:
        for lever, split_by, cause in failed_levers(row, by_version):
            clean = scrub(lever)
            key = lever_key(clean)
            occurrence: Occurrence = {"version": row["version"], "sha": row["sha"]}
            if key in levers:
                levers[key]["lever"]["occurrences"].append(occurrence)
                continue
            technique = technique_slug(clean)
            own = SEG_KINDS[split_by] == "deadend-prose"  # the version's prose is this lever's alone
            sources = [(kind, scrub(t) if t else None, tag) for kind, t, tag in cause_sources(row, lever, cause)]
            verdict, reason = precheck(sources, clean, own)
            found = [sentence for sentence, _ in stated_cause(sources, clean, own)]
            # what its own finding (an experiment's, a revert's) says besides the cause: what was seen
            seen = [s for s in sentences(scrub(cause) if cause else "") if s not in found]
            seg = _common(ctx, row, "anti-strategy", SEG_KINDS[split_by], "", technique, "anti-strategy", key, clean)
            seg["seg_id"] = f"anti-{seg['id'][-6:]}"
            seg["lever"] = {
                "text": clean,
                "split_by": split_by,
                "fix": None,
                "cause": " ".join(found) or None,  # the cause its trace states, wherever (precheck's reading)
                "observed": " ".join(seen) or None,
                "lesson": None,
                "occurrences": [occurrence],
                "fact_precheck": {"verdict": verdict, "reason": reason},
                "measured": tried_against(row, floors.get(row["version"]), split_by),
            }
            levers[key] = seg
    return list(levers.values())


def pitfall_parts(pit: PitfallRow) -> tuple[str, str | None, str | None]:
    """(name, cause, lesson) of a recorded pitfall: what went wrong, its stated cause and its lesson.
    Where ingest keeps the cause apart, the name is the text before it; else the leading sentences that
    state no cause are the name (an error message: "misaligned address. CUDA error: ..."), the sentences
    that do are its cause, and what follows them its lesson."""
    stated: Mapping[str, Any] = pit  # the stated cause and lesson, where ingest keeps them apart
    text, cause, lesson = pit["text"], stated.get("cause"), stated.get("lesson")
    if cause and (at := text.find(cause)) > 0:
        return text[:at].rstrip(" .;:"), cause, lesson
    parts = sentences(text)
    if cause or "cause" in stated or len(parts) < 2:  # ingest read its cause field: none is none
        return text, cause, lesson
    causal = set(causal_sentences(" ".join(parts[1:]), parts[0]))
    first = next((i for i, p in enumerate(parts) if i and p in causal), None)
    if first is None:  # no stated cause: the whole text is what went wrong
        return text, None, lesson
    last = max(i for i, p in enumerate(parts) if p in causal)
    rest = " ".join(parts[last + 1 :]) or None
    return " ".join(parts[:first]), " ".join(parts[first : last + 1]), lesson or rest


def pitfall_segments(
    ctx: Context, rows: list[VersionRow], taken: set[str], scrub: Callable[[str], str]
) -> list[SegmentRow]:
    """One anti-strategy segment per distinct recorded pitfall: its name is what was attempted, its
    explanation its cause, its fix and lesson its own (the version's verdict and numbers are not its)."""
    out: dict[str, SegmentRow] = {}
    for row in rows:
        for pit in row["pitfalls"]:
            full = scrub(pit["text"])
            key = lever_key(full)
            if len(full) < MIN_LEVER_CHARS or key in taken:
                continue
            occurrence: Occurrence = {"version": row["version"], "sha": row["sha"]}
            if key in out:
                out[key]["lever"]["occurrences"].append(occurrence)
                continue
            name, cause, lesson = (scrub(t) if t else None for t in pitfall_parts(pit))
            assert name is not None  # a pitfall has a text
            fix = scrub(pit["fix"]) if pit["fix"] else None
            sources = [("cause", cause, None), ("fix", fix, None), ("lesson", lesson, None)]
            verdict, reason = precheck(sources, name, own_prose=True)
            seg = _common(ctx, row, "anti-strategy", "curated-pitfall", "", technique_slug(full), "pitfall", key, full)
            seg["seg_id"] = f"pitfall-{seg['id'][-6:]}"
            seg["lever"] = {
                "text": name,
                "split_by": "curated",
                "fix": fix,
                "cause": cause,
                "observed": None,
                "lesson": lesson,
                "occurrences": [occurrence],
                "fact_precheck": {"verdict": verdict, "reason": reason},
                "measured": None,
            }
            out[key] = seg
    return list(out.values())


def reference_segments(
    ctx: Context, rows: dict[str, VersionRow], steps: list[Step], scrub: Callable[[str], str]
) -> list[SegmentRow]:
    out: list[SegmentRow] = []
    seen: set[str] = set()
    final = next((s for s in steps if s.final), None)
    picks: list[tuple[Step, str, str | None, str]] = [(final, "final-kernel", "refk-final", "final")] if final else []
    picks += [(s, "mega-snapshot", None, "snapshot") for s in steps if s.outcome == "mega"]
    for step, kind, seg_id, prefix in picks:
        row = rows[step.version]
        # the kernel's own technique makes its episode key distinct from other snapshots and traces
        text = f"{prefix} {scrub(technique_text(row))}"
        technique = slugify(f"{prefix} {technique_slug(scrub(technique_text(row)))}")
        if not row["kernel_blob"] or row["kernel_blob"] in seen:
            continue  # no kernel.py, or the same kernel as the final one
        seen.add(row["kernel_blob"])
        seg = _common(ctx, row, "reference-kernel", kind, "", technique, "reference-kernel", row["version"], text)
        seg["seg_id"] = seg_id or f"refk-{seg['id'][-6:]}"
        out.append(seg)
    return out


def distinct_episodes(segments: list[SegmentRow]) -> None:
    """Give every segment of the trace its own episode_key, in place: the 2nd, 3rd, ... segment (in
    version order, any kind) of a key an earlier one holds gets `<technique>#2`, `#3`, ... A lever kept
    at one version and failed at a later one (or kept twice) is two records of one run, not a confirm:
    admitting the repeat as one would count a single run twice in `verified_effective`. The numbering
    depends on the trace alone, so the same trace gives the same keys whatever the store holds."""
    held: Counter[str] = Counter()
    for seg in sorted(segments, key=lambda s: s["n"]):  # stable: one version's segments keep build order
        key = seg["episode_key"]
        held[key] += 1
        if held[key] > 1:
            arch, dsl, operator, technique, level = key.split("|")
            seg["episode_key"] = "|".join((arch, dsl, operator, f"{technique}{REPEAT_MARK}{held[key]}", level))


def build_segments(
    rows: list[VersionRow], meta: dict, t: Thresholds, scrub: Callable[[str], str]
) -> tuple[list[SegmentRow], list[Step]]:
    tgt = meta["target"]
    # the operator slug comes from trace-controlled names: it goes through the scrubber like any text
    operator = slugify(scrub(meta["operator_slug"].replace("-", " ")))
    ctx = Context(meta["source_label"], tgt["vendor"], tgt["arch"], tgt["product"], operator, meta["workload_family"])
    steps = run_ladder(rows, t)
    by_version = {r["version"]: r for r in rows}
    antis = anti_segments(ctx, rows, scrub, steps)
    taken = {lever_key(s["lever"]["text"]) for s in antis}
    segments = (
        strategy_segments(ctx, by_version, steps, scrub)
        + antis
        + pitfall_segments(ctx, rows, taken, scrub)
        + reference_segments(ctx, by_version, steps, scrub)
    )
    distinct_episodes(segments)
    unique_ids(segments, meta["source_label"])
    return segments, steps


SUFFIX_LENGTHS = (4, 8, 16, 32)  # letters of 4 bits each


def content_digest(seg: SegmentRow) -> bytes:
    """A digest of what a segment says, its ids aside."""
    body = {k: v for k, v in seg.items() if k not in ("id", "seg_id")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).digest()


def unique_ids(segments: list[SegmentRow], label: str) -> None:
    """Make every record id and segment id of the trace unique, in place and deterministically: a
    segment whose id or segment id an earlier one holds gets `<letters>` appended to both, spelled in
    non-hex letters (a seven-digit hex run would read as a commit hash in a file name the agent sees)
    from its content digest. Two segments that say the same thing are an error, not a collision."""
    holders: dict[str, SegmentRow] = {}
    for seg in segments:
        if seg["id"] not in holders and seg["seg_id"] not in holders:
            holders[seg["id"]] = holders[seg["seg_id"]] = seg
            continue
        other = holders.get(seg["id"]) or holders[seg["seg_id"]]
        digest = content_digest(seg)
        if digest == content_digest(other):
            raise InputError(
                f"partition of {label}",
                f"two segments say the same thing ({seg['record_type']} at {other['version']} and {seg['version']}); "
                "one of them should have been merged: please report this with the trace",
            )
        for length in SUFFIX_LENGTHS:
            suffix = "".join(NEUTRAL_ALPHABET[b % 16] for b in digest[:length])
            if seg["id"] + suffix not in holders and seg["seg_id"] + suffix not in holders:
                seg["id"], seg["seg_id"] = seg["id"] + suffix, seg["seg_id"] + suffix
                holders[seg["id"]] = holders[seg["seg_id"]] = seg
                break
        else:  # 128 bits of distinct digests agreeing: not a collision anyone will meet
            raise InputError(f"partition of {label}", f"segment ids {seg['id']} and {other['id']} cannot be told apart")


def render_md(segments: list[SegmentRow], steps: list[Step], profiles: list[dict], meta: dict) -> str:
    kinds = Counter((s["record_type"], s["seg_kind"]) for s in segments)
    usable = {p["version"] for p in profiles if p["usable"] and p["version"]}
    reports = {p["version"] for p in profiles if p["usable"] and p["report"]}
    out = [f"# Partition: {meta['source_label']}", "", "## Segments", ""]
    out += [f"- {t} / {k}: {c}" for (t, k), c in sorted(kinds.items())]
    out += [
        "",
        "Id pattern: `<vendor>.<product|arch>.<dsl>.<operator_slug>.<technique>-<marker><hash6>[<letters>]` "
        "(markers: s strategy, a anti-strategy, p pitfall, r reference kernel); content-derived; letters "
        "only where six hex digits collide within the trace.",
        "",
        "## Strategies",
        "",
        "| version | kind | geomean µs | gain | builds on | dsl | id |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in segments:
        if s["record_type"] == "strategy":
            st = s["strategy"]
            base = st["builds_on"]["version"] if st["builds_on"] else "—"
            final = " (final)" if st["final"] else ""
            out.append(
                f"| {s['version']} | {s['seg_kind']}{final} | {st['geomean_us']:.2f} | {st['improve_pct']:+.2f}% | {base} | {s['scope']['dsl']} | `{s['id']}` |"
            )
    out += ["", "## Failed levers and pitfalls", "", "| lever | kind | occurrences | precheck |", "|---|---|---|---|"]
    for s in segments:
        if s["record_type"] == "anti-strategy":
            lv = s["lever"]
            occ = ", ".join(o["version"] for o in lv["occurrences"])
            pc = lv["fact_precheck"]
            out.append(
                f"| {textwrap.shorten(lv['text'], 80, placeholder=' …', break_on_hyphens=False).replace('|', '/')} | {s['seg_kind']} | {occ} | {pc['verdict']}: {pc['reason']} |"
            )
    flagged = sum(
        1 for s in segments if s["record_type"] == "anti-strategy" and s["lever"]["fact_precheck"]["verdict"] == "flag"
    )
    reviews = [
        f"- {s['version']}: {s['strategy']['review']}"
        for s in segments
        if s["record_type"] == "strategy" and s["strategy"]["review"]
    ]
    out += ["", "## Claims flagged for review", ""] + (reviews or ["- none"])
    out += [
        "",
        "Re-baselines (the floor moved, nothing claimed): "
        + (", ".join(f"{st.version} ({st.reason})" for st in steps if st.outcome == "rebaseline") or "none"),
    ]
    out += ["", f"Flagged (kept, for the distiller to judge): {flagged}", "", "## Reference kernels", ""]
    out += [
        f"- {s['seg_id']}: {s['version']} (`{s['id']}`)" for s in segments if s["record_type"] == "reference-kernel"
    ] or ["- none"]
    out += ["", "## Evidence", ""]
    for s in segments:
        v = s["version"]
        ev = "usable capture + REPORT.md" if v in reports else "usable capture" if v in usable else "no usable capture"
        out.append(f"- {s['seg_id']} ({v}): {ev}")
    rejected = Counter(st.reason.split(" (")[0] for st in steps if st.outcome == "rejected")
    out += ["", "## Rejected versions", ""] + ([f"- {k}: {c}" for k, c in sorted(rejected.items())] or ["- none"])
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    from optrace.scrub.anonymize import Scrubber

    ap = argparse.ArgumentParser(prog="optrace partition", description=__doc__)
    ap.add_argument(
        "--work-dir", required=True, type=Path, help="ingest outputs of one trace (segments.jsonl is written here)"
    )
    ap.add_argument("--report", required=True, type=Path, help="partition.md to write")
    Thresholds.add_arguments(ap)
    add_denylist_argument(ap)
    args = ap.parse_args(argv)
    rows = read_versions(args.work_dir / "versions.jsonl")
    meta = read_json(args.work_dir / "meta.json")
    profiles = read_jsonl(args.work_dir / "profiles.jsonl")
    scrubber = Scrubber.from_env(args.denylist_env)
    segments, steps = build_segments(rows, meta, Thresholds.from_args(args), scrubber.text)
    write_jsonl(args.work_dir / "segments.jsonl", segments)
    report = scrubber.private(render_md(segments, steps, profiles, meta))  # a report: no term, no raw control
    write_text_atomic(args.report, escape_controls(report, keep_layout=True))
    kinds = Counter(s["record_type"] for s in segments)
    print(f"partition: {meta['slug']}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0
