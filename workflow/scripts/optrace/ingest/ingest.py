"""Ingest: one trace -> versions.jsonl, profiles.jsonl, meta.json (and autotune.jsonl).

Deterministic code only. History comes from one `git log --first-parent` and one `cat-file --batch`;
memory/, profiles/ and metadata from the work tree (or, for a bundle, from HEAD's tree).
"""

from __future__ import annotations

import argparse
import gc
import re
from dataclasses import dataclass, replace
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest import grammar
from optrace.ingest.autotune import ingest_autotune
from optrace.ingest.captures import ProfileCapture, ignored_profile_dirs, scan_profiles
from optrace.ingest.carry import bundle_warning
from optrace.ingest.dsl import detect_dsl
from optrace.ingest.encoding import MAX_MESSAGE_BYTES, REPLACEMENT, commit_message, garbled
from optrace.ingest.git_history import KERNEL_FILE, REGULAR_MODES, Commit, History, open_trace
from optrace.ingest.hardware import (
    HardwareTable,
    Target,
    in_store_vocabulary,
    products_named,
    resolve,
    target_from_override,
)
from optrace.ingest.memory import StepRecord, scan_memory
from optrace.ingest.metadata import Metadata, dsl_from_languages, read_metadata
from optrace.jsonio import write_json, write_jsonl
from optrace.mine.ladder import harness_file
from optrace.run.families import operator_slug, trace_slug, workload_family
from optrace.run.sheet import safe_label
from optrace.scrub.leak_patterns import add_denylist_argument, denylist_pattern, read_denylist

DEFAULT_NON_TARGET = ["distribution_elementwise_grid_stride_kernel"]
# Read cap of one kernel.py blob, before DSL detection and before packets diff it: real kernels are
# tens of KB; difflib over two 512 KB versions takes ~0.3 s, over 1 MB ~1.1 s, over 5.5 MB minutes.
MAX_KERNEL_BYTES = 512 * 1024
KERNEL_MODE_NAMES = {"120000": "a symlink", "160000": "a submodule (gitlink)"}
MEMORY_VERSION_RE = r"^memory/v(\d{1,9})\.json$"


@dataclass(frozen=True)
class Overrides:
    """What the user states about a trace (sheet columns or config); wins over anything detected."""

    hardware: str | None = None
    vendor: str | None = None
    arch: str | None = None
    product: str | None = None
    dsl: str | None = None
    harness: str | None = None


@dataclass
class VersionCommits:
    n: int
    commits: list[tuple[Commit, grammar.SubjectClaim]]

    @property
    def last(self) -> Commit:
        return self.commits[-1][0]


@dataclass
class VersionIndex:
    versions: dict[int, VersionCommits]
    non_version: list[dict]
    episode_version: dict[int, int]  # long-horizon episode -> canonical version
    warnings: list[str]


def classify_commits(commits: list[Commit]) -> VersionIndex:
    """Group first-parent commits by version; everything else is a non-version commit."""
    versions: dict[int, VersionCommits] = {}
    non_version: list[dict] = []
    episodes: dict[int, int] = {}
    warnings: list[str] = []
    for commit in commits:
        claim = grammar.parse_subject(commit.subject, commit.body)
        n = claim.version
        if claim.kind in ("promote", "untagged"):
            added = [int(m.group(1)) for p in commit.added("memory/") if (m := re.match(MEMORY_VERSION_RE, p))]
            if not added:
                non_version.append(_non_version(commit, f"{claim.basis} adds no memory/v<N>.json"))
                warnings.append(f"commit {commit.sha[:12]}: {claim.basis} adds no memory/v<N>.json; not a version")
                continue
            if len(carried := carried_versions(commit, claim)) > 1:
                for carried_n in carried:
                    versions.setdefault(carried_n, VersionCommits(carried_n, [])).commits.append((commit, claim))
                continue
            n = max(added)
        elif claim.kind != "version":
            why = (
                "episode-branch trial commit on the first-parent line"
                if claim.kind == "trial"
                else "subject names no version"
            )
            non_version.append(_non_version(commit, why))
            continue
        assert n is not None  # a version claim carries its number
        if claim.episode is not None:
            episodes[claim.episode] = n
        versions.setdefault(n, VersionCommits(n, [])).commits.append((commit, claim))
    return VersionIndex(versions, non_version, episodes, warnings)


