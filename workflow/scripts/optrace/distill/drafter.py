"""The deterministic drafter (`distill.mode: draft`): one packet -> one record, or a reason it cannot.

    draft_record(packet, code) -> (record | None, reason)

It fills only what the packet supports mechanically: scope, id, level, episode key and provenance from
the packet's target and provenance layers; a verbatim snippet (whole lines of the packet's code file);
measured gain numbers from `measurements`; and prose copied only from the scrubbed agent-facing layer.
It never scores (the stage step ranks records) and never guesses:

- prose that states an absolute latency is not served (latencies live in `evidence.raw.effect` only);
- the bottleneck basis is "profiler" only when a usable capture measured the kernel under test;
- an anti-strategy is written only as an established fact: the packet's precheck found a cause, a
  causal sentence of at least 40 characters is copied from its prose, and a condition is stated.

`python -m optrace.distill.drafter PACKET.json` prints the draft of one packet (an agent's starting point).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optrace.facts import ABSOLUTE_LATENCY, MECHANISM_RE, MIN_MECHANISM_CHARS, NON_MECHANISM
from optrace.jsonio import read_json
from optrace.rows import episode_technique

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
SOURCE_FORMAT = "source (verbatim)"
MAX_SNIPPET_CHARS = 6000  # the store's snippets: median ~0.8 KB, p99 ~11 KB
# Never a score: the stage step computes rank from the worth formula. 0.0 / provisional reads as
# "not ranked yet" and is valid under the contract (score in [0, 1]).
UNRANKED = {"score": 0.0, "tier": "provisional"}
# The ISA an architecture compiles for: the checkable `sm_arch` of an established fact when the packet
# names no product ISA (a trace scoped to an arch only).
ARCH_ISA = {
    "ampere": "sm_80",
    "hopper": "sm_90",
    "blackwell": "sm_100",
    "blackwell-ultra": "sm_103",
    "blackwell-geforce": "sm_120",
    "cdna3": "gfx942",
    "cdna4": "gfx950",
}
# Conditions stated in the text of the attempt itself (what was tried, on which dtype or shapes).
DTYPE_RE = re.compile(r"\b(?:bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int8|e4m3|e5m2|bfloat16|float16|float32)\b", re.I)
SHAPE_RE = re.compile(
    r"\b(?:batch_size|batch|seq_len|seqlen|num_tokens|tokens|hidden(?:_size)?|head_dim|[MNK])"
    r"\s*(?:<=|>=|==|<|>|=|≤|≥)\s*\d+"
)
MAX_CAUSE_SENTENCES = 3
MAX_REFERENCE_CHARS = 20_000  # a reference kernel is its whole source (the packet caps kernels at 40 000)
# Categories that name the run's process, not a technique: never a tag.
PROCESS_CATEGORIES = {"baseline", "exhaustive_search", "long_horizon_episode", "fast_long_horizon_episode"}
# Capture numbers served as retrieval signals (never the duration: absolute latency is provenance only).
SIGNAL_METRICS = (
    "sm_throughput_pct",
    "memory_throughput_pct",
    "l2_hit_rate_pct",
    "achieved_occupancy_pct",
    "registers_per_thread",
)
SPECULATION_RE = re.compile(r"\b(?:may|might|maybe|possibly|perhaps|probably)\b", re.I)
ACCURACY_RE = re.compile(r"mismatch|max_(?:abs|rel)_err|accuracy|precision|numerical|\bnan\b|incorrect|tolerance", re.I)
API_RE = re.compile(
    r"unsupported|not supported|does not support|not implemented|cannot (?:express|be expressed|lower|compile)"
    r"|compile error|COMPILE_ERROR|do(?:es)? not compile|fails to compile",
    re.I,
)
SCOPE_KEYS = ("vendor", "arch", "product", "dsl", "operator_family")
_PIECE_END = re.compile(r"(?<=[.!?:])\s+")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    [
        "the",
        "and",
        "with",
        "for",
        "per",
        "was",
        "were",
        "that",
        "this",
        "than",
        "then",
        "from",
        "into",
        "onto",
        "over",
        "each",
        "its",
        "are",
        "has",
        "have",
        "but",
        "not",
        "only",
        "also",
        "when",
        "where",
        "which",
        "what",
    ]
)
_JIT_DECORATOR = re.compile(r"^\s*@([\w.]*)(?:jit|kernel)\b")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")
# `__global__ void __launch_bounds__(256, 2) sgemm_warptile(`: the name is the word before the argument list,
# never the qualifier's
_CUDA_ENTRY = re.compile(
    r"__global__\s+(?:(?:void|static|inline|__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\))\s+)*(\w+)\s*\("
)


@dataclass
class Draft:
    """The type-specific parts of a record; `thin` names fields the packet was too thin to fill."""

    payload: dict
    gain: dict
    effect: dict  # evidence.raw.effect: the absolute numbers, human-only
    thin: list[str] = field(default_factory=list)


# ---- prose ------------------------------------------------------------------------------------


def servable(text: object) -> str | None:
    """Packet prose fit for served text: non-blank, whitespace collapsed, no absolute latency."""
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    return text if text and not ABSOLUTE_LATENCY.search(text) else None


def first_servable(*texts: object) -> str | None:
    return next((s for s in map(servable, texts) if s), None)


def pieces(text: object) -> list[str]:
    """Sentences, and the clauses a colon introduces ("within noise: the halved warp count ...")."""
    if not isinstance(text, str):
        return []
    return [p for p in (" ".join(s.split()).rstrip(":").strip() for s in _PIECE_END.split(text)) if p]


def quote(text: str, chosen: list[str]) -> str:
    """The chosen pieces of a text as the text writes them: neighbours keep the separator between them
    (a colon stays a colon), pieces apart are joined by a space."""
    source = " ".join(text.split())
    spans, at = [], 0
    for piece in chosen:
        start = source.find(piece, at)
        if start < 0:
            return " ".join(chosen)
        spans.append((start, start + len(piece)))
        at = start + len(piece)
    out, (start, end) = [], spans[0]
    for nxt_start, nxt_end in spans[1:]:
        if source[end:nxt_start].strip() in ("", ":", ".", "!", "?"):
            end = nxt_end
        else:
            out.append(source[start:end])
            start, end = nxt_start, nxt_end
    out.append(source[start:end])
    return " ".join(out)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def is_mechanism(piece: str) -> bool:
    """A causal sentence the established-fact gate accepts, without speculation or absolute latency."""
    return (
        len(piece) >= MIN_MECHANISM_CHARS
        and bool(MECHANISM_RE.search(piece))
        and not NON_MECHANISM.search(piece)
        and not SPECULATION_RE.search(piece)
        and servable(piece) is not None
    )


def mechanism_sentence(packet: dict) -> str | None:
    """The first causal sentence of the packet's prose that explains this failed lever, or None.

    Looked for, in order: the lever's own explanation (its sentences after the first, which only names
    the attempt), the fix, then the version's gate verdict and commit body, then its recorded pitfalls.
    When the version's prose may be about other levers too (a commit listing several dead ends, a
    pitfall recorded in a kept version, the version's other pitfalls), a sentence must share at least
    half of the lever's words, so one lever never inherits another's cause. Commit subjects are
    bookkeeping ("reverted (...) — dead-end recorded"), never a mechanism.
    """
    a = packet["agent_facing"]
    said = a["what_the_run_said"]
    lever = a.get("the_failed_lever") or ""
    words = content_words(lever)
    needed = min(len(words), max(2, (len(words) + 1) // 2))
    shared = packet["seg_kind"] != "deadend-prose"  # only a prose dead end owns its version's prose alone
    sources = [(a.get("why_it_failed"), False, 0), (lever, False, 1), (a.get("how_it_was_fixed"), False, 0)]
    sources += [(said.get(k), shared, 0) for k in ("gate_verdict", "commit_body", "evidence_summary")]
    sources += [
        (p.get("pitfall"), True, 0) for p in a.get("pitfalls_recorded_here", []) if p.get("pitfall") != lever
    ]  # a curated pitfall is listed there too: not its own evidence
    for text, needs_overlap, skip in sources:
        found = [
            p
            for p in pieces(text)[skip:]
            if is_mechanism(p) and (not needs_overlap or len(words & content_words(p)) >= needed)
        ]
        if found:  # every causal sentence of the first source that has one: the whole stated cause
            return quote(text, found[:MAX_CAUSE_SENTENCES])
    return None


def causal_pieces(text: object) -> list[str]:
    """The sentences of a text that state a cause (servable, no speculation)."""
    return [p for p in pieces(text) if is_mechanism(p)]


def strategy_mechanism(packet: dict, change: str) -> str | None:
    """Why this step is faster, from its own evidence: the causal sentences of its commit body, else of the
    evidence summary or expected impact its step record states. Never this version's own capture
    conclusion (that diagnoses what the next step should attack) and never a restatement of the change."""
    said = packet["agent_facing"]["what_the_run_said"]
    for key in ("commit_body", "evidence_summary", "expected_impact"):
        found = [p for p in causal_pieces(said.get(key)) if lever_key(p) != lever_key(change)]
        if found:
            return quote(said[key], found)
    body = servable(said.get("commit_body"))
    return body if body and lever_key(body) != lever_key(change) else None


def lever_key(text: str) -> str:
    return " ".join(_WORD.findall((text or "").lower()))


def single_match(pattern: re.Pattern, text: str) -> str | None:
    """The one value the text states (two different dtypes, say, state no single condition)."""
    found = {m.group(0) for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None


# ---- code -------------------------------------------------------------------------------------


def within_budget(lines: list[str]) -> str:
    """Whole lines, as many as fit the snippet budget (always at least one)."""
    out: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if out and size > MAX_SNIPPET_CHARS:
            break
        out.append(line)
    return "\n".join(out)


def diff_hunks(code: str | None) -> list[list[str]]:
    """The hunks of a unified diff (file headers dropped: they name a trace file)."""
    hunks: list[list[str]] = []
    for line in (code or "").splitlines():
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    return hunks


def diff_snippet(code: str | None) -> str | None:
    """Whole hunks, in order, while they fit the budget; the first hunk is cut at whole lines if it alone is too big."""
    hunks = diff_hunks(code)
    if not hunks:
        return None
    taken: list[str] = []
    size = 0
    for hunk in hunks:
        size += sum(len(line) + 1 for line in hunk)
        if taken and size > MAX_SNIPPET_CHARS:
            break
        taken += hunk
    return within_budget(taken)


SMALL_EDIT_LINES = 12  # changed lines up to which an edit is small (low risk when it passed correctness)


def diff_size(code: str | None) -> tuple[int, int]:
    """(changed lines, lines of context + changes) of a unified diff."""
    lines = [line for hunk in diff_hunks(code) for line in hunk[1:]]
    changed = max(sum(line.startswith("+") for line in lines), sum(line.startswith("-") for line in lines))
    return changed, len(lines)


def edit_scope(code: str | None) -> str:
    """one-line when at most one line went out and one came in; a diff that replaces most of what it shows
    is a new architecture; anything between rewrites the kernel."""
    changed, shown = diff_size(code)
    if changed <= 1:
        return "one-line"
    unchanged = shown - sum(1 for hunk in diff_hunks(code) for line in hunk[1:] if line[:1] in "+-")
    return "architecture" if changed > 3 * SMALL_EDIT_LINES and unchanged < changed else "kernel-rewrite"


def cost_of(code: str | None, status: str | None) -> dict:
    """Scope from the diff's shape, risk from its size and whether the step passed its correctness check."""
    changed, _ = diff_size(code)
    scope = edit_scope(code)
    if status != "PASS":
        return {
            "edit_scope": scope,
            "risk": "high",
            "risk_basis": "no passing correctness check is recorded for this step",
        }
    small = changed <= SMALL_EDIT_LINES
    return {
        "edit_scope": scope,
        "risk": "low" if small else "med",
        "risk_basis": "a small edit that passed the harness's correctness check"
        if small
        else "a large edit; it passed the harness's correctness check",
    }


