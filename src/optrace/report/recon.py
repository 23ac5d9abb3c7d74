"""Recon: what a trace holds and what mining it can yield, before anything is distilled.

Reads ingest's outputs (and a live store's index when configured), runs the ladder as a preview, and
writes recon.json (facts), recon.md (the same facts for a person) and ladder.svg. It decides nothing.
"""

from __future__ import annotations

import argparse
import io
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from optrace.admit.store_match import holdings
from optrace.errors import InputError
from optrace.jsonio import read_json, read_jsonl, write_json, write_text_atomic
from optrace.mine.ladder import CLAIMS, Step, Thresholds, run_ladder
from optrace.rows import VersionRow, read_versions
from optrace.scrub.anonymize import Scrubber

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # imported where it is drawn: recon's other outputs need no matplotlib
from optrace.scrub.leak_patterns import add_denylist_argument


def dsl_changes(rows: list[VersionRow]) -> list[dict]:
    out, last = [], None
    for r in rows:
        if r["sha"] and r["dsl"] != last:
            out.append({"version": r["version"], "dsl": r["dsl"]})
            last = r["dsl"]
    return out


def coverage(rows: list[VersionRow], profiles: list[dict], meta: dict) -> dict:
    verdicts = Counter(r["verdict"] for r in rows)
    return {
        "versions": len(rows),
        "with_commit": sum(r["sha"] is not None for r in rows),
        "with_step_record": sum(r["number_note"] != "no step record (memory/v<N>.json)" for r in rows),
        "with_genuine_number": sum(r["geomean_us"] is not None for r in rows),
        "verdicts": {k: verdicts.get(k, 0) for k in ("baseline", "kept", "reverted", "none")},
        "no_change": sum(r["no_change"] for r in rows),
        "infrastructure": sum(r["infrastructure"] for r in rows),
        "carried_forward": sum(r["carried_from"] is not None for r in rows),
        "deadend_items": sum(len(r["deadend_items"]) for r in rows),
        "pitfalls": sum(len(r["pitfalls"]) for r in rows),
        "memory_variants": len(meta["memory_variants"]),
        "non_version_commits": len(meta["non_version_commits"]),
        "profile_captures": len(profiles),
        "usable_captures": sum(p["usable"] for p in profiles),
    }


def failures(rows: list[VersionRow], steps: list[Step]) -> dict:
    rejected = Counter(_reason_class(s.reason) for s in steps if s.outcome == "rejected")
    reverted = [r for r in rows if r["verdict"] == "reverted"]
    listed = [r for r in reverted if r["deadend_items"]]
    return {
        "rejection_reasons": dict(sorted(rejected.items())),
        "reverted_list_form": len(listed),
        "reverted_prose_form": len(reverted) - len(listed),
        "list_form_example": listed[0]["deadend_items"] if listed else None,
    }


def _reason_class(reason: str) -> str:
    return reason.split(" (")[0]


def profiler(profiles: list[dict]) -> dict:
    kernels = Counter(p["kernel_normalized"] or "(none named)" for p in profiles)
    return {
        "captures": len(profiles),
        "usable": sum(p["usable"] for p in profiles),
        "kernels": dict(sorted(kernels.items())),
        "unusable": [{"dir": p["dir"], "reason": p["unusable_reason"]} for p in profiles if not p["usable"]],
        "reports_from_usable_captures": sorted(p["report"] for p in profiles if p["usable"] and p["report"]),
        "reports_ignored": sorted(p["report"] for p in profiles if not p["usable"] and p["report"]),
    }


def overlap(meta: dict, index_path: Path | None) -> dict | None:
    if index_path is None:
        return None
    index = read_json(index_path)
    entries = index.get("records") if isinstance(index, dict) else None
    if not isinstance(entries, list):
        raise InputError(index_path, "not a store index (no `records` list)")
    op = meta["operator_slug"]
    same = [e for e in entries if isinstance(e, dict) and _operator_family(e) == op]
    return {
        "index": str(index_path),
        "store_records": len(entries),
        "same_operator_family": len(same),
        "by_type": dict(sorted(Counter(e.get("type") for e in same).items())),
        "episode_keys": sorted({e.get("episode_key") for e in same if e.get("episode_key")}),
        "holdings": holdings(entries, meta["target"]["vendor"], meta["target"]["arch"], op),
    }


