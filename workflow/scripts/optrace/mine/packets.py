"""Packets: per segment, everything the distilling agent may see, and nothing it may not.

Each packet has a scrubbed `agent_facing` layer, a human-only `provenance` layer and a sibling code file:
`<seg_id>.diff` (against the previous kept milestone's kernel.py, not the git parent, so reverted attempts
and chores between milestones stay out) or `<seg_id>.py` (a reference kernel); all of a trace's packets
are one file (optrace.mine.packetfile). Blobs come from one `git cat-file --batch`; diffs are computed
in-process. A packet that still leaks after scrubbing fails the job, and no packets file is written.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast, overload

from optrace.ingest.git_history import KERNEL_FILE, open_trace
from optrace.ingest.grammar import without_episode_label
from optrace.ingest.trace_files import read_text
from optrace.jsonio import dumps_compact, read_json, read_jsonl
from optrace.mine.evidence import evidence_items
from optrace.mine.packetfile import write_packet_file
from optrace.mine.partition import FAILED_DECISIONS, technique_text
from optrace.rows import (
    AgentFacing,
    Measurements,
    OperatorFacts,
    PacketRow,
    Profiler,
    ProfilerMetrics,
    SegmentRow,
    ShapeLatency,
    VersionRow,
    WhatTheRunSaid,
    read_segments,
    read_versions,
)
from optrace.scrub.anonymize import Scrubber, ShapeLabels, Step, json_strings
from optrace.scrub.leak_patterns import add_denylist_argument
from optrace.wording import overlap

MAX_DIFF_CHARS = 60_000
MAX_KERNEL_CHARS = 40_000
MAX_CONCLUSION_CHARS = 1200
MAX_LIST = 5
FACT_RULE = (
    "An anti-strategy needs a checkable condition (arch, shape regime, dtype or toolchain), a causal "
    "mechanism of at least 40 characters, and a concluding verdict; otherwise write nothing."
)
# (anchor, where its section ends): an inline bold label runs to the paragraph end, a heading to the next heading
_ANCHORS = [
    (r"\*\*Root cause\*\*:?", r"\n\s*\n"),
    (r"^#+\s*Key Finding.*$", r"\n#"),
    (r"^#+\s*(?:Diagnosis|Bottleneck Analysis).*$", r"\n#"),
    (r"\*\*Evidence\*\*:?", r"\n\s*\n"),
]


def report_conclusion(text: str) -> str | None:
    """The diagnosis part of an agent's REPORT.md: the first anchored section, else its opening lines."""
    for anchor, end in _ANCHORS:
        m = re.search(anchor, text, re.I | re.M)
        if m:
            section = re.split(end, text[m.end() :].strip(), maxsplit=1)[0].strip()
            if len(section) >= 30:
                return section[:MAX_CONCLUSION_CHARS]
    head = "\n".join(text.strip().splitlines()[:20]).strip()
    return head[:MAX_CONCLUSION_CHARS] or None