def _block_end_python(lines: list[str], start: int) -> int:
    """End of a decorated function: decorators and header at its indent, then its indented body."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    seen_def, j = False, start + 1
    while j < len(lines):
        stripped = lines[j].strip()
        lead = len(lines[j]) - len(lines[j].lstrip())
        if stripped and lead <= indent:
            if not seen_def and (stripped.startswith("@") or _PY_DEF.match(lines[j])):
                seen_def = seen_def or bool(_PY_DEF.match(lines[j]))
            elif not stripped.startswith((")", "]", "}")):
                break
        j += 1
    return j


def _block_end_c(lines: list[str], start: int) -> int:
    indent = len(lines[start]) - len(lines[start].lstrip())
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == "}" and len(lines[j]) - len(lines[j].lstrip()) <= indent:
            return j + 1
    return len(lines)


def jit_dsl(decorator_prefix: str) -> str:
    """The DSL a jit decorator compiles for: `gluon.` -> gluon, `cute.` -> cutedsl, else triton."""
    prefix = decorator_prefix.lower()
    return "gluon" if "gluon" in prefix else "cutedsl" if "cute" in prefix else "triton"


def kernel_blocks(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(start, end, dsl, name) of every jit-compiled Python function and every CUDA __global__ kernel."""
    out: list[tuple[int, int, str, str | None]] = []
    i = 0
    while i < len(lines):
        jit = _JIT_DECORATOR.match(lines[i])
        cuda = _CUDA_ENTRY.search(lines[i])
        if jit:
            end = _block_end_python(lines, i)
            name = next((m.group(1) for m in map(_PY_DEF.match, lines[i:end]) if m), None)
            out.append((i, end, jit_dsl(jit.group(1)), name))
            i = end
        elif cuda:
            end = _block_end_c(lines, i)
            out.append((i, end, "cuda", cuda.group(1)))
            i = end
        else:
            i += 1
    return [(start, end, dsl, name) for start, end, dsl, name in out if name]


