"""`memory/v<N>.json` step records, read tolerantly: real files drift from their schema.

Only `^v\\d+\\.json$` names are versions (`v71_512.json`, `live.json`, `long_horizon_e0003.json` are
variants). A geomean that is 0, negative, NaN or not a number is no number, and numbers copied from the
incumbent (`carried_from_version`) or from an incomplete measurement are never this version's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from optrace.ingest.trace_files import TraceFiles
from optrace.jsonio import parse_untrusted

VERSION_FILE_RE = re.compile(r"^v(\d{1,9})\.json$")  # grammar.NUM: at most 9 digits
VERSION_REF_RE = re.compile(r"^\s*[vV]?(\d{1,9})\s*$")


@dataclass(frozen=True)
class Pitfall:
    text: str  # every stated part, joined (what happened, why, the lesson)
    fix: str | None
    cause: str | None = None  # why it happened, as the record states it (root_cause, explanation, why)
    lesson: str | None = None


@dataclass(frozen=True)
class StepRecord:
    n: int
    geomean_us: float | None  # genuine number of this version, or None
    number_note: str | None  # why there is no genuine number (None when there is one)
    by_shape_us: dict[str, float]
    correctness: dict
    quality_gate: dict
    carried_from: str | None
    action_category: str | None
    action_description: str | None
    pitfalls: tuple[Pitfall, ...] = field(default=())
    open_directions: tuple[dict, ...] = field(default=())
    # the run's own causes: why it tried what it tried, what the profiler said, what each experiment found
    speedup_vs_ref: float | None = None  # the reference re-measured in the same run (None: not measured)
    evidence_summary: str | None = None
    bottleneck_type: str | None = None
    expected_impact: str | None = None
    experiments: tuple[dict, ...] = field(default=())


@dataclass(frozen=True)
class MemoryScan:
    records: dict[int, StepRecord]
    variants: list[dict]  # {file, why}
    warnings: list[str] = field(default_factory=list)


def _canonical_first(name: str) -> tuple:
    """Order of the spellings of one version: `v3.json` first, then fewer leading zeros (v03 before v003)."""
    return (len(name), name)


def scan_memory(files: TraceFiles) -> MemoryScan:
    """Rule for several spellings of one version (v3.json, v03.json): the canonical `v<N>.json` is the
    version's record whatever the listing order; without it, the spelling with fewest leading zeros. The
    others are variants, and each is named in a warning."""
    records: dict[int, StepRecord] = {}
    variants: list[dict] = []
    warnings: list[str] = []
    spellings: dict[int, list[str]] = {}
    for entry in files.list_dir("memory"):
        if entry.is_dir or not entry.name.endswith(".json"):
            continue
        m = VERSION_FILE_RE.match(entry.name)
        if not m:
            variants.append({"file": f"memory/{entry.name}", "why": _variant_reason(entry.name)})
            continue
        spellings.setdefault(int(m.group(1)), []).append(entry.name)
    for n, names in sorted(spellings.items()):
        names.sort(key=_canonical_first)
        for other in names[1:]:
            variants.append({"file": f"memory/{other}", "why": f"duplicate of v{n} (memory/{names[0]} is used)"})
            warnings.append(
                f"memory/{other}: another spelling of v{n}; memory/{names[0]} is used, this file is ignored"
            )
        rel = f"memory/{names[0]}"
        data, problem = _load(files, rel)
        if not isinstance(data, dict):
            variants.append({"file": rel, "why": "unparseable" if problem else "not a JSON object"})
            warnings.append(f"{rel}: {problem or 'not a JSON object'}; v{n} has no step record")
            continue
        records[n] = parse_record(n, data)
    variants.sort(key=lambda v: v["file"])
    return MemoryScan(records, variants, warnings)


def _variant_reason(name: str) -> str:
    if re.match(r"^v\d+[_-].+\.json$", name):
        return "scratch variant or re-measurement"
    if name.startswith("long_horizon_e"):
        return "long-horizon episode evidence"
    return "not a version name"


def _load(files: TraceFiles, rel: str) -> tuple[object, str | None]:
    raw = files.read_bytes(rel)
    if raw is None:
        return None, "unreadable (see the skipped-file warnings)"
    return parse_untrusted(raw)


def as_positive_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        x = float(value)
    except (ValueError, OverflowError):  # "abc", or an integer beyond any float
        return None
    return x if math.isfinite(x) and x > 0 else None


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    """A text field's text: a string, a number, or a list of them joined by "; "; an object (or a
    nested list) is no text, and its Python repr must not become one."""
    if isinstance(value, list):
        parts = [_str(v) for v in value if not isinstance(v, (list, dict))]
        return "; ".join(p for p in parts if p) or None
    if value is None or isinstance(value, dict):
        return None
    s = str(value).strip()
    return s or None


def version_ref(value: object) -> str | None:
    """`"v3"`, `"V3"`, `3` -> `"v3"`; anything else -> None."""
    if value is None or isinstance(value, bool):
        return None
    m = VERSION_REF_RE.match(str(value))
    return f"v{int(m.group(1))}" if m else None


def parse_record(n: int, data: dict) -> StepRecord:
    perf = _dict(data.get("performance"))
    raw_geo = perf.get("latency_us_geomean", perf.get("latency_us"))
    geo = as_positive_number(raw_geo)
    carried = version_ref(perf.get("carried_from_version"))
    note = None
    if raw_geo is None:
        note = "no geomean recorded"
    elif geo is None:
        note = f"geomean {raw_geo!r} is not a positive number"
    if carried and carried != f"v{n}":
        note, geo = f"numbers carried forward from {carried}", None
    if perf.get("measurement_status") == "not_evaluated_or_incomplete":
        note, geo = "measurement incomplete", None
    by_shape = {}
    if geo is not None:
        for key, val in _dict(perf.get("latency_us_by_shape")).items():
            if (x := as_positive_number(val)) is not None:
                by_shape[str(key)] = x
    corr = _dict(data.get("correctness"))
    gate = _dict(data.get("quality_gate"))
    opt = data.get("optimization")
    if isinstance(opt, dict):
        category, description = _str(opt.get("action_category")), _str(opt.get("action_description"))
    else:
        category, description = None, _str(opt)
    return StepRecord(
        n=n,
        geomean_us=geo,
        number_note=note,
        by_shape_us=by_shape,
        correctness={
            "status": _str(corr.get("status")),
            "max_abs_err": _finite(corr.get("max_abs_err")),
            "max_rel_err": _finite(corr.get("max_rel_err")),
        },
        quality_gate={"result": _str(gate.get("result")), "failure_reason": _str(gate.get("failure_reason"))},
        carried_from=carried if carried != f"v{n}" else None,
        action_category=category,
        action_description=description,
        pitfalls=tuple(normalise_pitfalls(data.get("pitfalls_and_fixes"))),
        open_directions=tuple(_directions(data.get("open_directions"))),
        speedup_vs_ref=as_positive_number(perf.get("speedup_vs_ref_geomean")) if geo is not None else None,
        evidence_summary=_str(_dict(data.get("profile_evidence")).get("evidence_summary")),
        bottleneck_type=_str(_dict(data.get("profile_evidence")).get("bottleneck_type")),
        expected_impact=_str(opt.get("expected_impact")) if isinstance(opt, dict) else None,
        experiments=tuple(normalise_experiments(_dict(data.get("experience")).get("experiments"))),
    )


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return x if math.isfinite(x) else None


# Keys a pitfall's cause is written under, in the dialects real traces use
CAUSE_KEYS = ("root_cause", "explanation", "why", "cause")


def normalise_pitfalls(items: object) -> list[Pitfall]:
    """Both dialects (`{error_type, error_message, root_cause, fix_applied, lesson}` and
    `{pitfall, explanation|why, fix}`), bare strings and nulls: the text of every stated part, the fix,
    and the stated cause and lesson kept apart (None when the record states none)."""
    out = []
    for item in items if isinstance(items, list) else []:
        cause = lesson = None
        if isinstance(item, str):
            text, fix = item.strip(), None
        elif isinstance(item, dict):
            cause = next((c for k in CAUSE_KEYS if (c := _str(item.get(k)))), None)
            lesson = _str(item.get("lesson"))
            if "pitfall" in item or "explanation" in item or "why" in item:
                happened = [_str(item.get("pitfall"))]
                fix = _str(item.get("fix"))
            else:
                happened = [_str(item.get(k)) for k in ("error_type", "error_message")]
                fix = _str(item.get("fix_applied"))
            if cause and any(h and _same(cause, h) for h in happened):
                cause = None  # an explanation that repeats what happened states no cause
            text = ". ".join(_dedupe(p for p in [*happened, cause, lesson] if p))
        else:
            continue
        if text:
            out.append(Pitfall(text, fix, cause, lesson))
    return out


EXPERIMENT_FIELDS = ("name", "hypothesis", "change", "evidence", "result", "decision")
MAX_EXPERIMENT_CHARS = 2000  # the supervisor caps each text field at this length


def normalise_experiments(items: object) -> list[dict]:
    """`experience.experiments[]` as {name, hypothesis, change, evidence, result, decision} strings (or None);
    entries without a name or change are not levers and are dropped."""
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        exp = {k: (_str(item.get(k)) or None) for k in EXPERIMENT_FIELDS}
        exp = {k: v[:MAX_EXPERIMENT_CHARS] if isinstance(v, str) else v for k, v in exp.items()}
        if exp["name"] or exp["change"]:
            exp["decision"] = (exp["decision"] or "").lower() or None
            out.append(exp)
    return out


def _same(a: str, b: str) -> bool:
    return a.strip().rstrip(".").lower() == b.strip().rstrip(".").lower()


def _dedupe(parts: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for p in parts:
        p = p.rstrip(".")
        if not any(p.lower() in s.lower() for s in seen):
            seen.append(p)
    return seen


def _directions(items: object) -> list[dict]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and _str(item.get("direction")):
            out.append({"direction": _str(item.get("direction")), "rationale": _str(item.get("rationale"))})
        elif isinstance(item, str) and item.strip():
            out.append({"direction": item.strip(), "rationale": None})
    return out
