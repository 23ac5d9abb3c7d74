"""Recon: what a trace holds and what mining it can yield, before anything is distilled.

Reads ingest's outputs (and a live store's index when configured), runs the ladder as a preview, and
writes recon.json (facts), recon.md (the same facts for a person) and ladder.svg. It decides nothing.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path

from optrace.admit.store_match import holdings
from optrace.errors import InputError
from optrace.jsonio import read_json, read_jsonl, write_json, write_text_atomic
from optrace.mine.ladder import CLAIMS, Step, Thresholds, run_ladder
from optrace.printable import escape_controls, escape_strings
from optrace.report.ladderplot import ladder_plot, render_svg
from optrace.rows import VersionRow, read_versions
from optrace.scrub.anonymize import Scrubber
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


def latency_text(us: float | None) -> str:
    """A geomean for the table: two decimals, or four significant digits once it is too long to read."""
    if us is None:
        return "—"
    return f"{us:.2f}" if abs(us) < 1e6 else f"{us:.4g}"


def vs_floor_text(improve_pct: float | None) -> str:
    """The change against the floor: `+15.57%` / `-3.10%`, and past 2x slower `939.3x slower` (a
    percentage like -93826.65% says nothing a reader can use)."""
    if improve_pct is None or not math.isfinite(improve_pct):
        return ""
    if improve_pct > -100:
        return f"{improve_pct:+.2f}%"
    ratio = 1 - improve_pct / 100  # improve = (floor - geo) / floor * 100, so geo / floor = 1 - improve / 100
    return f"{ratio:.4g}x slower" if math.isfinite(ratio) else "slower beyond measure"


def check_latencies(rows: list[VersionRow], path: Path) -> None:
    """Every geomean ingest wrote is a positive finite latency or absent; anything else is a broken work
    file (a killed run's leftovers), named here in one line before the ladder divides by it."""
    for r in rows:
        geo = r.get("geomean_us")
        if geo is not None and not (type(geo) in (int, float) and math.isfinite(geo) and geo > 0):
            raise InputError(path, f"{r.get('version')}: geomean_us {geo!r} is not a positive latency; re-run ingest")


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
        "![ladder plot](ladder.svg)",
        "",
        "| version | outcome | geomean µs | vs floor | reason |",
        "|---|---|---|---|---|",
    ]
    for s in lad["steps"]:
        geo = latency_text(s["geomean_us"])
        pct = vs_floor_text(s["improve_pct"])
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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace recon", description=__doc__)
    ap.add_argument("--work-dir", required=True, type=Path, help="ingest outputs of one trace")
    ap.add_argument("--out-dir", required=True, type=Path, help="where recon.md, recon.json and ladder.svg go")
    ap.add_argument("--live-store", type=Path, default=None, help="a live store's records/index.json")
    Thresholds.add_arguments(ap)
    add_denylist_argument(ap)
    args = ap.parse_args(argv)
    rows = read_versions(args.work_dir / "versions.jsonl")
    check_latencies(rows, args.work_dir / "versions.jsonl")
    profiles = read_jsonl(args.work_dir / "profiles.jsonl")
    meta = read_json(args.work_dir / "meta.json")
    steps = run_ladder(rows, Thresholds.from_args(args))
    scrub = Scrubber.from_env(args.denylist_env)  # reports carry trace text: no denylisted term in them
    recon = scrub.private_json(build_recon(rows, profiles, meta, steps, args.live_store))
    write_json(args.out_dir / "recon.json", recon)
    write_text_atomic(args.out_dir / "recon.md", render_md(escape_strings(recon)))  # trace text, escaped
    title = escape_controls(scrub.private(f"{meta['source_label']} on {meta['target']['product']}"))
    write_text_atomic(args.out_dir / "ladder.svg", render_svg(ladder_plot(rows, steps, title)))
    lad = recon["ladder"]
    print(
        f"recon: {meta['slug']}: "
        + ", ".join(f"{k} {v}" for k, v in lad["outcomes"].items() if v)
        + f"; final {lad['final']}"
    )
    return 0