def kernel_source(code: str | None, dsl: str) -> tuple[str | None, str | None]:
    """(snippet, core kernel name) of a reference kernel: the whole source, without the kernels of another
    jit DSL (a Gluon kernel's Triton fallback is not part of it), and the largest kernel of the record's
    own DSL as its core."""
    lines = (code or "").splitlines()
    if not any(line.strip() for line in lines):
        return None, None
    blocks = kernel_blocks(lines)
    mine = [b for b in blocks if b[2] == dsl] or ([b for b in blocks if b[2] == "cuda"] if dsl == "cuda" else [])
    foreign = [b for b in blocks if b[2] != dsl and b[2] != "cuda"] if mine else []
    drop = {j for start, end, _, _ in foreign for j in range(start, end)}
    kept = [line for j, line in enumerate(lines) if j not in drop]
    out: list[str] = []
    size = 0
    for line in _trim_blank(kept):
        size += len(line) + 1
        if out and size > MAX_REFERENCE_CHARS:
            break
        out.append(line)
    core = max(mine, key=lambda b: b[1] - b[0])[3] if mine else None
    return "\n".join(out), core


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


# ---- shared parts -----------------------------------------------------------------------------


def operator_name(packet: dict) -> str:
    return packet["target"]["scope"]["operator_family"]


