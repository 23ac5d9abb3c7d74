"""Partition: a trace's versions -> segments, one per record the trace can support.

- one strategy segment per non-baseline milestone (ladder claim); it builds on the previous kept milestone,
- one anti-strategy segment per distinct failed lever per trace, with every occurrence listed,
- one curated-pitfall segment per distinct pitfall recorded in memory,
- reference kernels for the final kernel and each mega milestone.

Ids are content-derived: `<vendor>.<product|arch>.<dsl>.<operator_slug>.<technique>-<marker><hash6>`,
the hash over (trace label, segment kind, anchor, technique). The same trace gives the same ids on
every run, whatever a live store holds. Technique text is scrubbed before it becomes an id, so no
denylisted term or path can reach an id, an episode key or a file name.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .facts import precheck
from .jsonio import read_json, read_jsonl, write_jsonl, write_text_atomic
from .ladder import CLAIMS, Step, Thresholds, run_ladder

MAX_TECHNIQUE_CHARS = 48
MIN_LEVER_CHARS = 12
MARKERS = {"strategy": "s", "anti-strategy": "a", "pitfall": "p", "reference-kernel": "r"}
NOT_A_LEVER_OUTCOMES = {"invalid_handoff", "interrupted", "blocked"}  # process failures, not levers
_BOILERPLATE = [
    r"\d+(?:\.\d+)?\s*(?:us|µs|μs)?\s*(?:->|→|=>)\s*\d+(?:\.\d+)?\s*(?:us|µs|μs)\b",  # 21.3->21.2us
    r"^\s*[vV]\d+\s*:", r"^\s*episode \d+:\s*promote verified long-horizon candidate", r"\bcommitted\b",
    r"\(?[+-]?\d+(?:\.\d+)?%\s*(?:geomean improvement)?\)?", r"\breverted\b", r"\bdead-end recorded\b",
    r"[-=]>|→", r"\d+(?:\.\d+)?\s*(?:us|µs|μs)\b", r"\bNO_CHANGE\b|\bwithin noise\b|\bflat-within-noise\b",
    r"\bno improvement over\b", r"\b\d+(?:st|nd|rd|th) consecutive dead-end\b",
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


def slugify(text: str) -> str:
    """Lower-case words joined by '-', cut at a word boundary; version ids and hex runs dropped."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    words = [w for w in words if not re.fullmatch(r"v\d+|[0-9a-f]{7,40}", w)]
    out = ""
    for w in words:
        if len(out) + len(w) + (1 if out else 0) > MAX_TECHNIQUE_CHARS:
            break
        out = f"{out}-{w}" if out else w
    return out or "unnamed"


def technique_text(row: dict) -> str:
    """What a version changed, in the run's words, without grammar boilerplate."""
    for candidate in (row["action_description"], _strip(row["subject"] or ""), row["action_category"]):
        if candidate and len(candidate.strip()) >= MIN_LEVER_CHARS:
            return candidate.strip()
    return (row["action_description"] or row["action_category"] or row["subject"] or "unnamed").strip()


def _strip(subject: str) -> str:
    text = _BOILERPLATE_RE.sub(" ", subject)
    return re.sub(r"[\s()|,;—-]+$", "", re.sub(r"^[\s()|,;:—-]+", "", re.sub(r"\s+", " ", text)))


def lever_key(text: str) -> str:
    """Two spellings of one lever are one lever: case, punctuation and spacing do not count."""
    return " ".join(re.findall(r"[a-z0-9.]+", text.lower()))


def seg_identity(ctx: Context, kind: str, dsl: str, technique: str, anchor: str) -> tuple[str, str]:
    """(id, episode_key), both from content only."""
    digest = hashlib.sha256(f"{ctx.label}\0{kind}\0{anchor}\0{technique}".encode()).hexdigest()[:6]
    where = ctx.product if ctx.product and ctx.product != "any" else ctx.arch
    record_id = f"{ctx.vendor}.{where}.{dsl}.{ctx.operator_slug}.{technique}-{MARKERS[kind]}{digest}".lower()
    episode_key = f"{ctx.arch}|{dsl}|{ctx.operator_slug}|{technique.replace('-', '_')}|operator"
    return record_id, episode_key


def _common(ctx: Context, row: dict, record_type: str, seg_kind: str, seg_id: str, technique: str,
            id_kind: str, anchor: str) -> dict:
    record_id, episode_key = seg_identity(ctx, id_kind, row["dsl"], technique, anchor)
    return {
        "seg_id": seg_id, "record_type": record_type, "seg_kind": seg_kind, "id": record_id,
        "episode_key": episode_key, "technique": technique,
        "version": row["version"], "n": row["n"], "sha": row["sha"], "kernel_blob": row["kernel_blob"],
        "scope": {"vendor": ctx.vendor, "arch": ctx.arch, "product": ctx.product, "dsl": row["dsl"],
                  "operator_family": ctx.operator_slug},
        "workload_family": ctx.workload_family,
    }


