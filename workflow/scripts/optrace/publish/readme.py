"""The reviewer's README of a staging store: what was mined, from what, how much to trust it."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from optrace.errors import InputError
from optrace.jsonio import read_json, read_jsonl, write_text_atomic
from optrace.printable import escape_controls
from optrace.scrub.anonymize import Scrubber
from optrace.scrub.leak_patterns import add_denylist_argument

TRUST = """## Trust boundaries

- **Staging is not the live store.** Nothing here has been admitted; admission into a live store is a
  separate, reviewed step that checks each record again against that store.
- Every staged record passed all 17 gates: the 9 store gates (schema, ids, anonymization,
  raw-isolation, relations, index, self-contained, no-cross-reference, established-fact) and the 8
  trace gates (profile, layout, verbatim, no-fabrication, provenance, ncu-attribution, lineage,
  store-overlap).
- Numbers in served text appear in the trace's own evidence; code snippets are whole lines of the
  trace's diffs; every cited commit is the version's own commit. Prose was written by a drafter or an
  agent from scrubbed packets and is only as good as what the run wrote down.
- Scores come from the store's worth formula over what the trace measured (step gain, kept ratio,
  rediscoveries, best speedup); no feedback has been recorded yet, so tiers are at most `promising`.
- A profiler basis is claimed only where a capture measured the kernel under test, not a harness
  kernel. Absolute latencies live only in `evidence.raw` (human-only provenance).
"""

HOW_TO_READ = """## How to read one record