def _non_version(commit: Commit, why: str) -> dict:
    return {"sha": commit.sha, "subject": commit.subject[:90], "why": why}


def decide_verdict(vc: VersionCommits) -> tuple[str, str, list[str]]:
    """(verdict, how it was decided, warnings): the last commit whose subject carries a verdict decides,
    cross-checked with whether kernel.py changed (the orchestrator's own source of truth)."""
    changed = any(c.kernel_changed for c, _ in vc.commits)
    deciding = [cl for _, cl in vc.commits if cl.verdict and not cl.neutral] or [
        cl for _, cl in vc.commits if cl.verdict
    ]
    warnings: list[str] = []
    if not deciding:
        if changed:
            return "kept", "kernel.py changed and the subject states no verdict", warnings
        return "none", "kernel.py unchanged and the subject states no verdict", warnings
    claim = deciding[-1]
    verdict, basis = claim.verdict, claim.basis
    assert verdict is not None  # deciding holds only claims with a verdict
    if verdict == "kept" and not changed:
        warnings.append(f"v{vc.n}: subject says kept but kernel.py did not change; verdict none")
        return "none", f"{basis}, but kernel.py unchanged", warnings
    if verdict == "reverted" and changed and claim.reverts is None and claim.outcome is None:
        warnings.append(f"v{vc.n}: subject says reverted but its commit changed kernel.py")
        basis += " (kernel.py changed nonetheless)"
    return verdict, basis, warnings


LFS_POINTER = re.compile(
    rb"version https://(?:git-lfs\.github\.com|hawser\.github\.com)/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
    rb"oid sha256:[0-9a-f]{64}\n(?:[a-z0-9.-]+ [^\n]*\n)*?size \d+\n?"
)
MAX_LFS_POINTER_BYTES = 1024  # git-lfs's own limit: a larger file is never a pointer


def is_lfs_pointer(data: bytes) -> bool:
    """Whether a blob is a Git LFS pointer file (what git holds when the content went to LFS)."""
    return len(data) <= MAX_LFS_POINTER_BYTES and LFS_POINTER.match(data) is not None