def _operator_family(entry: dict) -> str | None:
    scope = (entry.get("retrieval") or {}).get("scope") or {}
    return scope.get("operator_family")


def expected_yield(rows: list[VersionRow], steps: list[Step]) -> dict:
    claims = [s for s in steps if s.outcome in CLAIMS]
    levers = {i.lower() for r in rows for i in r["deadend_items"]}
    prose = sum(1 for r in rows if r["verdict"] == "reverted" and not r["deadend_items"])
    return {
        "strategies": len(claims),
        "anti_strategy_levers": len(levers) + prose,
        "reference_kernels": (1 if any(s.final for s in steps) else 0) + sum(s.outcome == "mega" for s in claims),
    }


def build_recon(
    rows: list[VersionRow], profiles: list[dict], meta: dict, steps: list[Step], index_path: Path | None
) -> dict:
    counts = Counter(s.outcome for s in steps)
    final = next((s.version for s in steps if s.final), None)
    return {
        "identity": {
            "slug": meta["slug"],
            "source_label": meta["source_label"],
            "operator_name": meta["operator_name"],
            "operator_slug": meta["operator_slug"],
            "workload_family": meta["workload_family"],
            "target": meta["target"],
            "head_sha": meta["head_sha"],
            "n_shapes": meta["n_shapes"],
            "axes": meta["axes"],
            "default_dsl": meta["default_dsl"],
            "dsl_changes": dsl_changes(rows),
        },
        "coverage": coverage(rows, profiles, meta),
        "ladder": {
            "outcomes": {
                k: counts.get(k, 0)
                for k in ("baseline", "milestone", "mega", "floor", "flat", "rebaseline", "rejected")
            },
            "final": final,
            "steps": [s.to_row() for s in steps],
        },
        "failures": failures(rows, steps),
        "profiler": profiler(profiles),
        "overlap": overlap(meta, index_path),
        "expected_yield": expected_yield(rows, steps),
        "warnings": meta["warnings"],
    }


