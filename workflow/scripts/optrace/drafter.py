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

`python -m optrace.drafter PACKET.json` prints the draft of one packet (an agent's starting point).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .facts import MECHANISM_RE
from .jsonio import read_json
from .storegates.established_fact import MIN_MECHANISM_CHARS, NON_MECHANISM
from .storegates.self_contained import ABSOLUTE_LATENCY

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
SOURCE_FORMAT = "source (verbatim)"
MAX_SNIPPET_CHARS = 6000  # the store's snippets: median ~0.8 KB, p99 ~11 KB
# Never a score: the stage step computes rank from the worth formula. 0.0 / provisional reads as
# "not ranked yet" and is valid under the contract (score in [0, 1]).
UNRANKED = {"score": 0.0, "tier": "provisional"}
# The ISA an architecture compiles for: the checkable `sm_arch` of an established fact when the packet
# names no product ISA (a trace scoped to an arch only).
ARCH_ISA = {"ampere": "sm_80", "hopper": "sm_90", "blackwell": "sm_100", "blackwell-ultra": "sm_103",
            "blackwell-geforce": "sm_120", "cdna3": "gfx942", "cdna4": "gfx950"}
# Conditions stated in the text of the attempt itself (what was tried, on which dtype or shapes).
DTYPE_RE = re.compile(r"\b(?:bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int8|e4m3|e5m2|bfloat16|float16|float32)\b", re.I)
SHAPE_RE = re.compile(r"\b(?:batch_size|batch|seq_len|hidden(?:_size)?|head_dim|[MNK])\s*(?:<=|>=|==|<|>|=|≤|≥)\s*\d+")
SPECULATION_RE = re.compile(r"\b(?:may|might|maybe|possibly|perhaps|probably)\b", re.I)
ACCURACY_RE = re.compile(r"mismatch|max_(?:abs|rel)_err|accuracy|precision|numerical|\bnan\b|incorrect|tolerance", re.I)
API_RE = re.compile(r"unsupported|not supported|does not support|not implemented|cannot (?:express|be expressed|lower|compile)", re.I)
SCOPE_KEYS = ("vendor", "arch", "product", "dsl", "operator_family")
_PIECE_END = re.compile(r"(?<=[.!?:])\s+")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("the and with for per was were that this than then from into onto over each its are has have "
                  "but not only also when where which what".split())
_JIT_DECORATOR = re.compile(r"^\s*@[\w.]*jit\b")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")
_CUDA_ENTRY = re.compile(r"__global__\b[^(]*?(\w+)\s*\(")


@dataclass
class Draft:
    """The type-specific parts of a record; `thin` names fields the packet was too thin to fill."""

    payload: dict
    gain: dict
    effect: dict  # evidence.raw.effect: the absolute numbers, human-only
    thin: list[str] = field(default_factory=list)


# ---- prose ------------------------------------------------------------------------------------

def servable(text) -> str | None:
    """Packet prose fit for served text: non-blank, whitespace collapsed, no absolute latency."""
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    return text if text and not ABSOLUTE_LATENCY.search(text) else None


def first_servable(*texts) -> str | None:
    return next((s for s in map(servable, texts) if s), None)


def pieces(text) -> list[str]:
    """Sentences, and the clauses a colon introduces ("within noise: the halved warp count ...")."""
    if not isinstance(text, str):
        return []
    return [p for p in (" ".join(s.split()).rstrip(":").strip() for s in _PIECE_END.split(text)) if p]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def is_mechanism(piece: str) -> bool:
    """A causal sentence the established-fact gate accepts, without speculation or absolute latency."""
    return (len(piece) >= MIN_MECHANISM_CHARS and bool(MECHANISM_RE.search(piece)) and not NON_MECHANISM.search(piece)
            and not SPECULATION_RE.search(piece) and servable(piece) is not None)


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
    sources = [(pieces(lever)[1:], False), (pieces(a.get("how_it_was_fixed")), False)]
    sources += [(pieces(said.get(k)), shared) for k in ("gate_verdict", "commit_body")]
    sources += [(pieces(p.get("pitfall")), True) for p in a.get("pitfalls_recorded_here", [])
                if p.get("pitfall") != lever]  # a curated pitfall is listed there too: not its own evidence
    for candidates, needs_overlap in sources:
        for piece in candidates:
            if is_mechanism(piece) and (not needs_overlap or len(words & content_words(piece)) >= needed):
                return piece
    return None


def single_match(pattern: re.Pattern, text: str) -> str | None:
    """The one value the text states (two different dtypes, say, state no single condition)."""
    found = {m.group(0) for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None


# ---- code -------------------------------------------------------------------------------------

def within_budget(lines: list[str]) -> str:
    """Whole lines, as many as fit the snippet budget (always at least one)."""
    out, size = [], 0
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
    taken, size = [], 0
    for hunk in hunks:
        size += sum(len(line) + 1 for line in hunk)
        if taken and size > MAX_SNIPPET_CHARS:
            break
        taken += hunk
    return within_budget(taken)


def edit_scope(code: str | None) -> str:
    """one-line when at most one line went out and one came in; any larger edit rewrites the kernel."""
    lines = [line for hunk in diff_hunks(code) for line in hunk[1:]]
    added = sum(line.startswith("+") for line in lines)
    removed = sum(line.startswith("-") for line in lines)
    return "one-line" if max(added, removed) <= 1 else "kernel-rewrite"


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


def entry_point(code: str | None) -> tuple[str | None, str | None]:
    """(snippet, kernel name): the first jit-decorated function or __global__ kernel, else the file's head."""
    lines = (code or "").splitlines()
    if not any(line.strip() for line in lines):
        return None, None
    for i, line in enumerate(lines):
        if _JIT_DECORATOR.match(line):
            body = lines[i:_block_end_python(lines, i)]
            name = next((m.group(1) for m in map(_PY_DEF.match, body) if m), None)
            return within_budget(_trim_blank(body)), name
        cuda = _CUDA_ENTRY.search(line)
        if cuda:
            return within_budget(_trim_blank(lines[i:_block_end_c(lines, i)])), cuda.group(1)
    return within_budget(_trim_blank(lines)), None


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


# ---- shared parts -----------------------------------------------------------------------------

def operator_name(packet: dict) -> str:
    return packet["target"]["scope"]["operator_family"]


def technique(packet: dict) -> str:
    """The technique part of the episode key (`<arch>|<dsl>|<family>|<technique>|<level>`), as a tag."""
    return tag(packet["target"]["episode_key"].split("|")[3])


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
    return {"statement": statement, "target": op["gpu"], "operator": operator_name(packet),
            "bottleneck": conclusion[0] if conclusion else None, "dsl": op["dsl"]}


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
    tags = list(dict.fromkeys(t for t in (technique(packet), tag(category)) if t))
    return {
        "scope": scope,
        "generality": {"arch": scope["arch"], "language": scope["dsl"], "workload_family": target["workload_family"]},
        "signals": {"metrics": {}, "shape_regime": {"predicate": "*", "var_axes": [a for a in op["variable_axes"] if isinstance(a, str)],
                                                    "n_shapes": op["n_benchmarked_shapes"]}, "symptoms": []},
        "technique_tags": tags,
        "triggers": [],
    }


def evidence(packet: dict, effect: dict) -> dict:
    op, target, prov = packet["agent_facing"]["operator"], packet["target"], packet["provenance"]
    measured_on = {"harness": op.get("harness"), "gpu": op["gpu"],
                   "track": f"{target['scope']['arch']}/{target['scope']['dsl']}"}
    return {
        "summary": {"confidence": "measured" if measured(packet) else "inferred",
                    "bottleneck_evidence": bottleneck_evidence(packet),
                    "measured_on": {k: v for k, v in measured_on.items() if isinstance(v, str) and v}},
        "raw": {"source_repo": prov["source_label"], "version": prov["version"], "git_commit": prov["commit"],
                "effect": effect},
    }


def measured_effect(packet: dict, **extra) -> dict:
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
        approach = "The untouched baseline kernel." if base.get("was_the_untouched_baseline") else "The previous kept kernel."
    profiler = usable_profiler(packet)
    mechanism = first_servable(said.get("commit_body"), profiler and profiler.get("conclusion"))
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
        "trace": {"builds_on": {"approach": approach, "is_baseline": bool(base.get("was_the_untouched_baseline"))},
                  "technique_here": [technique(packet)]},
        "change": change,
        "mechanism": mechanism or "",
        "implementation": {"format": DIFF_FORMAT, "snippet": snippet},
        "cost": {"edit_scope": edit_scope(code), "risk": "low" if status == "PASS" else "med",
                 "risk_basis": "the harness's correctness check passed" if status == "PASS"
                 else "no passing correctness check is recorded for this step"},
        "next_steps": next_steps,
    }
    gain = {"basis": "measured", "kind": "performance", "primary": "latency", "pct": pct,
            "metrics": [{"metric": "latency", "direction": "lower-better", "source": "step-record", "delta_pct": pct,
                         "measured_over": f"geomean over {n} benchmarked shapes" if n else "geomean over the benchmarked shapes"}],
            **correctness(m)}
    return Draft(payload, gain, measured_effect(packet, parent_geomean_us=m.get("floor_before_us"), delta_pct=pct), thin)


def verdict_of(packet: dict, texts: list[str]) -> str:
    """accuracy when the step failed its correctness check or says so; an API limit when it says so; else not worth it."""
    status = (packet["agent_facing"]["measurements"].get("correctness") or {}).get("status")
    joined = " ".join(texts)
    if (status and status != "PASS") or ACCURACY_RE.search(joined):
        return "accuracy-gate/ceiling"
    return "api-limitation" if API_RE.search(joined) else "not-worth-it-here"


def fact_condition(packet: dict, lever: str) -> dict:
    """The GPU's ISA and the toolchain, plus a dtype or shape regime when the attempt itself states one."""
    scope = packet["target"]["scope"]
    isa = packet["agent_facing"]["operator"].get("isa") or ARCH_ISA.get(scope["arch"])
    condition = {"sm_arch": isa, "shape_regime": single_match(SHAPE_RE, lever),
                 "dtype": single_match(DTYPE_RE, lever), "toolchain": scope["dsl"] if scope["dsl"] != "any" else None}
    return {k: v for k, v in condition.items() if v}


def anti_draft(packet: dict, code: str | None) -> Draft | str:
    a = packet["agent_facing"]
    required = a.get("established_fact_required") or {}
    if required.get("precheck") != "ok":
        return f"no established fact: {required.get('precheck_note') or 'the packet carries no precheck'}"
    lever = servable(a.get("the_failed_lever"))
    if lever is None:
        return "the failed lever is absent or states absolute latencies"
    mechanism = mechanism_sentence(packet)
    if mechanism is None:
        return f"no causal sentence of at least {MIN_MECHANISM_CHARS} characters in the packet's prose"
    condition = fact_condition(packet, lever)
    if not condition:
        return "no checkable condition (arch, shape regime, dtype or toolchain)"
    fix = servable(a.get("how_it_was_fixed"))
    # the gate verdict is this lever's own observation only when the version tried nothing else
    own_prose = packet["seg_kind"] == "deadend-prose"
    observed = servable(a["what_the_run_said"].get("gate_verdict")) if own_prose else None
    payload = {
        "goal": f"Avoid retrying on {a['operator']['gpu']}: {lever}",
        "problem": problem(packet),
        "attempted": lever,
        "verdict": verdict_of(packet, [lever, mechanism, observed or ""]),
        "lesson": fix or mechanism,
        **({"observed": observed} if observed else {}),
    }
    # a dead end's diff is what the attempt changed; a pitfall's diff is its version's whole (kept) change
    snippet = diff_snippet(code) if packet["seg_kind"] != "curated-pitfall" else None
    if snippet:
        payload["implementation"] = {"format": DIFF_FORMAT, "snippet": snippet}
    payload["established_fact"] = {"condition": condition, "mechanism": mechanism}
    gain = {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []}
    return Draft(payload, gain, measured_effect(packet), ["observed"] if own_prose and not observed else [])


REFERENCE_GOALS = {
    "final-kernel": "The fastest kernel this run kept for {op} on {gpu}, as a starting point for further work.",
    "mega-snapshot": "The kernel after a large measured gain for {op} on {gpu}, as a starting point for further work.",
}


def reference_draft(packet: dict, code: str | None) -> Draft | str:
    a = packet["agent_facing"]
    said, m = a["what_the_run_said"], a["measurements"]
    snippet, name = entry_point(code)
    if snippet is None:
        return "no kernel source in the packet"
    approach = first_servable(said.get("change"), said.get("commit_body"))
    if approach is None:
        return "nothing servable says what this kernel does"
    goal = REFERENCE_GOALS.get(packet["seg_kind"], REFERENCE_GOALS["final-kernel"])
    implementation = {"format": SOURCE_FORMAT, "snippet": snippet, **({"core_kernel_name": name} if name else {})}
    payload = {"goal": goal.format(op=operator_name(packet), gpu=a["operator"]["gpu"]), "problem": problem(packet),
               "trace": {"builds_on": {"approach": approach}}, "implementation": implementation}
    gain = {"basis": "measured" if measured(packet) else "qualitative", "kind": "none", "pct": None, "metrics": [],
            **correctness(m)}
    return Draft(payload, gain, measured_effect(packet), [] if name else ["implementation.core_kernel_name"])


DRAFTERS = {"strategy": strategy_draft, "anti-strategy": anti_draft, "reference-kernel": reference_draft}


def draft_record(packet: dict, code: str | None) -> tuple[dict | None, str]:
    """(record, "drafted[; too thin for: ...]") or (None, why the packet cannot back a record)."""
    if not packet.get("provenance", {}).get("commit"):
        return None, "no commit to cite: the version exists only as a step record"
    build = DRAFTERS.get(packet.get("record_type"))
    if build is None:
        return None, f"unknown record type {packet.get('record_type')!r}"
    draft = build(packet, code)
    if isinstance(draft, str):
        return None, draft
    target = packet["target"]
    record = {
        "schema": target["schema"], "id": target["id"], "type": packet["record_type"], "level": target["level"],
        "status": "active", "episode_key": target["episode_key"],
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
    ap = argparse.ArgumentParser(prog="python -m optrace.drafter", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
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
    from .cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