def read_kernels(history: History, blobs: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(DSL per usable kernel blob, why each other blob is not source), one cat-file batch for all.
    A blob over MAX_KERNEL_BYTES is never read whole; one holding NUL bytes is binary, not source."""
    dsl, unusable = {}, {}
    for blob, data in history.read_blobs(sorted(blobs), MAX_KERNEL_BYTES):
        if data is None:
            unusable[blob] = f"over the {MAX_KERNEL_BYTES}-byte kernel read cap"
        elif b"\0" in data:
            unusable[blob] = "binary (holds NUL bytes)"
        elif is_lfs_pointer(data):
            unusable[blob] = (
                "a Git LFS pointer, not the kernel (the trace was cloned without git-lfs: "
                "its history holds no kernel source to mine)"
            )
        else:
            dsl[blob] = detect_dsl(data)
    return dsl, unusable


def redecode_messages(history: History, commits: list[Commit]) -> tuple[list[Commit], list[str]]:
    """Commits whose message did not decode as UTF-8, read again from their objects and decoded by the
    declared or detected encoding (`optrace.ingest.encoding`); one warning per such commit."""
    bad = [c.sha for c in commits if garbled(c.subject) or garbled(c.body)]
    if not bad:
        return commits, []
    warnings, fixed = [], {}
    by_sha = {c.sha: c for c in commits}  # one look-up per commit: a hostile trace may garble them all
    for sha, raw in history.read_blobs(bad, MAX_MESSAGE_BYTES + 64 * 1024):
        msg = commit_message(raw) if raw is not None else None
        commit = by_sha[sha]
        if msg is not None and msg.encoding == "utf-8":
            continue  # UTF-8 after all: the message itself holds U+FFFD, as git log gave it
        if msg is None or msg.encoding is None:
            # left out: the subject keeps what decoded (its grammar still names the version), the body goes
            fixed[sha] = replace(commit, subject=commit.subject.replace(REPLACEMENT, ""), body="")
            warnings.append(f"commit {sha[:12]}: message is not text in UTF-8, Windows-1252 or Latin-1; body left out")
        else:
            fixed[sha] = replace(commit, subject=msg.subject, body=msg.body)
            warnings.append(f"commit {sha[:12]}: message decoded as {msg.encoding} (not UTF-8)")
    return [fixed.get(c.sha, c) for c in commits], warnings


def drop_unusable_kernels(rows: list[dict], commits: list[Commit], unusable: dict[str, str]) -> list[str]:
    """Versions whose kernel.py is not source text get no kernel blob (no DSL from it, no diff); one
    warning per cause. Returns the warnings."""
    warnings = []
    by_cause: dict[str, list[str]] = {}  # one warning per cause, however many blobs share it
    for r in rows:
        if r["kernel_blob"] in unusable:
            by_cause.setdefault(unusable[r["kernel_blob"]], []).append(r["version"])
            r["kernel_blob"] = None
    for why, versions in sorted(by_cause.items()):
        warnings.append(f"{KERNEL_FILE} of {', '.join(versions)} is {why}; not used as source")
    by_sha = {r["sha"]: r["version"] for r in rows if r["sha"]}
    odd: dict[str, list[str]] = {}
    for c in commits:
        if c.kernel_mode and c.kernel_mode not in REGULAR_MODES and c.sha in by_sha:
            odd.setdefault(c.kernel_mode, []).append(by_sha[c.sha])
    for mode, versions in sorted(odd.items()):
        what = KERNEL_MODE_NAMES.get(mode, f"not a regular file (mode {mode})")
        warnings.append(f"{KERNEL_FILE} of {', '.join(versions)} is {what}; not source")
    return warnings


def build_rows(
    hist: VersionIndex,
    memory: dict[int, StepRecord],
    captures: list[ProfileCapture],
    dsl_of_blob: dict[str, str],
    default_dsl: str,
) -> tuple[list[dict], list[str]]:
    warnings = list(hist.warnings)
    verdicts: dict[int, tuple[str, str]] = {}
    vc: VersionCommits | None
    for n, vc in hist.versions.items():
        verdict, basis, warn = decide_verdict(vc)
        verdicts[n] = (verdict, basis)
        warnings += warn
    # A skill-era `V5: revert V4` undoes V4: V4's change did not survive, and V5 states why (one lever).
    reverted_by: dict[int, str] = {}
    for n, vc in hist.versions.items():
        for _, claim in vc.commits:
            if claim.reverts is not None and verdicts.get(claim.reverts, ("",))[0] == "kept":
                verdicts[claim.reverts] = ("reverted", f"undone by v{n}'s revert commit")
                reverted_by[claim.reverts] = f"v{n}"

    by_version: dict[str, list[ProfileCapture]] = {}
    for cap in captures:
        if cap.version:
            by_version.setdefault(cap.version, []).append(cap)

    rows = []
    for n in sorted(set(hist.versions) | set(memory)):
        vc, rec = hist.versions.get(n), memory.get(n)
        key = f"v{n}"
        commit = vc.last if vc else None
        claims = [cl for _, cl in vc.commits] if vc else []
        subject_text = " ".join(c.subject for c, _ in vc.commits) if vc else ""
        verdict, basis = verdicts.get(n, ("none", "no commit carries this version"))
        caps = by_version.get(key, [])
        outcome = next((cl.outcome for cl in reversed(claims) if cl.outcome), None)
        rows.append(
            {
                "version": key,
                "n": n,
                "sha": commit.sha if commit else None,
                "parent": commit.parent if commit else None,
                "date": commit.date if commit else None,
                "subject": commit.subject if commit else None,
                "subject_fields": grammar.subject_fields(commit.subject if commit else "").to_json(),
                "body": commit.body if commit else None,
                "verdict": verdict,
                "verdict_basis": basis,
                "outcome": outcome,
                "kernel_changed": any(c.kernel_changed for c, _ in vc.commits) if vc else False,
                "kernel_blob": commit.kernel_blob if commit else None,
                "dsl": dsl_of_blob.get(commit.kernel_blob, default_dsl)
                if commit and commit.kernel_blob
                else default_dsl,
                "geomean_us": rec.geomean_us if rec else None,
                "number_note": (rec.number_note if rec else "no step record (memory/v<N>.json)"),
                "by_shape_us": rec.by_shape_us if rec else {},
                "correctness": rec.correctness if rec else {"status": None, "max_abs_err": None, "max_rel_err": None},
                "quality_gate": rec.quality_gate if rec else {"result": None, "failure_reason": None},
                "carried_from": rec.carried_from if rec else None,
                "no_change": grammar.has_no_change(subject_text),
                "infrastructure": grammar.has_infra(subject_text),
                "deadend_items": own_levers(n, vc, memory) if vc else [],
                "pitfalls": [{"text": p.text, "fix": p.fix, "cause": p.cause, "lesson": p.lesson} for p in rec.pitfalls]
                if rec
                else [],
                "open_directions": list(rec.open_directions) if rec else [],
                "action_category": rec.action_category if rec else None,
                "action_description": rec.action_description if rec else None,
                "speedup_vs_ref": rec.speedup_vs_ref if rec else None,
                "evidence_summary": rec.evidence_summary if rec else None,
                "bottleneck_type": rec.bottleneck_type if rec else None,
                "expected_impact": rec.expected_impact if rec else None,
                "experiments": list(rec.experiments) if rec else [],
                "harness_files": sorted(
                    {c.path for cm, _ in (vc.commits if vc else []) for c in cm.changes if harness_file(c.path)}
                ),
                "reverts": next((f"v{cl.reverts}" for cl in claims if cl.reverts is not None), None),
                "reverted_by": reverted_by.get(n),
                "profile_dirs": [c.dir for c in caps],
                "usable_profile_dirs": [c.dir for c in caps if c.usable],
            }
        )
    return rows, warnings


def _words(text: str | None) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", (text or "").lower()) if len(w) > 2}


def own_levers(n: int, vc: VersionCommits, memory: dict[int, StepRecord]) -> list[str]:
    """The dead-end levers version n's commits list that are its own. A commit carrying several versions
    (classify_commits) lists one lever per step record: each lever goes to the version whose record's
    description shares most of its words, the listed order breaking ties (the subject lists them in
    version order), so a lever is cited at its own step, never at its neighbour's."""
    mine: list[str] = []
    for commit, claim in vc.commits:
        carried = [m for m in carried_versions(commit, claim) if m in memory] or [n]
        for i, item in enumerate(claim.deadend_items):
            if len(carried) == 1:
                owner = n
            else:
                words = _words(item)
                by_order = carried[min(i, len(carried) - 1)]
                owner = max(
                    carried,
                    key=lambda m: (len(words & _words(memory[m].action_description)), m == by_order),
                )
            if owner == n and item not in mine:
                mine.append(item)
    return mine


def carried_versions(commit: Commit, claim: grammar.SubjectClaim) -> list[int]:
    """The versions one untagged dead-end commit records (`dead-end recorded: A, B` adding memory/v8.json
    and v9.json carries both, one lever each), or [] when it is an ordinary commit of one version."""
    if claim.kind != "untagged" or not claim.deadend_items:
        return []
    added = {int(m.group(1)) for p in commit.added("memory/") if (m := re.match(MEMORY_VERSION_RE, p))}
    return sorted(added) if len(added) > 1 else []


def resolve_target(meta: Metadata, over: Overrides, table: HardwareTable, trace: str) -> tuple[Target, list[str]]:
    warnings = []
    target: Target | None
    if over.hardware or over.product or over.vendor or over.arch:
        target = target_from_override(over.vendor, over.arch, over.product or over.hardware, table)
    else:
        target = resolve(meta.hardware_candidates, table)
        products = {p for _, p in products_named(meta.hardware_candidates, table)}
        if len(products) > 1:
            warnings.append(
                f"sources name different GPUs ({', '.join(sorted(products))}); used {target.product if target else '?'}"
            )
    if target is None:
        raise InputError(
            trace,
            "states no GPU (looked in solution.json, definition.json, traces.jsonl, framework_baseline.json, "
            "README.md and the workspace name); state it with --config hardware=<GPU> (e.g. H100) or a "
            "`product` column in the trace sheet",
        )
    if not in_store_vocabulary(target.arch):
        warnings.append(
            f"arch {target.arch!r} ({target.product}) is not in the store's scope vocabulary; its records cannot be scoped"
        )
    return target, warnings


def harness_of(meta: Metadata, over: Overrides) -> str:
    """The harness as the trace names it: the user's word, the README's `- harness:` line; else what the
    benchmark files say (dialect, config.json's runs). A step record's `measurement_source` names how a
    number was taken (`abba_verification`), not the harness."""
    if over.harness:
        return over.harness
    if meta.harness:
        return meta.harness
    name = {"sol-execbench": "SOL-ExecBench harness", "flashinfer-bench": "FlashInfer-Bench evaluator"}.get(
        meta.dialect or "", "the trace's own benchmark harness"
    )
    if meta.timed_runs:
        warm, timed = meta.timed_runs
        seed = f" (seed {meta.seed})" if meta.seed is not None else ""
        return f"{name}, {warm} warm-up and {timed} timed runs{seed}"
    return name


def ingest(
    trace_path: str | Path,
    *,
    label: str | None,
    table: HardwareTable,
    over: Overrides,
    non_target: list[str],
    scratch: Path | None = None,
    denylist: tuple[str, ...] = (),
) -> tuple[list[dict], list[dict], dict, list[dict]]:
    with open_trace(trace_path, scratch) as trace:
        # a directory name holding a denylisted term never names the operator (nor, through it, an id)
        denied = denylist_pattern(denylist)
        name, _ = safe_label(trace.name, str(trace_path), denied, label)
        trace.history.start_log()  # git walks the history while the trace's files are read
        memory = scan_memory(trace.files)
        meta_in = read_metadata(trace.files, trace.name)
        captures = scan_profiles(trace.files, non_target, denied)
        autotune = ingest_autotune(trace.files)
        commits = trace.history.commits()
        if not commits:
            raise InputError(trace_path, "the repository has no commits")
        commits, encoding_warnings = redecode_messages(trace.history, commits)
        hist = classify_commits(commits)
        blobs = {c.kernel_blob for c in commits if c.kernel_blob}
        dsl_of_blob, unusable_kernels = read_kernels(trace.history, blobs)
        head = commits[-1]
        files = trace.files
        target, hw_warnings = resolve_target(meta_in, over, table, str(trace_path))
        default_dsl = (
            over.dsl or dsl_from_languages(meta_in.languages) or dsl_of_blob.get(head.kernel_blob or "", "any")
        )
        # long-horizon captures are per episode: map them to their canonical version
        captures = [
            replace(c, version=f"v{hist.episode_version[c.episode]}")
            if c.version is None and c.episode in hist.episode_version
            else c
            for c in captures
        ]
        rows, warnings = build_rows(hist, memory.records, captures, dsl_of_blob, default_dsl)
        warnings += drop_unusable_kernels(rows, commits, unusable_kernels)
        warnings += encoding_warnings + memory.warnings + meta_in.warnings + hw_warnings
        warnings += [f"{d}: not a capture directory name; ignored" for d in ignored_profile_dirs(files, denied)]
        warnings += [
            f"{c.dir}: episode {c.episode} has no version in the history" for c in captures if c.version is None
        ]
        warnings += files.skipped()
        if trace.carries_untracked is not None:  # a bundle
            warnings += bundle_warning(commits, files)
        if not any(c.kernel_changed for c in commits):
            warnings.append(f"no commit changes {KERNEL_FILE}: kernel versions and diffs are unavailable")
        operator = meta_in.operator_name or name
        meta = {
            "slug": trace_slug(label or name),
            "source_label": label or name,
            "operator_name": operator,
            "operator_slug": operator_slug(operator),
            "workload_family": workload_family(operator),
            "description": meta_in.description,
            "axes": {"const": meta_in.const_axes, "var": meta_in.var_axes},
            "n_shapes": meta_in.n_shapes,
            "shape_axes": meta_in.shape_axes,
            "target": {
                "vendor": target.vendor,
                "arch": target.arch,
                "product": target.product,
                "isa": target.isa,
                "basis": target.basis,
            },
            "languages": meta_in.languages,
            "default_dsl": default_dsl,
            "harness": harness_of(meta_in, over),
            "head_sha": head.sha,
            "memory_variants": memory.variants,
            "non_version_commits": hist.non_version,
            "autotune": autotune.report.to_json() if autotune.report.sets else None,
            "warnings": warnings,
        }
        return rows, [c.to_row() for c in captures], meta, [r.to_json() for r in autotune.rows]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace ingest", description=__doc__)
    ap.add_argument("trace", help="a git work tree or a .bundle file")
    ap.add_argument("--out-dir", required=True, help="where versions.jsonl, profiles.jsonl, meta.json go")
    ap.add_argument("--label", help="source label (default: the trace directory name)")
    ap.add_argument("--targets", default=None, help="hardware table (default: the built-in one)")
    ap.add_argument("--hardware", help="GPU the trace ran on, e.g. H100 (overrides detection)")
    ap.add_argument("--vendor", help="override the vendor (nvidia, amd)")
    ap.add_argument("--arch", help="override the store arch (e.g. hopper)")
    ap.add_argument("--product", help="override the GPU product (a product of the hardware table)")
    ap.add_argument("--dsl", help="override the kernel DSL (e.g. triton)")
    ap.add_argument("--harness", help="override the benchmark harness name")
    add_denylist_argument(ap)
    ap.add_argument(
        "--non-target-kernels",
        default=",".join(DEFAULT_NON_TARGET),
        help="comma-separated harness kernels whose captures are unusable",
    )
    args = ap.parse_args(argv)
    table = HardwareTable.load(args.targets)
    over = Overrides(
        args.hardware or None,
        args.vendor or None,
        args.arch or None,
        args.product or None,
        args.dsl or None,
        args.harness or None,
    )
    non_target = [k.strip() for k in args.non_target_kernels.split(",") if k.strip()]
    out = Path(args.out_dir)
    # Ingest's objects live until it returns and hold no cycles: the cyclic collector would only walk
    # them again and again (~10 % of the CPU at 3000 versions).
    gc.disable()
    try:
        rows, profiles, meta, autotune = ingest(
            args.trace,
            label=args.label,
            table=table,
            over=over,
            non_target=non_target,
            scratch=out,
            denylist=read_denylist(variable=args.denylist_env),
        )
    finally:
        gc.enable()
    write_jsonl(out / "versions.jsonl", rows)
    write_jsonl(out / "profiles.jsonl", profiles)
    write_jsonl(out / "autotune.jsonl", autotune)
    write_json(out / "meta.json", meta)
    kept = sum(r["verdict"] == "kept" for r in rows)
    print(
        f"ingest: {meta['slug']}: {len(rows)} versions ({kept} kept), {len(profiles)} captures "
        f"({sum(p['usable'] for p in profiles)} usable), target {meta['target']['product']} "
        f"[{meta['target']['basis']}], {len(meta['warnings'])} warnings"
    )
    for w in meta["warnings"]:
        print(f"  warning: {w}")
    return 0