def render_md(recon: dict) -> str:
    i, c, lad, f, p, y = (
        recon[k] for k in ("identity", "coverage", "ladder", "failures", "profiler", "expected_yield")
    )
    t = i["target"]
    out = [
        f"# Recon: {i['source_label']}",
        "",
        "## Identity and coverage",
        "",
        f"- operator: `{i['operator_name']}` (slug `{i['operator_slug']}`, family `{i['workload_family']}`)",
        f"- target: {t['vendor']} {t['arch']} {t['product']} — {t['basis']}",
        f"- HEAD: `{i['head_sha']}`; shapes benchmarked: {i['n_shapes']}; axes: const {json.dumps(i['axes']['const'])}, var {i['axes']['var']}",
        f"- DSL: default `{i['default_dsl']}`; by version: "
        + ", ".join(f"{d['version']} `{d['dsl']}`" for d in i["dsl_changes"]),
        f"- versions: {c['versions']} ({c['with_commit']} with a commit, {c['with_step_record']} with a step record, "
        f"{c['with_genuine_number']} with a genuine number)",
        "- verdicts: "
        + ", ".join(f"{k} {v}" for k, v in c["verdicts"].items())
        + f"; NO_CHANGE {c['no_change']}, infrastructure {c['infrastructure']}, carried forward {c['carried_forward']}",
        f"- dead-end levers listed: {c['deadend_items']}; pitfalls recorded: {c['pitfalls']}; memory variants: "
        f"{c['memory_variants']}; non-version commits: {c['non_version_commits']}",
        "",
        "## Ladder preview",
        "",
        "Outcomes: "
        + ", ".join(f"{k} {v}" for k, v in lad["outcomes"].items() if v)
        + f"; final: {lad['final'] or 'none'}",
        "",
        "| version | outcome | geomean µs | vs floor | reason |",
        "|---|---|---|---|---|",
    ]
    for s in lad["steps"]:
        geo = f"{s['geomean_us']:.2f}" if s["geomean_us"] is not None else "—"
        pct = f"{s['improve_pct']:+.2f}%" if s["improve_pct"] is not None else ""
        mark = " (final)" if s["final"] else ""
        review = f" **Review:** {s['review']}" if s.get("review") else ""
        out.append(
            f"| {s['version']} | {s['outcome']}{mark} | {geo} | {pct} | {s['reason'].replace('|', '/')}{review} |"
        )
    flagged = [s for s in lad["steps"] if s.get("review")]
    out += [
        "",
        "Flagged for review (a jump beyond the re-baseline factor without re-baseline evidence): "
        + (", ".join(s["version"] for s in flagged) or "none"),
    ]
    out += ["", "## Failures", ""]
    out += [f"- {k}: {v}" for k, v in f["rejection_reasons"].items()] or ["- none"]
    out.append(f"- reverted in list form: {f['reverted_list_form']}, in prose form: {f['reverted_prose_form']}")
    if f["list_form_example"]:
        out.append(f"- list-form example: {'; '.join(f['list_form_example'])}")
    out += [
        "",
        "## Profiler",
        "",
        f"- captures: {p['captures']}, usable: {p['usable']}",
        "- kernels: " + (", ".join(f"`{k}` ×{v}" for k, v in p["kernels"].items()) or "none"),
    ]
    out += [f"- unusable `{u['dir']}`: {u['reason']}" for u in p["unusable"]]
    if p["reports_ignored"]:
        out.append(f"- REPORT.md of unusable captures, never used: {', '.join(p['reports_ignored'])}")
    out += ["", "## Overlap with the live store", ""]
    o = recon["overlap"]
    if o is None:
        out.append("- no live store configured (`live_store`)")
    else:
        out.append(
            f"- {o['same_operator_family']} of {o['store_records']} records share operator family "
            f"`{i['operator_slug']}`: " + (", ".join(f"{k} {v}" for k, v in o["by_type"].items()) or "none")
        )
        out += [f"- episode key `{k}`" for k in o["episode_keys"][:20]]
        h = o["holdings"]
        out.append(
            f"- on {i['target']['vendor']} {i['target']['arch']}: {h['same_hardware']} records ("
            + (", ".join(f"{k} {v}" for k, v in h["same_hardware_by_type"].items()) or "none")
            + f"); of this operator: {h['same_operator']}"
        )
        out += [f"- closest: `{c['id']}` ({c['type']}, {c['tier']})" for c in h["closest"]]
    out += [
        "",
        "## Expected yield",
        "",
        f"- strategies: {y['strategies']}, anti-strategy levers: {y['anti_strategy_levers']}, "
        f"reference kernels: {y['reference_kernels']}",
    ]
    if recon["warnings"]:
        out += ["", "## Warnings", ""] + [f"- {w}" for w in recon["warnings"]]
    return "\n".join(out) + "\n"


# outcome -> (marker, colour, label). Kept, reverted and rejected must never look alike.
STYLE = {
    "baseline": ("s", "#1f77b4", "baseline"),
    "milestone": ("o", "#2ca02c", "milestone (kept, labelled with its gain)"),
    "mega": ("*", "#006400", "mega milestone"),
    "floor": ("o", "#9acd32", "took the floor, no claim"),
    "flat": ("o", "#bbbbbb", "no improvement"),
    "rebaseline": ("D", "#8c564b", "re-baseline"),
    "rejected": ("^", "#ff7f0e", "rejected (incorrect, gate, not kept)"),
}
REVERTED = ("X", "#d62728", "reverted: tried, undone (dotted: what it measured)")
NO_NUMBER = ("v", "#777777", "no number (marked on the axis)")
NO_NUMBER_Y = 0.03  # axes fraction: on the version axis, just clear of its line
FLOOR_OUTCOMES = ("baseline", "milestone", "mega", "floor", "rebaseline")
MAX_GAIN_LABELS = 30  # the largest gains are labelled; more would overlap into noise
TICK_SUBS = (
    (1,),
    (1, 2, 5),
    (1, 2, 3, 5, 7),
    (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9),
)