def technique(packet: dict) -> str:
    """The technique part of the episode key (`<arch>|<dsl>|<family>|<technique>[#<n>]|<level>`), as a
    tag; a trace's repeat mark `#<n>` and a reference kernel's snapshot kind (`final_`, `snapshot_`) are
    no technique."""
    name = tag(episode_technique(packet["target"]["episode_key"]) or "")
    if packet.get("record_type") == "reference-kernel":
        name = re.sub(r"^(?:final|snapshot)-", "", name)
    return name


def measured(packet: dict) -> bool:
    return packet["agent_facing"]["measurements"].get("geomean_us") is not None


def usable_profiler(packet: dict) -> dict | None:
    profiler = packet["agent_facing"]["profiler"]
    return profiler if profiler.get("ncu_measured_the_kernel_under_test") is True else None


def problem(packet: dict) -> dict:
    """What the record is about; the bottleneck only from a usable capture, else null."""
    op = packet["agent_facing"]["operator"]
    profiler = usable_profiler(packet)
    conclusion = pieces(servable(profiler.get("conclusion")) if profiler else None)
    statement = servable(op.get("what_it_computes")) or f"The {operator_name(packet)} operator on {op['gpu']}."
    return {
        "statement": statement,
        "target": op["gpu"],
        "operator": operator_name(packet),
        "bottleneck": conclusion[0] if conclusion else None,
        "dsl": op["dsl"],
    }