def strategy_segments(ctx: Context, rows: dict[str, dict], steps: list[Step], scrub) -> list[dict]:
    out, previous = [], None
    for step in steps:
        if step.outcome == "baseline":
            previous = step
            continue
        if step.outcome not in CLAIMS:
            continue
        row = rows[step.version]
        technique = slugify(scrub(technique_text(row)))
        seg = _common(ctx, row, "strategy", step.outcome, "", technique, "strategy", row["version"])
        seg["seg_id"] = f"strategy-{seg['id'][-6:]}"  # file names reach the agent: no version id in them
        base = rows[previous.version] if previous else None
        seg["strategy"] = {
            "improve_pct": step.improve_pct, "geomean_us": step.geomean_us, "floor_before_us": step.floor_before_us,
            "final": step.final,
            "builds_on": None if base is None else {
                "version": base["version"], "sha": base["sha"], "kernel_blob": base["kernel_blob"],
                "geomean_us": base["geomean_us"], "is_baseline": previous.outcome == "baseline"},
        }
        out.append(seg)
        previous = step
    return out


def failed_levers(row: dict) -> list[tuple[str, str]]:
    """(lever text, split_by) for one reverted version: listed items, else one prose lever."""
    if row["verdict"] != "reverted" or row["infrastructure"] or row["outcome"] in NOT_A_LEVER_OUTCOMES:
        return []
    if row["deadend_items"]:
        return [(item, "mechanical") for item in row["deadend_items"] if len(item) >= MIN_LEVER_CHARS]
    text = technique_text(row)
    return [(text, "agent")] if len(text) >= MIN_LEVER_CHARS else []


def _evidence_text(row: dict, lever: str) -> str:
    parts = [lever, row["subject"] or "", row["quality_gate"]["failure_reason"] or ""]
    parts += [p["text"] for p in row["pitfalls"]]
    return " ".join(parts)


def anti_segments(ctx: Context, rows: list[dict], scrub) -> list[dict]:
    levers: dict[str, dict] = {}
    for row in rows:
        for lever, split_by in failed_levers(row):
            clean = scrub(lever)
            key = lever_key(clean)
            occurrence = {"version": row["version"], "sha": row["sha"]}
            if key in levers:
                levers[key]["lever"]["occurrences"].append(occurrence)
                continue
            technique = slugify(clean)
            verdict, reason = precheck(scrub(_evidence_text(row, lever)))
            seg = _common(ctx, row, "anti-strategy", "deadend-item" if split_by == "mechanical" else "deadend-prose",
                          "", technique, "anti-strategy", key)
            seg["seg_id"] = f"anti-{seg['id'][-6:]}"
            seg["lever"] = {"text": clean, "split_by": split_by, "fix": None, "occurrences": [occurrence],
                            "fact_precheck": {"verdict": verdict, "reason": reason}}
            levers[key] = seg
    return list(levers.values())


def pitfall_segments(ctx: Context, rows: list[dict], taken: set[str], scrub) -> list[dict]:
    out: dict[str, dict] = {}
    for row in rows:
        for pit in row["pitfalls"]:
            clean = scrub(pit["text"])
            key = lever_key(clean)
            if len(clean) < MIN_LEVER_CHARS or key in taken:
                continue
            occurrence = {"version": row["version"], "sha": row["sha"]}
            if key in out:
                out[key]["lever"]["occurrences"].append(occurrence)
                continue
            verdict, reason = precheck(clean + " " + (scrub(pit["fix"]) if pit["fix"] else ""))
            seg = _common(ctx, row, "anti-strategy", "curated-pitfall", "", slugify(clean), "pitfall", key)
            seg["seg_id"] = f"pitfall-{seg['id'][-6:]}"
            seg["lever"] = {"text": clean, "split_by": "curated", "fix": scrub(pit["fix"]) if pit["fix"] else None,
                            "occurrences": [occurrence], "fact_precheck": {"verdict": verdict, "reason": reason}}
            out[key] = seg
    return list(out.values())


def reference_segments(ctx: Context, rows: dict[str, dict], steps: list[Step], scrub) -> list[dict]:
    out, seen = [], set()
    final = next((s for s in steps if s.final), None)
    picks = ([(final, "final-kernel", "refk-final", "final")] if final else [])
    picks += [(s, "mega-snapshot", None, "snapshot") for s in steps if s.outcome == "mega"]
    for step, kind, seg_id, prefix in picks:
        row = rows[step.version]
        # the kernel's own technique makes its episode key distinct from other snapshots and traces
        technique = slugify(f"{prefix} {scrub(technique_text(row))}")
        if not row["kernel_blob"] or row["kernel_blob"] in seen:
            continue  # no kernel.py, or the same kernel as the final one
        seen.add(row["kernel_blob"])
        seg = _common(ctx, row, "reference-kernel", kind, seg_id, technique, "reference-kernel", row["version"])
        seg["seg_id"] = seg_id or f"refk-{seg['id'][-6:]}"
        out.append(seg)
    return out