def log_ticks(low: float, high: float, want: int = 4) -> list[float]:
    """Round latencies (…, 20, 30, 40, …) spanning [low, high], the coarsest set giving `want` ticks:
    a log axis over 16–42 µs has no power of ten inside it, and 2×10¹-style labels read badly."""
    import math

    ticks: list[float] = []
    for subs in TICK_SUBS:
        ticks = [
            round(m * 10.0**k, 6)
            for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
            for m in subs
            if low <= m * 10.0**k <= high
        ]
        if len(ticks) >= want:
            break
    return sorted(set(ticks))


def floor_at(steps: list[Step]) -> dict[int, float]:
    """Version number -> the floor (best kept latency) the kernel stood at after that version."""
    floor, out = None, {}
    for s in steps:
        if s.outcome in FLOOR_OUTCOMES and s.geomean_us is not None:
            floor = s.geomean_us
        if floor is not None:
            out[s.n] = floor
    return out


def render_svg(rows: list[VersionRow], steps: list[Step], title: str) -> str:
    # The object API with the SVG canvas, never pyplot: pyplot's import and global state cost every
    # recon job time and buy nothing for one figure written to a file.
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": "optrace", "svg.fonttype": "none"}):  # byte-identical reruns
        fig = Figure(figsize=(9, 4.5))
        FigureCanvasSVG(fig)
        draw_ladder(fig, rows, steps, title)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _measured(step: Step) -> float:
    assert step.geomean_us is not None, step.version
    return step.geomean_us