def bottleneck_evidence(packet: dict) -> dict:
    profiler = usable_profiler(packet)
    if profiler is None:
        return {"basis": "bench-only", "tool": None}
    note = servable(profiler.get("conclusion"))
    return {"basis": "profiler", "tool": "ncu", **({"note": note} if note else {})}


def tag(text: str) -> str:
    return "-".join(_WORD.findall(text.lower().replace("_", " ")))


def retrieval(packet: dict) -> dict:
    target, op = packet["target"], packet["agent_facing"]["operator"]
    scope = {k: target["scope"][k] for k in SCOPE_KEYS}  # the contract's order (the packet's is sorted)
    constants = {k: v for k, v in op["fixed_axes"].items() if isinstance(v, (str, int, float, bool))}
    if constants:
        scope["shape_signature"] = constants  # semantic constants; size axes go to shape_regime
    category = packet["agent_facing"]["what_the_run_said"].get("category_hint") or ""
    category = "" if category.lower() in PROCESS_CATEGORIES else category
    tags = list(dict.fromkeys(t for t in (technique(packet), tag(category)) if t))
    found = symptoms(packet)
    return {
        "scope": scope,
        "generality": {"arch": scope["arch"], "language": scope["dsl"], "workload_family": target["workload_family"]},
        "signals": {
            "metrics": signal_metrics(packet),
            "shape_regime": {
                "predicate": "*",
                "var_axes": [a for a in op["variable_axes"] if isinstance(a, str)],
                "n_shapes": op["n_benchmarked_shapes"],
            },
            "symptoms": found,
        },
        "technique_tags": tags,
        "triggers": [f"{s} {operator_name(packet)} kernel" for s in found],
    }


def symptoms(packet: dict) -> list[str]:
    """Symptom tags: the bottleneck type the step record states (the one this step attacked), and for a failed
    lever or a kept kernel the stall reasons and symptoms of its own usable capture (a strategy's capture was
    taken after its change: it diagnoses the next step, not the symptom this one fixed)."""
    a = packet["agent_facing"]
    named = [a["what_the_run_said"].get("bottleneck_type")]
    profiler = usable_profiler(packet) if packet["record_type"] != "strategy" else None
    metrics = (profiler or {}).get("metrics") or {}
    named += list(metrics.get("symptoms") or []) + [f"{name} stalls" for name in (metrics.get("stall_reasons") or {})]
    out = [tag(n) for n in named if isinstance(n, str) and tag(n) and not _NOT_A_SYMPTOM.match(n)]
    return list(dict.fromkeys(out))


_NOT_A_SYMPTOM = re.compile(r"^(?:episode[-_ ]derived|not[-_ ]profiled\w*|unknown|none|n/?a)$", re.I)


def signal_metrics(packet: dict) -> dict:
    """Throughput, occupancy and register numbers of this version's own usable capture."""
    profiler = usable_profiler(packet)
    metrics = (profiler or {}).get("metrics") or {}
    return {k: metrics[k] for k in SIGNAL_METRICS if type(metrics.get(k)) in (int, float)}