`payload` is what an agent is served (goal, problem, the change or the failed attempt, mechanism,
verbatim snippet); `evidence.summary` says how it is known; `worth.gain` is the measured effect as a
percentage; `worth.rank` is the computed score and tier; `evidence.raw` is provenance for humans only
(trace, version, commit, absolute latencies) and is never served.
"""


def _histogram(title: str, counts: Counter) -> list[str]:
    out = [f"### {title}", "", "| value | count | |", "|---|---|---|"]
    top = max(counts.values(), default=0)
    for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        out.append(f"| {key} | {n} | {'█' * max(1, round(20 * n / top)) if top else ''} |")
    return out + [""]


def shared_episode_section(index: list[dict]) -> list[str]:
    """Markdown for the episodes several staged records hold. A trace holds each episode once (partition
    numbers a repeat `#2`, validation fails a duplicate), so these are levers several traces found."""
    holders: dict[str, list[dict]] = {}
    for e in index:
        holders.setdefault(e["episode_key"], []).append(e)
    shared = sorted((key, entries) for key, entries in holders.items() if len(entries) > 1)
    if not shared:
        return []
    out = [
        "",
        "## Episodes several traces found",
        "",
        "Not duplicates: admission (`optrace gate match --all`) inserts the first in commit order and "
        "confirms it with the others that point the same way, or files a conflict for those that do not.",
        "",
        "| episode | records |",
        "|---|---|",
    ]
    for key, entries in shared:
        out.append(f"| `{key}` | " + ", ".join(f"`{e['id']}` ({e['type']})" for e in entries) + " |")
    return out


WROTE = {"drafted", "agent-wrote", "skipped-exists"}


@dataclass(frozen=True)
class TraceFiles:
    """The files of one trace the README reads (the rule's declared inputs)."""

    meta: Path
    versions: Path
    segments: Path
    distill: Path
    validation: Path
    recon: Path

    @classmethod
    def under(cls, results: Path, slug: str) -> TraceFiles:
        """The default layout of a results root."""
        work, reports = results / "work" / slug, results / "staging" / "reports" / slug
        names = ("meta.json", "versions.jsonl", "segments.jsonl")
        return cls(
            *(work / n for n in names), *(reports / n for n in ("distill.json", "validation.json", "recon.json"))
        )


def packets_without_record(files: TraceFiles) -> list[tuple[str, str, str]]:
    """(seg_id, record type, why) for every packet of a trace that has no record: the distill report's
    reason, else what validation saw (no record file in distilled/)."""
    distill, validation = read_json(files.distill), read_json(files.validation)  # declared: a missing one fails
    missing = set(validation.get("packets_without_record", []))
    out, seen = [], set()
    for o in distill["packets"]:
        if o["outcome"] not in WROTE or o["seg_id"] in missing:
            why = o.get("reason") or o["outcome"]
            if o["outcome"] in WROTE:
                why = f"{o['outcome']}, but no record file is in distilled/ now"
            out.append((o["seg_id"], o["record_type"], why))
            seen.add(o["seg_id"])
    out += [(seg, "?", "no record in distilled/ (not distilled yet)") for seg in sorted(missing - seen)]
    return out


TYPE_ORDER = {"strategy": 0, "anti-strategy": 1, "reference-kernel": 2}


def version_number(version: str | None) -> int:
    """`v12` -> 12, so v10 sorts after v9; a record without a version goes last."""
    digits = (version or "").lstrip("vV")
    return int(digits) if digits.isdigit() else 1 << 30


def recon_gains(path: Path) -> dict[str, float | None]:
    """version -> recon's gain vs the floor before it (its ladder)."""
    return {s["version"]: s["improve_pct"] for s in read_json(path)["ladder"]["steps"]}


def gain_text(pct: float | None) -> str | None:
    return None if pct is None else f"{pct:+.2f}%"


def records_section(
    index: list[dict], staged: dict[str, dict], labels: dict[str, str], recon: dict[str, dict[str, float | None]]
) -> list[str]:
    """One row per staged record, by trace, version, type and id, with its whole id. A record's gain
    is its claim; where recon's ladder puts another gain on the same version, both are shown: the
    claim was measured against something else than the floor the version beat."""
    rows, differ = [], 0
    for e in index:
        s = staged[e["id"]]
        regression = s["first_regression"]
        pct = gain_text(s["gain_pct"]) or " ".join(map(str, regression or ["—"]))
        theirs = gain_text(recon.get(s["trace"], {}).get(s["version"] or "")) if s["gain_pct"] is not None else None
        if theirs is not None and theirs != pct:
            pct, differ = f"{pct} **(recon {theirs})**", differ + 1
        label = labels.get(s["trace"], s["trace"])
        key = (label, version_number(s["version"]), TYPE_ORDER.get(e["type"], 3), e["id"])
        rows.append(
            (
                key,
                f"| {label} | {s['version'] or '—'} | {e['type']} | `{e['id']}` | {e['tier']} | "
                f"{e['worth_score']:.3f} | {pct} | {s['basis'] or '—'} |",
            )
        )
    out = ["", "## Records", ""]
    if differ:
        out += [
            f"{differ} record(s) claim a gain other than recon's ladder for the same version (marked): the claim "
            "was not measured against the floor that version beat.",
            "",
        ]
    out += ["| trace | version | type | id | tier | score | gain | basis |", "|---|---|---|---|---|---|---|---|"]
    return out + [row for _, row in sorted(rows)]


def warnings_section(warnings: list[tuple[str, list[str]]], scrub: Callable[[str], str]) -> list[str]:
    """Each trace's ingest warnings (what it could not read, or read with a doubt), as ingest wrote them."""
    out = ["", "## Ingest warnings", ""]
    given = [(label, w) for label, ws in warnings for w in ws]
    if not given:
        return out + ["No trace gave an ingest warning."]
    out += ["| trace | warning |", "|---|---|"]
    return out + [f"| {label} | {scrub(w).replace('|', '/')} |" for label, w in given]


def render(index_path: Path, staged_path: Path, traces: dict[str, TraceFiles], scrub: Callable[[str], str]) -> str:
    slugs = list(traces)
    index = read_json(index_path)["records"]
    summary = read_json(staged_path)
    staged = {s["id"]: s for s in summary["staged"]}  # what stage wrote of each copy (the README reads none)
    staged_by_trace = Counter(s["trace"] for s in summary["staged"])
    failed_by_trace = Counter(f["trace"] for f in summary["failed"])
    failed_traces = {f["trace"]: f for f in summary.get("failed_traces", [])}
    good = [slug for slug in slugs if slug not in failed_traces]
    metas = {slug: read_json(traces[slug].meta) for slug in good}
    labels = {slug: scrub(metas[slug]["source_label"]) for slug in good}
    out = [
        "# Staging store (not the live store)",
        "",
        f"{len(index)} records staged from {len(good)} trace(s); {len(summary['failed'])} failed validation and were not staged."
        + (f" {len(failed_traces)} trace(s) failed and are listed below." if failed_traces else ""),
        "`optrace check-store` on this directory runs the store's own gates.",
        "",
        "## Traces",
        "",
        "| trace | operator | target | versions | segments | staged | failed | ladder |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for slug in good:
        meta = metas[slug]
        versions = len(read_jsonl(traces[slug].versions))
        segments = len(read_jsonl(traces[slug].segments))
        t = meta["target"]
        out.append(
            f"| {labels[slug]} | {scrub(meta['operator_name'])} | {t['product']} ({t['vendor']} {t['arch']}) "
            f"| {versions} | {segments} | {staged_by_trace[slug]} | {failed_by_trace[slug]} "
            f"| [ladder](reports/{slug}/ladder.svg) |"
        )
    out += records_section(index, staged, labels, {slug: recon_gains(traces[slug].recon) for slug in good})
    out += shared_episode_section(index)
    out += warnings_section([(labels[slug], metas[slug].get("warnings") or []) for slug in good], scrub)
    if failed_traces:
        out += [
            "",
            "## Traces that failed (nothing of theirs is staged)",
            "",
            "| trace | stage | reason |",
            "|---|---|---|",
        ]
        out += [
            f"| {slug} | {f['stage']} | {scrub(f['reason'] or '').replace('|', '/')} |"
            for slug, f in sorted(failed_traces.items())
        ]
    if summary["failed"]:
        out += ["", "## Not staged (failed validation)", "", "| trace | record | failed gates |", "|---|---|---|"]
        out += [
            f"| {labels.get(f['trace'], f['trace'])} | `{Path(f['path']).name}` | {', '.join(f['gates'])} |"
            for f in sorted(summary["failed"], key=lambda f: (labels.get(f["trace"], f["trace"]), f["path"]))
        ]
    without = [(slug, *row) for slug in slugs for row in packets_without_record(traces[slug])]
    out += ["", "## Packets that produced no record", ""]
    if without:
        out += ["| trace | packet | type | why |", "|---|---|---|---|"]
        out += [
            f"| {labels.get(slug, slug)} | `{seg}` | {rtype} | {scrub(why).replace('|', '/')} |"
            for slug, seg, rtype, why in without
        ]
    else:
        out.append("Every packet produced a record.")
    cells = Counter(
        f"{e['type']} / {e['retrieval']['scope']['arch']} / {e['retrieval']['scope']['dsl']} / "
        f"{e['retrieval']['scope'].get('operator_family') or 'misc'}"
        for e in index
    )
    tiers = Counter(e["tier"] for e in index)
    bases = Counter(staged[e["id"]]["basis"] or "none" for e in index)
    out += ["", "## Histograms", ""] + _histogram("type / arch / dsl / family", cells) + _histogram("tier", tiers)
    out += _histogram("bottleneck evidence basis", bases)
    out += ["## Ladders", ""] + [f"![{slug} ladder](reports/{slug}/ladder.svg)" for slug in good] + [""]
    out += [HOW_TO_READ, TRUST]
    return "\n".join(out)


TRACE_FIELDS = tuple(f.name for f in fields(TraceFiles))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace readme", description=__doc__)
    ap.add_argument("--results", type=Path, help="a results root: the default layout of every file below")
    ap.add_argument("--index", type=Path, help="stage's index.json")
    ap.add_argument("--staged", type=Path, help="stage's staged.json")
    ap.add_argument("--store", type=Path, help="stage's store.json (with --live-store: what admission would do)")
    ap.add_argument(
        "--trace",
        nargs=len(TRACE_FIELDS) + 1,
        action="append",
        default=[],
        metavar=("SLUG", *(f.upper() for f in TRACE_FIELDS)),
        help="one trace the store was staged from and its files",
    )
    ap.add_argument("--out", required=True, type=Path, help="README.md to write")
    add_denylist_argument(ap)
    ap.add_argument("--live-store", type=Path, help="the live store's records/index.json: say what admission would do")
    ap.add_argument("slugs", nargs="*", help="with --results: the traces the store was staged from")
    args = ap.parse_args(argv)
    staging = args.results / "staging" if args.results else None
    index = args.index or (staging / "index.json" if staging else None)
    staged = args.staged or (staging / "staged.json" if staging else None)
    store = args.store or (staging / "store.json" if staging else None)
    traces = {t[0]: TraceFiles(*map(Path, t[1:])) for t in args.trace}
    traces.update({slug: TraceFiles.under(args.results, slug) for slug in args.slugs if args.results})
    if index is None or staged is None or not traces:
        raise InputError("optrace readme", "give --index, --staged and a --trace per trace (or --results and slugs)")
    scrubber = Scrubber.from_env(args.denylist_env, os.environ)
    text = render(index, staged, traces, lambda s: escape_controls(scrubber.private(s)))  # trace text: one cell
    if args.live_store:
        from optrace.admit.proposals import readme_section

        if store is None:
            raise InputError("optrace readme", "--live-store needs --store (what admission is asked about)")
        text += "\n" + readme_section(store, args.live_store)
    write_text_atomic(args.out, escape_controls(text, keep_layout=True))
    print(f"readme: {args.out}")
    return 0
