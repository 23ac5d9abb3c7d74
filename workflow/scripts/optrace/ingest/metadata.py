"""Benchmark metadata of a trace in both dialects (FlashInfer-Bench and SOL-ExecBench / atrex).

definition.json names the operator and its axes; solution.json the language(s) and, sometimes, the
hardware; workload.jsonl the benchmarked shapes (bare Workload lines or Trace-wrapped ones). The GPU is
looked for wherever real traces state it, in priority order, and returned as candidates for the
hardware table: nothing here guesses.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from optrace.ingest.trace_files import TraceFiles, read_text
from optrace.jsonio import parse_untrusted

# SOL-ExecBench / FlashInfer-Bench language names -> store DSL vocabulary
LANGUAGE_DSL = {
    "triton": "triton",
    "tlx": "triton",
    "gluon": "gluon",
    "cute_dsl": "cutedsl",
    "cutedsl": "cutedsl",
    "cutlass": "cuda",
    "cuda": "cuda",
    "cuda_cpp": "cuda",
    "cpp": "cuda",
    "cudnn": "cuda",
    "cudnn_frontend": "cuda",
    "cublas": "cuda",
    "flydsl": "flydsl",
    "aiter": "aiter",
}
# Placeholders that name no GPU
NO_GPU_TOKENS = {"local", "any", "", "none", "unknown"}
# `[ \t]*`, not `\s*`: at each line start `\s*` would run over all following blank lines (quadratic)
# A value runs to the line's end, CRLF or not, and is never blank
README_HW_RE = re.compile(
    r"^[ \t]*[-*][ \t]*(platform|runtime arch|gpu|hardware)[ \t]*:[ \t]*(\S[^\r\n]*?)[ \t\r]*$", re.I | re.M
)
# `- harness: ...` / `- benchmark harness: ...` in the README's Task Context
README_HARNESS_RE = re.compile(
    r"^[ \t]*[-*][ \t]*(?:benchmark[ \t]+)?harness[ \t]*:[ \t]*(\S[^\r\n]*?)[ \t\r]*$", re.I | re.M
)
MAX_HARNESS_CHARS = 200


@dataclass
class Metadata:
    operator_name: str | None = None
    description: str | None = None
    const_axes: dict[str, object] = field(default_factory=dict)
    var_axes: list[str] = field(default_factory=list)
    n_shapes: int = 0
    shape_axes: dict[str, dict] = field(default_factory=dict)  # workload uuid -> its var-axis values
    languages: list[str] = field(default_factory=list)
    dialect: str | None = None  # "flashinfer-bench" | "sol-execbench" (from solution.json)
    hardware_candidates: list[tuple[str, str]] = field(default_factory=list)  # (source, text)
    harness: str | None = None  # the harness as the trace's README names it
    timed_runs: tuple[int, int] | None = None  # (warm-up, timed) runs per measurement, from config.json
    seed: int | None = None
    warnings: list[str] = field(default_factory=list)


def _json(files: TraceFiles, rel: str, warnings: list[str]) -> object:
    data = files.read_bytes(rel)
    if data is None:
        return None
    doc, problem = parse_untrusted(data)
    if problem:
        warnings.append(f"{rel}: {problem}; ignored")
    return doc


def _jsonl(files: TraceFiles, rel: str, warnings: list[str]) -> list[dict]:
    text = read_text(files, rel)
    rows, bad = [], 0
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        obj, problem = parse_untrusted(line)
        if problem:
            bad += 1
        elif isinstance(obj, dict):
            rows.append(obj)
    if bad:
        warnings.append(f"{rel}: {bad} line(s) not valid JSON; ignored")
    return rows


def _as_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float))]
    return []


def read_metadata(files: TraceFiles, workspace_name: str) -> Metadata:
    meta = Metadata()
    w = meta.warnings
    definition = _json(files, "definition.json", w)
    if isinstance(definition, dict):
        meta.operator_name = definition.get("name") if isinstance(definition.get("name"), str) else None
        if isinstance(definition.get("description"), str):
            meta.description = definition["description"].strip() or None
        for axis, spec in (definition.get("axes") or {}).items() if isinstance(definition.get("axes"), dict) else []:
            if isinstance(spec, dict) and spec.get("type") == "const" and "value" in spec:
                meta.const_axes[axis] = spec["value"]
            elif isinstance(spec, dict) and spec.get("type") in ("var", "expr"):
                meta.var_axes.append(axis)

    solution = _json(files, "solution.json", w)
    if isinstance(solution, dict):
        spec = found if isinstance(found := solution.get("spec"), dict) else {}
        if "languages" in spec:
            meta.dialect, meta.languages = "sol-execbench", [s.lower() for s in _as_list(spec["languages"])]
        elif "language" in spec:
            meta.dialect, meta.languages = "flashinfer-bench", [s.lower() for s in _as_list(spec["language"])]
        for tok in _as_list(spec.get("target_hardware")):
            if tok.strip().lower() not in NO_GPU_TOKENS:
                meta.hardware_candidates.append(("solution.json spec.target_hardware", tok))

    workloads = _jsonl(files, "workload.jsonl", w)
    # FlashInfer-Bench dataset lines wrap the workload in a Trace: {"workload": {...}, "solution": null}
    shapes = [row.get("workload", row) for row in workloads]
    shapes = [w for w in shapes if isinstance(w, dict)]
    meta.n_shapes = len(shapes)
    for w in shapes:
        if isinstance(w.get("uuid"), str) and isinstance(w.get("axes"), dict):
            meta.shape_axes[w["uuid"]] = w["axes"]

    for row in _jsonl(files, "traces.jsonl", w):
        env = (
            ((row.get("evaluation") or {}).get("environment") or {}) if isinstance(row.get("evaluation"), dict) else {}
        )
        if isinstance(env, dict) and isinstance(env.get("hardware"), str):
            meta.hardware_candidates.append(("traces.jsonl evaluation.environment.hardware", env["hardware"]))
            break

    baseline = _json(files, "framework_baseline.json", w)
    if isinstance(baseline, dict):
        for key in ("platform", "arch"):
            for tok in _as_list(baseline.get(key)):
                meta.hardware_candidates.append((f"framework_baseline.json {key}", tok))

    readme = read_text(files, "README.md", cap=256 * 1024) or ""
    for m in README_HW_RE.finditer(readme):
        meta.hardware_candidates.append((f"README.md '{m.group(1)}:' line", m.group(2)))
    for named in README_HARNESS_RE.finditer(readme):
        if harness := harness_name(named.group(1)):
            meta.harness = harness
            break

    config = _json(files, "config.json", w)  # SOL-ExecBench: {seed, warmup_runs, iterations, ...}
    if isinstance(config, dict):
        warm, timed, seed = (_count(config.get(k)) for k in ("warmup_runs", "iterations", "seed"))
        if warm is not None and timed is not None:
            meta.timed_runs = (warm, timed)
        meta.seed = seed

    if isinstance(definition, dict):
        for key in ("target_hardware", "gpu", "hardware"):
            for tok in _as_list(definition.get(key)):
                meta.hardware_candidates.append((f"definition.json {key}", tok))

    # current-era workspaces end in the platform: kernel_opt_<op>_<fw>_<platform>[_production]
    parts = [p for p in re.split(r"[_\-]", workspace_name.lower()) if p and p != "production"]
    if parts:
        meta.hardware_candidates.append(("workspace name suffix", parts[-1]))
    return meta


def harness_name(text: str) -> str | None:
    """A README's harness value as a name: control and format characters dropped, whitespace collapsed,
    a code span's backticks or quotes around it removed, at most MAX_HARNESS_CHARS; None if nothing is left."""
    kept = "".join(
        " " if c.isspace() else c for c in text if unicodedata.category(c) not in ("Cc", "Cf") or c.isspace()
    )
    name = " ".join(kept.split()).strip("`'\" ")
    return name[:MAX_HARNESS_CHARS].rstrip() or None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def dsl_from_languages(languages: list[str]) -> str | None:
    """The solution's declared language as a store DSL, ignoring the PyTorch reference wrapper."""
    for lang in languages:
        if lang in LANGUAGE_DSL:
            return LANGUAGE_DSL[lang]
    return None