# `summary.txt` lines (classify_ncu's layout): name -> (packet key, unit suffix to strip)
_SUMMARY_NUMBERS = [
    (r"^Duration:\s*([\d.]+)\s*us", "duration_us"),
    (r"^SM Throughput:\s*([\d.]+)\s*%", "sm_throughput_pct"),
    (r"^Memory Throughput:\s*([\d.]+)\s*%", "memory_throughput_pct"),
    (r"^L2 Hit Rate:\s*([\d.]+)\s*%", "l2_hit_rate_pct"),
    (r"^Achieved Occupancy:\s*([\d.]+)\s*%", "achieved_occupancy_pct"),
    (r"^Registers/Thread:\s*(\d+)", "registers_per_thread"),
]
MAX_STALLS = 5
MATERIAL_SIMILARITY = 0.6  # line similarity to a neighbouring kernel at which a snapshot repeats it
FRESH_OVERLAP = 0.8  # share of a direction's words an earlier change or direction holds: the same direction
# what each kind of segment is, in the pipeline's words (the record's evidence item of kind `segment`)
SEGMENT_KINDS = {
    "final-kernel": "the final kernel: the fastest version this run kept",
    "mega-snapshot": "an earlier kernel of this run, kept after a large measured gain and superseded by later steps",
    "curated-pitfall": "a pitfall this run recorded, with the cause and the fix its step record states: do not "
    "retry this lever while that cause holds",
    "strategy": "a change this run kept because it beat the floor (the previous best kept version, before it) by "
    "the measured gain",
    "anti-strategy": "a lever (a change) this run attempted to beat the floor and did not keep, for the cause its "
    "evidence states: do not retry this lever while that cause holds",
}
STEP_RECORD_FIELDS = {
    "change": "optimization.action_description",
    "gate_verdict": "quality_gate.failure_reason",
    "evidence_summary": "profile_evidence.evidence_summary",
    "bottleneck_type": "profile_evidence.bottleneck_type",
    "expected_impact": "optimization.expected_impact",
    "category_hint": "optimization.action_category",
    "experiment_findings": "experience.experiments (evidence, result)",
}


def summary_metrics(text: str) -> ProfilerMetrics:
    """The numbers of an ncu `summary.txt`: throughputs, occupancy, registers, top stall reasons, symptoms."""
    out: dict[str, Any] = {}
    for pattern, key in _SUMMARY_NUMBERS:
        if m := re.search(pattern, text, re.M):
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    stalls = re.search(r"^Top Stall Reasons:\s*\n((?:[ \t]+\S.*\n?)+)", text, re.M)
    if stalls:
        pairs = re.findall(r"^[ \t]+([a-z_]+):\s*([\d.]+)", stalls.group(1), re.M)
        out["stall_reasons"] = {name: float(v) for name, v in pairs[:MAX_STALLS]}
    if m := re.search(r"^SYMPTOMS:\s*(.+)$", text, re.M):
        out["symptoms"] = [w.strip() for w in m.group(1).split(",") if w.strip()]
    return cast(ProfilerMetrics, out)  # keys: _SUMMARY_NUMBERS' names, stall_reasons, symptoms


def unified_diff(before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{KERNEL_FILE}", f"b/{KERNEL_FILE}", n=3
    )
    out = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out[:MAX_DIFF_CHARS]