def build_segments(rows: list[dict], meta: dict, t: Thresholds, scrub: Callable[[str], str]) -> tuple[list[dict], list[Step]]:
    tgt = meta["target"]
    # the operator slug comes from trace-controlled names: it goes through the scrubber like any text
    operator = slugify(scrub(meta["operator_slug"].replace("-", " ")))
    ctx = Context(meta["source_label"], tgt["vendor"], tgt["arch"], tgt["product"], operator, meta["workload_family"])
    steps = run_ladder(rows, t)
    by_version = {r["version"]: r for r in rows}
    antis = anti_segments(ctx, rows, scrub)
    taken = {lever_key(s["lever"]["text"]) for s in antis}
    segments = (strategy_segments(ctx, by_version, steps, scrub) + antis
                + pitfall_segments(ctx, rows, taken, scrub) + reference_segments(ctx, by_version, steps, scrub))
    ids = Counter(s["id"] for s in segments)
    dupes = [i for i, c in ids.items() if c > 1]
    if dupes:  # content hashes collide only if the same content appears twice: a bug, not bad input
        raise AssertionError(f"duplicate segment ids: {dupes}")
    return segments, steps


def render_md(segments: list[dict], steps: list[Step], profiles: list[dict], meta: dict) -> str:
    kinds = Counter((s["record_type"], s["seg_kind"]) for s in segments)
    usable = {p["version"] for p in profiles if p["usable"] and p["version"]}
    reports = {p["version"] for p in profiles if p["usable"] and p["report"]}
    out = [f"# Partition: {meta['source_label']}", "", "## Segments", ""]
    out += [f"- {t} / {k}: {c}" for (t, k), c in sorted(kinds.items())]
    out += ["", "Id pattern: `<vendor>.<product|arch>.<dsl>.<operator_slug>.<technique>-<marker><hash6>` "
            "(markers: s strategy, a anti-strategy, p pitfall, r reference kernel); content-derived.",
            "", "## Strategies", "", "| version | kind | geomean µs | gain | builds on | dsl | id |", "|---|---|---|---|---|---|---|"]
    for s in segments:
        if s["record_type"] == "strategy":
            st = s["strategy"]
            base = st["builds_on"]["version"] if st["builds_on"] else "—"
            final = " (final)" if st["final"] else ""
            out.append(f"| {s['version']} | {s['seg_kind']}{final} | {st['geomean_us']:.2f} | {st['improve_pct']:+.2f}% | {base} | {s['scope']['dsl']} | `{s['id']}` |")
    out += ["", "## Failed levers and pitfalls", "", "| lever | kind | occurrences | precheck |", "|---|---|---|---|"]
    for s in segments:
        if s["record_type"] == "anti-strategy":
            lv = s["lever"]
            occ = ", ".join(o["version"] for o in lv["occurrences"])
            pc = lv["fact_precheck"]
            out.append(f"| {textwrap.shorten(lv['text'], 80, placeholder=' …', break_on_hyphens=False).replace('|', '/')} | {s['seg_kind']} | {occ} | {pc['verdict']}: {pc['reason']} |")
    flagged = sum(1 for s in segments if s["record_type"] == "anti-strategy" and s["lever"]["fact_precheck"]["verdict"] == "flag")
    out += ["", f"Flagged (kept, for the distiller to judge): {flagged}", "", "## Reference kernels", ""]
    out += [f"- {s['seg_id']}: {s['version']} (`{s['id']}`)" for s in segments if s["record_type"] == "reference-kernel"] or ["- none"]
    out += ["", "## Evidence", ""]
    for s in segments:
        v = s["version"]
        ev = "usable capture + REPORT.md" if v in reports else "usable capture" if v in usable else "no usable capture"
        out.append(f"- {s['seg_id']} ({v}): {ev}")
    rejected = Counter(st.reason.split(" (")[0] for st in steps if st.outcome == "rejected")
    out += ["", "## Rejected versions", ""] + ([f"- {k}: {c}" for k, c in sorted(rejected.items())] or ["- none"])
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    from .anonymize import Scrubber

    ap = argparse.ArgumentParser(prog="optrace partition", description=__doc__)
    ap.add_argument("--work-dir", required=True, type=Path, help="ingest outputs of one trace (segments.jsonl is written here)")
    ap.add_argument("--report", required=True, type=Path, help="partition.md to write")
    Thresholds.add_arguments(ap)
    ap.add_argument("--denylist-env", default="ATREX_WIKI_DENYLIST", help="variable naming the private denylist file")
    args = ap.parse_args(argv)
    rows = read_jsonl(args.work_dir / "versions.jsonl")
    meta = read_json(args.work_dir / "meta.json")
    profiles = read_jsonl(args.work_dir / "profiles.jsonl")
    scrubber = Scrubber.from_env(args.denylist_env)
    segments, steps = build_segments(rows, meta, Thresholds.from_args(args),
                                     scrubber.text)
    write_jsonl(args.work_dir / "segments.jsonl", segments)
    write_text_atomic(args.report, scrubber.private(render_md(segments, steps, profiles, meta)))  # a report: no term
    kinds = Counter(s["record_type"] for s in segments)
    print(f"partition: {meta['slug']}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0