def evidence(packet: dict, effect: dict) -> dict:
    op, target, prov = packet["agent_facing"]["operator"], packet["target"], packet["provenance"]
    measured_on = {
        "harness": op.get("harness"),
        "gpu": op["gpu"],
        "track": f"{target['scope']['arch']}/{target['scope']['dsl']}",
    }
    return {
        "summary": {
            "confidence": "measured" if measured(packet) else "inferred",
            "bottleneck_evidence": bottleneck_evidence(packet),
            "measured_on": {k: v for k, v in measured_on.items() if isinstance(v, str) and v},
        },
        "raw": {
            "source_repo": prov["source_label"],
            "version": prov["version"],
            "git_commit": prov["commit"],
            "effect": effect,
        },
    }


def measured_effect(packet: dict, **extra: Any) -> dict:
    """Absolute geomeans for auditing, human-only."""
    values = {"new_geomean_us": packet["agent_facing"]["measurements"].get("geomean_us"), **extra}
    values = {k: v for k, v in values.items() if v is not None}
    return {"basis": "measured" if measured(packet) else "qualitative", **values}


def correctness(measurements: dict) -> dict:
    c = measurements.get("correctness") or {}
    out = {"gate": c["status"]} if isinstance(c.get("status"), str) else {}
    if type(c.get("max_abs_err")) in (int, float):
        out["max_diff"] = c["max_abs_err"]
    return {"correctness": out} if out else {}


# ---- per type ---------------------------------------------------------------------------------


def strategy_draft(packet: dict, code: str | None) -> Draft | str:
    a = packet["agent_facing"]
    said, m = a["what_the_run_said"], a["measurements"]
    pct = m.get("improve_pct_vs_floor")
    if type(pct) not in (int, float):
        return "no measured gain over the previous floor"
    change = first_servable(said.get("change"), said.get("commit_subject"))
    if change is None:
        return "nothing servable says what changed (absent, or only with absolute latencies)"
    snippet = diff_snippet(code)
    if snippet is None:
        return "no diff against the previous kept milestone to quote"
    thin = []
    base = a.get("builds_on") or {}
    approach = servable(base.get("previous_approach"))
    if approach is None:
        thin.append("trace.builds_on.approach")
        approach = (
            "The untouched baseline kernel." if base.get("was_the_untouched_baseline") else "The previous kept kernel."
        )
    mechanism = strategy_mechanism(packet, change)
    if mechanism is None:
        thin.append("mechanism")
    next_steps = [s for s in (servable(d.get("direction")) for d in a["open_directions"]) if s]
    if not next_steps:
        thin.append("next_steps")
    status = (m.get("correctness") or {}).get("status")
    n = a["operator"]["n_benchmarked_shapes"]
    payload = {
        "goal": f"Cut the latency of {operator_name(packet)} on {a['operator']['gpu']}: {change}",
        "problem": problem(packet),
        "trace": {
            "builds_on": {"approach": approach, "is_baseline": bool(base.get("was_the_untouched_baseline"))},
            "technique_here": [technique(packet)],
        },
        "change": change,
        "mechanism": mechanism or "",
        "implementation": {"format": DIFF_FORMAT, "snippet": snippet},
        "cost": cost_of(code, status),
        "next_steps": next_steps,
    }
    gain = {
        "basis": "measured",
        "kind": "performance",
        "primary": "latency",
        "pct": pct,
        "metrics": [
            {
                "metric": "latency",
                "direction": "lower-better",
                "source": "step-record",
                "delta_pct": pct,
                "measured_over": f"geomean over {n} benchmarked shapes" if n else "geomean over the benchmarked shapes",
            }
        ],
        **correctness(m),
    }
    return Draft(
        payload, gain, measured_effect(packet, parent_geomean_us=m.get("floor_before_us"), delta_pct=pct), thin
    )


def verdict_of(packet: dict, texts: list[str]) -> str:
    """accuracy when the step failed its correctness check or says so; an API limit when it says so; else not worth it."""
    status = (packet["agent_facing"]["measurements"].get("correctness") or {}).get("status")
    joined = " ".join(texts)
    if API_RE.search(joined):  # a build that fails is a limit of the toolchain, whatever correctness says
        return "api-limitation"
    if (status and status != "PASS") or ACCURACY_RE.search(joined):
        return "accuracy-gate/ceiling"
    return "not-worth-it-here"