def draw_ladder(fig: Figure, rows: list[VersionRow], steps: list[Step], title: str) -> None:
    """The ladder on a matplotlib Figure (any canvas)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    reverted = {r["version"] for r in rows if r["verdict"] == "reverted"}
    floors = floor_at(steps)
    ax = fig.add_subplot()
    groups: dict[str, list[Step]] = {}
    for s in steps:
        if s.version in reverted:
            groups.setdefault("reverted", []).append(s)
        elif s.geomean_us is not None:
            groups.setdefault(s.outcome, []).append(s)
    for key, (marker, colour, label) in STYLE.items():
        pts = groups.get(key)
        if pts:
            ax.scatter(
                [s.n for s in pts],
                [_measured(s) for s in pts],  # the outcomes drawn here all have a number
                marker=marker,
                c=colour,
                s=80 if marker == "*" else 36,
                label=label,
                zorder=3,
            )
    # A revert leaves the kernel at the floor: drawn there, what it measured only dotted. Before any
    # floor exists there is nothing to go back to, so it stands at its own number.
    back = [s for s in groups.get("reverted", []) if s.n in floors or s.geomean_us is not None]
    if back:
        marker, colour, label = REVERTED
        ax.scatter(
            [s.n for s in back],
            [floors[s.n] if s.n in floors else _measured(s) for s in back],
            marker=marker,
            c=colour,
            s=40,
            label=label,
            zorder=4,
        )
        stems = [s for s in back if s.n in floors and s.geomean_us is not None]
        if stems:  # one collection each, not an artist per revert: long traces revert thousands of times
            ax.vlines(
                [s.n for s in stems],
                [floors[s.n] for s in stems],
                [_measured(s) for s in stems],
                linestyles=":",
                colors=colour,
                lw=1,
                zorder=2,
            )
            ax.scatter(
                [s.n for s in stems],
                [_measured(s) for s in stems],
                marker="o",
                facecolors="none",
                edgecolors=colour,
                s=22,
                zorder=3,
            )
    floor = [(s.n, s.geomean_us) for s in steps if s.outcome in FLOOR_OUTCOMES and s.geomean_us is not None]
    if floor:
        last = max(s.n for s in steps)
        xs, ys = [n for n, _ in floor] + [last], [g for _, g in floor] + [floor[-1][1]]
        ax.step(xs, ys, where="post", c="#555555", lw=1, label="floor (best kept)", zorder=2)
    missing = [s for s in steps if s.geomean_us is None]
    if missing:
        marker, colour, label = NO_NUMBER
        ax.scatter(
            [s.n for s in missing],
            [NO_NUMBER_Y] * len(missing),
            marker=marker,
            facecolors="none",
            edgecolors=colour,
            s=40,
            label=label,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            zorder=4,
        )
    claims = sorted(
        (s for s in steps if s.outcome in CLAIMS and s.improve_pct is not None and s.geomean_us),
        key=lambda s: -(s.improve_pct or 0.0),  # only steps with a number are here
    )[:MAX_GAIN_LABELS]
    for s in claims:
        ax.annotate(
            f"{s.version} +{s.improve_pct:.1f}%",
            (s.n, s.geomean_us),
            textcoords="offset points",
            xytext=(4, 5),
            fontsize=7,
            color=STYLE[s.outcome][1],
        )
    for s in steps:
        if s.final and s.geomean_us is not None:
            ax.annotate(
                "final", (s.n, s.geomean_us), textcoords="offset points", xytext=(0, -14), ha="center", fontsize=8
            )
    values = [s.geomean_us for s in steps if s.geomean_us] + [g for g in floors.values() if g]
    if values:
        ax.set_yscale("log")
        low, high = min(values), max(values)
        ax.set_ylim(low / 1.15, high * 1.15)
        ax.yaxis.set_major_locator(FixedLocator(log_ticks(low / 1.15, high * 1.15)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_formatter(NullFormatter())
    if steps:  # room on the right for the last gain label
        first, last = min(s.n for s in steps), max(s.n for s in steps)
        ax.set_xlim(first - 0.5, last + max(1.2, 0.08 * (last - first)))
    ax.set_xlabel("version")
    ax.set_ylabel("geomean latency (µs, log scale)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")  # "best" tests every point of a long trace for overlap
    fig.subplots_adjust(left=0.08, right=0.98, top=0.92, bottom=0.12)  # fixed: tight_layout measures text twice


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace recon", description=__doc__)
    ap.add_argument("--work-dir", required=True, type=Path, help="ingest outputs of one trace")
    ap.add_argument("--out-dir", required=True, type=Path, help="where recon.md, recon.json and ladder.svg go")
    ap.add_argument("--live-store", type=Path, default=None, help="a live store's records/index.json")
    Thresholds.add_arguments(ap)
    add_denylist_argument(ap)
    args = ap.parse_args(argv)
    rows = read_versions(args.work_dir / "versions.jsonl")
    profiles = read_jsonl(args.work_dir / "profiles.jsonl")
    meta = read_json(args.work_dir / "meta.json")
    steps = run_ladder(rows, Thresholds.from_args(args))
    scrub = Scrubber.from_env(args.denylist_env)  # reports carry trace text: no denylisted term in them
    recon = scrub.private_json(build_recon(rows, profiles, meta, steps, args.live_store))
    write_json(args.out_dir / "recon.json", recon)
    write_text_atomic(args.out_dir / "recon.md", render_md(recon))
    title = scrub.private(f"{meta['source_label']} on {meta['target']['product']}")
    write_text_atomic(args.out_dir / "ladder.svg", render_svg(rows, steps, title))
    lad = recon["ladder"]
    print(
        f"recon: {meta['slug']}: "
        + ", ".join(f"{k} {v}" for k, v in lad["outcomes"].items() if v)
        + f"; final {lad['final']}"
    )
    return 0