class PacketBuilder:
    def __init__(
        self,
        meta: dict,
        rows: list[VersionRow],
        profiles: list[dict],
        scrubber: Scrubber,
        slug: str,
        read_blob: Callable[[str], bytes | None],
        read_file: Callable[[str], str | None],
    ):
        self.meta, self.scrub, self.slug = meta, scrubber, slug
        self.rows = {r["version"]: r for r in rows}
        self.order = sorted(rows, key=lambda r: r["n"])
        self.profiles = {p["dir"]: p for p in profiles}
        self.read_blob, self.read_file = read_blob, read_file
        self.shapes = ShapeLabels.from_keys(sorted({k for r in rows for k in r["by_shape_us"]}))
        self._scrubbed: dict = {}
        self._metrics: dict[str, ProfilerMetrics] = {}
        self._changes_so_far: dict[str, list[str]] = {}  # strategy packets in version order: done, offered
        # kernel blob of the nearest earlier version that has one, for every version
        self._kernel_before: dict[str, str | None] = {}
        last = None
        for r in self.order:
            self._kernel_before[r["version"]] = last
            last = r["kernel_blob"] or last

    @overload
    def text(self, s: str) -> str: ...
    @overload
    def text(self, s: None) -> None: ...
    def text(self, s: str | None) -> str | None:
        # the same prose (operator description, a version's subject) recurs in many packets
        if s not in self._scrubbed:
            self._scrubbed[s] = self.scrub.text(s, self.shapes)
        return self._scrubbed[s]

    def kernel(self, blob: str | None) -> str:
        if not blob:
            return ""
        data = self.read_blob(blob)
        assert data is not None  # None only over a cap, and none is given
        return data.decode("utf-8", errors="replace")

    # ---- layers -------------------------------------------------------------------------------
    def operator(self, dsl: str) -> OperatorFacts:
        m, t = self.meta, self.meta["target"]
        return {
            "what_it_computes": self.text(m["description"]),
            "fixed_axes": m["axes"]["const"],
            "variable_axes": m["axes"]["var"],
            "n_benchmarked_shapes": m["n_shapes"],
            "dsl": dsl,
            "gpu": f"{t['product'].upper()} ({t['vendor']} {t['arch']})",
            "isa": t["isa"],
            "harness": self.text(m["harness"]),
        }

    def run_said(self, row: VersionRow) -> WhatTheRunSaid:
        return {
            "change": self.text(without_episode_label(row["action_description"])),
            "commit_subject": self.text(row["subject"]),
            "commit_body": self.text(row["body"]) or None,
            "category_hint": row["action_category"],
            "gate_verdict": self.text(row["quality_gate"]["failure_reason"]),
            "evidence_summary": self.text(row.get("evidence_summary")),
            "bottleneck_type": self.text(row.get("bottleneck_type")),
            "expected_impact": self.text(row.get("expected_impact")),
            "experiment_findings": [
                self.text(" ".join(p.rstrip(".") + "." for p in (e.get("evidence"), e.get("result")) if p))
                for e in row.get("experiments") or []
                if e.get("decision") not in FAILED_DECISIONS and (e.get("evidence") or e.get("result"))
            ],
        }

    def shape_entry(self, key: str, latency: float) -> ShapeLatency:
        axes = self.meta.get("shape_axes", {}).get(key)
        values = {k: v for k, v in (axes or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        entry: ShapeLatency = {"shape": self.shapes.label(key), "latency_us": latency}
        if values:
            entry["axes"] = values
        return entry

    def measurements(self, row: VersionRow, seg: SegmentRow) -> Measurements:
        """The version's measurements; none for a curated pitfall (its version's numbers are the kept
        change's, not the pitfall's)."""
        if seg["seg_kind"] == "curated-pitfall":
            none: Measurements = {
                "geomean_us": None,
                "improve_pct_vs_floor": None,
                "floor_before_us": None,
                "per_shape_latency": [],
                "shapes_measured": 0,
                "correctness": {"status": None, "max_abs_err": None, "max_rel_err": None},
            }
            return none
        lever = seg.get("lever")
        st = seg.get("strategy") or (lever.get("measured") if lever else None)
        per_shape = sorted(
            (self.shape_entry(k, v) for k, v in row["by_shape_us"].items()), key=lambda x: (x["latency_us"], x["shape"])
        )
        return {
            "geomean_us": row["geomean_us"],
            "improve_pct_vs_floor": st.get("improve_pct") if st else None,
            "floor_before_us": st.get("floor_before_us") if st else None,
            "per_shape_latency": per_shape,
            "shapes_measured": len(per_shape),
            "correctness": row["correctness"],
        }

    def profiler(self, versions: list[str]) -> tuple[Profiler, list[str], str | None]:
        """Conclusion only from a usable capture; unusable captures' REPORT.md never reach a packet."""
        dirs = [d for v in versions for d in self.rows[v]["usable_profile_dirs"]]
        conclusion, report = None, None
        for d in dirs:
            rel = self.profiles.get(d, {}).get("report")
            text = self.read_file(rel) if rel else None
            if text and (conclusion := report_conclusion(text)):
                report = rel
                break
        kernels = sorted({self.profiles[d]["kernel_normalized"] for d in dirs if d in self.profiles})
        none: ProfilerMetrics = {}
        metrics = next((m for d in dirs if (m := self.capture_metrics(d))), none)
        return (
            {
                "ncu_measured_the_kernel_under_test": bool(dirs),
                "kernel": kernels[0] if kernels else None,
                "conclusion": self.text(conclusion),
                "metrics": metrics,
            },
            dirs,
            report,
        )

    def capture_metrics(self, capture_dir: str) -> ProfilerMetrics:
        # a capture is read once however many packets cite it (a lever's versions, a strategy's parent)
        if capture_dir not in self._metrics:
            text = self.read_file(f"{capture_dir}/summary.txt")
            self._metrics[capture_dir] = summary_metrics(text) if text else {}
        return self._metrics[capture_dir]

    def directions_and_pitfalls(self, versions: list[str]) -> tuple[list, list]:
        dirs, pits = [], []
        for v in versions:
            row = self.rows[v]
            dirs += [
                {"direction": self.text(d["direction"]), "rationale": self.text(d["rationale"])}
                for d in row["open_directions"]
            ]
            pits += [{"pitfall": self.text(p["text"]), "fix": self.text(p["fix"])} for p in row["pitfalls"]]
        return dirs[:MAX_LIST], pits[:MAX_LIST]

    # ---- one packet ---------------------------------------------------------------------------
    def build(self, seg: SegmentRow) -> tuple[PacketRow, str | None, str | None]:
        """(packet, code text, code file suffix)"""
        row = self.rows[seg["version"]]
        versions = [o["version"] for o in seg["lever"]["occurrences"]] if "lever" in seg else [row["version"]]
        pitfall = seg["seg_kind"] == "curated-pitfall"
        # a pitfall's version captured the kept change, not the pitfall
        profiler, capture_dirs, report = self.profiler([] if pitfall else versions)
        directions, pitfalls = self.directions_and_pitfalls(versions)
        if seg["record_type"] == "strategy":
            directions = self.fresh_directions(seg, directions)
        dsl = seg["scope"]["dsl"]
        agent: AgentFacing = {
            "evidence": [],
            "what_this_record_is": self.what_it_is(seg),
            "operator": self.operator(dsl),
            "what_the_run_said": self.run_said(row),
            "measurements": self.measurements(row, seg),
            "profiler": profiler,
            "open_directions": directions,
            "pitfalls_recorded_here": pitfalls,
        }
        code, suffix = None, None
        parent_dirs: list[str] = []
        if seg["record_type"] == "strategy":
            base = seg["strategy"]["builds_on"]
            base_row = self.rows[base["version"]] if base else None
            parent_profiler, parent_dirs, _ = self.profiler([base["version"]]) if base else (None, [], None)
            agent["builds_on"] = {
                "was_the_untouched_baseline": bool(base and base["is_baseline"]),
                "previous_approach": self.text(without_episode_label(base_row["action_description"]))
                if base_row
                else None,
                # what this step attacked: the parent's own capture, never this version's
                "parent_profiler": parent_profiler
                if parent_profiler and parent_profiler["ncu_measured_the_kernel_under_test"]
                else None,
                "parent_bottleneck_type": self.text(base_row.get("bottleneck_type")) if base_row else None,
            }
            edited = seg["strategy"]["diff_base"]["kernel_blob"]
            if edited and row["kernel_blob"] and edited != row["kernel_blob"]:
                code, suffix = unified_diff(self.kernel(edited), self.kernel(row["kernel_blob"])), ".diff"
        elif seg["record_type"] == "anti-strategy":
            lv = seg["lever"]
            agent["the_failed_lever"] = lv["text"]
            agent["why_it_failed"] = lv.get("cause")
            agent["what_was_observed"] = lv.get("observed")
            agent["how_it_was_fixed"] = lv["fix"]
            if pitfall:
                agent["lesson_recorded"] = lv.get("lesson")
            agent["times_tried"] = len(lv["occurrences"])
            agent["established_fact_required"] = {
                "rule": FACT_RULE,
                "precheck": lv["fact_precheck"]["verdict"],
                "precheck_note": lv["fact_precheck"]["reason"],
            }
            before = self._kernel_before[row["version"]]  # what this attempt changed
            if row["kernel_changed"] and before and row["kernel_blob"] and before != row["kernel_blob"] and not pitfall:
                code, suffix = unified_diff(self.kernel(before), self.kernel(row["kernel_blob"])), ".diff"
        else:
            code, suffix = self.kernel(row["kernel_blob"])[:MAX_KERNEL_CHARS], ".py"
        if code is not None:
            assert suffix is not None  # set with the code
            # its comments' version words true of this step (a diff's, or the kernel's, own version)
            code = self.scrub.code(code, dsl, step=Step(row["n"]))
            agent["code_file"] = seg["seg_id"] + suffix
        items, fields = evidence_items(agent, seg["seg_kind"])
        agent["evidence"] = items
        packet: PacketRow = {
            "seg_id": seg["seg_id"],
            "record_type": seg["record_type"],
            "seg_kind": seg["seg_kind"],
            "target": {
                "id": seg["id"],
                "episode_key": seg["episode_key"],
                "scope": seg["scope"],
                "workload_family": seg["workload_family"],
                "level": "operator",
                "schema": "clean-1.3",
                "output": f"distilled/{self.slug}/{seg['id']}.json",
            },
            "agent_facing": agent,
            "provenance": {
                "source_label": self.meta["source_label"],
                "version": row["version"],
                "commit": row["sha"],
                "occurrences": [{"version": v, "commit": self.rows[v]["sha"]} for v in versions],
                "capture_dirs": capture_dirs,
                "report": report,
                "evidence": [
                    {"id": i, "field": f, "source": self.source_of(f, row, seg, capture_dirs, parent_dirs)}
                    for i, f in fields
                ],
            },
        }
        strategy = seg.get("strategy")
        if strategy and (b := strategy.get("builds_on")):  # files are written with sorted keys
            packet["provenance"]["builds_on"] = {
                "version": b["version"],
                "commit": b["sha"],
                "geomean_us": b["geomean_us"],
                "capture_dirs": parent_dirs,
            }
            d = strategy["diff_base"]
            packet["provenance"]["diff_base"] = {"version": d["version"], "commit": d["sha"]}
        return packet, code, suffix

    def source_of(
        self, field: str, row: VersionRow, seg: SegmentRow, captures: list[str], parent_captures: list[str]
    ) -> str:
        """Where the trace states an evidence item: its file (and field) or commit; for people only."""
        memory = f"memory/{row['version']}.json"
        if field.startswith("operator."):
            return "the benchmark metadata (definition.json, solution.json, workload.jsonl)"
        if field in ("what_the_run_said.commit_subject", "what_the_run_said.commit_body"):
            return f"commit {row['sha']}: {field.rsplit('_', 1)[-1]}"
        if field.startswith("what_the_run_said."):
            return f"{memory}: {STEP_RECORD_FIELDS.get(field.split('.', 1)[1].split('[')[0], field)}"
        if field.startswith("profiler."):
            return ", ".join(captures) or "no capture"
        if field.startswith("builds_on.parent_profiler"):
            return ", ".join(parent_captures) or "no capture"
        if field.startswith("builds_on."):
            strategy = seg.get("strategy")
            base = strategy["builds_on"] if strategy else None
            return f"memory/{base['version']}.json" if base else memory
        if field in ("the_failed_lever", "why_it_failed", "what_was_observed", "how_it_was_fixed", "lesson_recorded"):
            lever = seg.get("lever")
            occurrences = lever["occurrences"] if lever else []
            return f"{memory} or commit {row['sha']} ({len(occurrences)} occurrence(s))"
        if field == "what_this_record_is":
            return f"the ladder: {seg['seg_kind']} at commit {row['sha']}"
        return memory

    def what_it_is(self, seg: SegmentRow) -> str:
        """The operator, the GPU and the kind of segment, as the pipeline states them."""
        t, op = self.meta["target"], seg["scope"]["operator_family"]
        where = f"the {op} operator on {t['product'].upper()} ({t['vendor']} {t['arch']}"
        where += f", {t['isa']})" if t.get("isa") else ")"
        kind = SEGMENT_KINDS.get(seg["seg_kind"]) or SEGMENT_KINDS[seg["record_type"]]
        if seg["record_type"] == "strategy":
            base = seg["strategy"]["builds_on"]
            kind += "; it builds on " + (
                "the untouched baseline kernel" if base and base["is_baseline"] else "the previous kept kernel"
            )
        return f"{kind}; {where}, written in {seg['scope']['dsl']}"

    def names(self, seg: SegmentRow) -> str | None:
        """The lever or change a segment is about, as its packet names it (the claims gate keeps one
        record from naming another segment's lever its own evidence does not name)."""
        if "lever" in seg:
            return seg["lever"]["text"]
        if seg["record_type"] == "strategy":
            return self.text(technique_text(self.rows[seg["version"]]))
        return None

    def redundant_snapshots(self, segments: list[SegmentRow]) -> dict[str, str]:
        """seg_id -> why, for every snapshot reference kernel that is not materially different from its
        neighbours in the store: the kernel before it (the previous snapshot, else the kernel its step
        edited) or after it (the next snapshot, else the final kernel). The strategy records already
        quote what such a snapshot would repeat."""
        refs = sorted((s for s in segments if s["record_type"] == "reference-kernel"), key=lambda s: s["n"])
        final = next((s for s in refs if s["seg_kind"] == "final-kernel"), None)
        snaps = [s for s in refs if s["seg_kind"] == "mega-snapshot"]
        edited = {
            s["version"]: s["strategy"]["diff_base"]["kernel_blob"] for s in segments if s["record_type"] == "strategy"
        }
        out = {}
        for i, snap in enumerate(snaps):
            before = snaps[i - 1]["kernel_blob"] if i else edited.get(snap["version"])
            after = snaps[i + 1]["kernel_blob"] if i + 1 < len(snaps) else (final["kernel_blob"] if final else None)
            mine = self.kernel(snap["kernel_blob"]).splitlines()
            for side, blob in (("before", before), ("after", after)):
                if not blob:
                    continue
                ratio = difflib.SequenceMatcher(None, mine, self.kernel(blob).splitlines(), autojunk=False).ratio()
                if ratio >= MATERIAL_SIMILARITY:
                    out[snap["seg_id"]] = (
                        f"{ratio:.0%} of its lines are the kernel {side} it in the store: not materially different"
                    )
                    break
        return out

    def fresh_directions(self, seg: SegmentRow, directions: list) -> list:
        """A strategy's open directions without those an earlier strategy packet already offered and those
        this step or an earlier one already did (a direction is offered once, to the step before it)."""
        done = self._changes_so_far.setdefault("done", [])
        done.append(self.text(technique_text(self.rows[seg["version"]])))
        offered = self._changes_so_far.setdefault("offered", [])
        out = []
        for d in directions:
            text = d.get("direction") or ""
            if any(overlap(text, x) >= FRESH_OVERLAP for x in done + offered):
                continue
            offered.append(text)
            out.append(d)
        return out


def prose_peers(segments: list[SegmentRow], written: set[str]) -> dict[str, list[str]]:
    """seg_id -> the other failed levers of its version (one version's prose about several levers: the
    claims gate keeps each record to the sentences about its own lever); curated pitfalls aside."""
    by_version: dict[str, list[str]] = {}
    for seg in segments:
        if "lever" in seg and seg["seg_kind"] != "curated-pitfall" and seg["seg_id"] in written:
            by_version.setdefault(seg["version"], []).append(seg["seg_id"])
    return {sid: sorted(set(group) - {sid}) for group in by_version.values() if len(group) > 1 for sid in group}


def packet_leaks(packet: PacketRow, code: str | None, scrubber: Scrubber, seen: dict | None = None) -> list[str]:
    """Leaks left in what the agent sees: the agent-facing layer, the target (ids, paths) and the code,
    object keys included. `seen` caches verdicts of strings already checked (most prose recurs across
    a trace's packets)."""
    seen = {} if seen is None else seen
    found = []
    for s in json_strings({"agent_facing": packet["agent_facing"], "target": packet["target"]}):
        if s not in seen:
            seen[s] = scrubber.leaks(s)
        found += seen[s]
    if code:
        found += scrubber.code_leaks(code, packet["target"]["scope"]["dsl"])
    return sorted(set(found))


def build_packets(out: Path, trace: str, work_dir: Path, slug: str, scrubber: Scrubber) -> tuple[int, list[str]]:
    """Write the trace's packets file `out` (optrace.mine.packetfile); (packets, refusals). A packet that
    still leaks is refused, and then no file is written."""
    segments = read_segments(work_dir / "segments.jsonl")
    rows = read_versions(work_dir / "versions.jsonl")
    meta = read_json(work_dir / "meta.json")
    profiles = read_jsonl(work_dir / "profiles.jsonl")
    failures: list[str] = []
    entries: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    checked: dict[str, list[str]] = {}
    with open_trace(trace, out.parent) as opened:
        builder = PacketBuilder(
            meta,
            rows,
            profiles,
            scrubber,
            slug,
            opened.history.read_blob,
            lambda rel: read_text(opened.files, rel, cap=1024 * 1024),
        )
        skipped = builder.redundant_snapshots(segments)
        for seg in segments:
            if seg["seg_id"] in skipped:
                continue
            packet, code, suffix = builder.build(seg)
            leaks = packet_leaks(packet, code, scrubber, checked)
            if leaks:
                failures.append(f"{out} ({seg['seg_id']}.json): still leaks after scrubbing: {'; '.join(leaks)}")
                continue
            files[f"{seg['seg_id']}.json"] = dumps_compact(packet)
            if code is not None:
                files[f"{seg['seg_id']}{suffix}"] = code
            entries.append(
                {
                    "seg_id": seg["seg_id"],
                    "id": seg["id"],
                    "record_type": seg["record_type"],
                    "code_file": packet["agent_facing"].get("code_file"),
                    "names": builder.names(seg),
                }
            )
    peers = prose_peers(segments, {str(e["seg_id"]) for e in entries})
    for entry in entries:
        entry["shares_prose_with"] = peers.get(str(entry["seg_id"]), [])
    if not failures:
        manifest = {
            "slug": slug,
            "head_sha": meta["head_sha"],
            "count": len(entries),
            "packets": entries,
            "skipped": [{"seg_id": k, "why": v} for k, v in sorted(skipped.items())],
        }
        write_packet_file(out, manifest, files)
    return len(entries), failures


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace packets", description=__doc__)
    ap.add_argument("trace", help="the trace (work tree or .bundle) the segments came from")
    ap.add_argument("--work-dir", required=True, type=Path, help="ingest and partition outputs of the trace")
    ap.add_argument("--out", required=True, type=Path, help="the packets file to write (packets/<slug>.json)")
    ap.add_argument("--slug", required=True, help="the trace's slug")
    add_denylist_argument(ap)
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    count, failures = build_packets(
        args.out, args.trace, args.work_dir, args.slug, Scrubber.from_env(args.denylist_env)
    )
    for f in failures:
        print(f"error: {f}", file=sys.stderr)
    print(f"packets: {args.slug}: {count} written" + (f", {len(failures)} refused (leaks)" if failures else ""))
    return 1 if failures else 0