def fact_condition(packet: dict, text: str) -> dict:
    """The GPU's ISA and the toolchain, plus a dtype or shape regime when the attempt's own prose states one."""
    scope = packet["target"]["scope"]
    isa = packet["agent_facing"]["operator"].get("isa") or ARCH_ISA.get(scope["arch"])
    condition = {
        "sm_arch": isa,
        "shape_regime": single_match(SHAPE_RE, text),
        "dtype": single_match(DTYPE_RE, text),
        "toolchain": scope["dsl"] if scope["dsl"] != "any" else None,
    }
    return {k: v for k, v in condition.items() if v}


def fact_text(packet: dict) -> str:
    """The prose a condition may be read from: the lever, its own cause and fix, the version's commit."""
    a = packet["agent_facing"]
    said = a["what_the_run_said"]
    own = packet["seg_kind"] == "deadend-prose"  # an experiment's version prose is about the kept change
    parts = [a.get("the_failed_lever"), a.get("why_it_failed"), a.get("how_it_was_fixed")]
    parts += [said.get("commit_body"), said.get("gate_verdict")] if own else []
    return " ".join(p for p in parts if isinstance(p, str))


def observed_text(packet: dict) -> str | None:
    """What was measured when the lever was tried: its own verdict or cause when it states numbers, then the
    step's measured change against the floor it was tried against (as the packet writes it)."""
    a = packet["agent_facing"]
    m = a["measurements"]
    own = packet["seg_kind"] in ("deadend-prose", "deadend-experiment")
    said = [servable(a["what_the_run_said"].get("gate_verdict")) if own else None]
    said += [p for p in pieces(a.get("why_it_failed")) if re.search(r"\d", p) and servable(p)]
    text = next((x for x in said if x), None)
    pct = m.get("improve_pct_vs_floor")
    if type(pct) in (int, float) and packet["seg_kind"] != "curated-pitfall":
        move = f"The attempt measured {pct}% against the floor it was tried against ({'slower' if pct < 0 else 'not enough to keep'})."
        text = f"{text.rstrip('.')}. {move}" if text else move
    return text


def lesson_text(packet: dict, lever: str, mechanism: str) -> str:
    """What to do instead: the recorded fix, else the run's next direction, else keep the kernel without it.
    Never the mechanism again."""
    a = packet["agent_facing"]
    words = content_words(lever)
    needed = min(len(words), max(2, (len(words) + 1) // 2))
    # the lever's own fix, else the fix of a pitfall this version recorded about the same lever
    fixes = [a.get("how_it_was_fixed")] + [
        p.get("fix")
        for p in a.get("pitfalls_recorded_here") or []
        if len(words & content_words(p.get("pitfall") or "")) >= needed
    ]
    for fix in map(servable, fixes):
        if fix and lever_key(fix) != lever_key(mechanism):
            return fix
    nxt = next((s for s in (servable(d.get("direction")) for d in a.get("open_directions") or []) if s), None)
    gpu = a["operator"]["gpu"]
    keep = f"Do not retry this lever on {gpu} while the cause above holds; keep the kernel without it."
    return f"{keep} Try instead: {nxt}" if nxt else keep


def anti_draft(packet: dict, code: str | None) -> Draft | str:
    """An established fact or nothing. The packet's precheck is only a hint: the drafter looks for the
    cause and the condition itself, in all of the lever's prose."""
    a = packet["agent_facing"]
    lever = servable(a.get("the_failed_lever"))
    if lever is None:
        return "the failed lever is absent or states absolute latencies"
    mechanism = mechanism_sentence(packet)
    if mechanism is None:
        return f"no causal sentence of at least {MIN_MECHANISM_CHARS} characters in the packet's prose"
    condition = fact_condition(packet, fact_text(packet))
    if not condition:
        return "no checkable condition (arch, shape regime, dtype or toolchain)"
    observed = observed_text(packet)
    payload = {
        "goal": f"Avoid retrying on {a['operator']['gpu']}: {lever}",
        "problem": problem(packet),
        "attempted": lever,
        "verdict": verdict_of(packet, [lever, mechanism, observed or ""]),
        "lesson": lesson_text(packet, lever, mechanism),
        **({"observed": observed} if observed else {}),
        "root_cause": mechanism,
    }
    # a dead end's diff is what the attempt changed; a pitfall's diff is its version's whole (kept) change
    snippet = diff_snippet(code) if packet["seg_kind"] != "curated-pitfall" else None
    if snippet:
        payload["implementation"] = {"format": DIFF_FORMAT, "snippet": snippet}
    payload["established_fact"] = {"condition": condition, "mechanism": mechanism}
    gain: dict[str, Any] = {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []}
    return Draft(payload, gain, measured_effect(packet), [] if observed else ["observed"])


REFERENCE_GOALS = {
    "final-kernel": "The fastest kernel this run kept for {op} on {gpu}, as a starting point for further work.",
    "mega-snapshot": "The kernel after a large measured gain for {op} on {gpu}, as a starting point for further work.",
}


def reference_draft(packet: dict, code: str | None) -> Draft | str:
    a = packet["agent_facing"]
    said, m = a["what_the_run_said"], a["measurements"]
    snippet, name = kernel_source(code, packet["target"]["scope"]["dsl"])
    if snippet is None:
        return "no kernel source in the packet"
    approach = first_servable(said.get("change"), said.get("commit_body"))
    if approach is None:
        return "nothing servable says what this kernel does"
    goal = REFERENCE_GOALS.get(packet["seg_kind"], REFERENCE_GOALS["final-kernel"])
    implementation = {"format": SOURCE_FORMAT, "snippet": snippet, **({"core_kernel_name": name} if name else {})}
    payload = {
        "goal": goal.format(op=operator_name(packet), gpu=a["operator"]["gpu"]),
        "problem": problem(packet),
        "trace": {"builds_on": {"approach": approach}},
        "implementation": implementation,
    }
    gain = {
        "basis": "measured" if measured(packet) else "qualitative",
        "kind": "none",
        "pct": None,
        "metrics": [],
        **correctness(m),
    }
    return Draft(payload, gain, measured_effect(packet), [] if name else ["implementation.core_kernel_name"])


DRAFTERS = {"strategy": strategy_draft, "anti-strategy": anti_draft, "reference-kernel": reference_draft}


def draft_record(packet: dict, code: str | None) -> tuple[dict | None, str]:
    """(record, "drafted[; too thin for: ...]") or (None, why the packet cannot back a record)."""
    if not packet.get("provenance", {}).get("commit"):
        return None, "no commit to cite: the version exists only as a step record"
    record_type: Any = packet.get("record_type")  # as the packet states it
    build = DRAFTERS.get(record_type)
    if build is None:
        return None, f"unknown record type {packet.get('record_type')!r}"
    draft = build(packet, code)
    if isinstance(draft, str):
        return None, draft
    target = packet["target"]
    record = {
        "schema": target["schema"],
        "id": target["id"],
        "type": packet["record_type"],
        "level": target["level"],
        "status": "active",
        "episode_key": target["episode_key"],
        "retrieval": retrieval(packet),
        "payload": draft.payload,
        "evidence": evidence(packet, draft.effect),
        "worth": {"rank": dict(UNRANKED), "gain": draft.gain},
    }
    return record, "drafted" + (f"; too thin for: {', '.join(draft.thin)}" if draft.thin else "")


def read_code(packet_path: Path, packet: dict) -> str | None:
    """The packet's sibling code file (.diff or .py), if it names one."""
    name = packet.get("agent_facing", {}).get("code_file")
    if not name:
        return None
    try:
        return (packet_path.parent / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m optrace.distill.drafter",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("packet", type=Path, help="a packet JSON (its code file sits beside it)")
    args = ap.parse_args(argv)
    packet = read_json(args.packet)
    record, reason = draft_record(packet, read_code(args.packet, packet))
    print(reason, file=sys.stderr)
    if record is None:
        return 1
    print(json.dumps(record, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
