"""Synthetic traces for benchmarks: a realistic mix of grammars, verdicts, memory records and captures.

Deterministic for a given (n_versions, seed). What makes them do real work at every size:
- the latency series never collapses: kept changes close part of the gap to a hardware floor (never
  below it), and every ~250 versions the run re-baselines on a new workload set (workload.jsonl changes
  in that commit and the subject says so), so later epochs claim milestones again;
- failed levers come from a combinatorial vocabulary (technique x value x operand), so a long run
  keeps trying levers it has not tried before, as real long-horizon agents do;
- kernels stay a few KB (real kernels do not grow without bound), memory records carry per-shape
  latencies, every 10th version has a profile capture.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from optrace.example.repo_builder import CommitSpec, build_trace

SHAPES = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(1, 9)]
TECHNIQUES = [
    "split-K reduction with atomics",
    "fp32 accumulation in shared memory",
    "cp.async prefetch",
    "num_stages pipelining",
    "BLOCK_M tiling",
    "persistent grid over tiles",
    "warp specialisation",
    "TMA multicast across the cluster",
    "128B swizzle layout",
    "vectorised 16-byte stores",
    "register blocking",
    "double-buffered shared memory",
    "epilogue fusion",
    "grouped launch order",
    "loop unrolling",
    "async copy of the scale vector",
    "warp-shuffle reduction",
    "L2 cache hints",
    "split reduction across CTAs",
    "stream-K decomposition",
]
VALUES = ["2", "4", "8", "16", "64"]
OPERANDS = ["on the A operand", "on the B operand", "in the epilogue", "in the main loop", "for the tail tiles"]
EPOCH_VERSIONS = 250  # a new workload set, as long runs re-baseline on new shapes
FLOOR_US = 80.0


def lever(rng: random.Random) -> str:
    return f"{rng.choice(TECHNIQUES)} x{rng.choice(VALUES)} {rng.choice(OPERANDS)}"


def kernel_source(step: int, rng: random.Random) -> str:
    body = "\n".join(
        f"    acc{i} = tl.load(ptr + offs + {rng.randint(0, 4096)}, mask=mask, other=0.0)" for i in range(40)
    )
    return (
        f"import triton\nimport triton.language as tl\n\n# variant {step}\n@triton.jit\n"
        f"def _kernel(ptr, out, n, BLOCK: tl.constexpr = {64 * (1 + step % 8)}):\n"
        f"    pid = tl.program_id(0)\n    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n{body}\n"
        f"    tl.store(out + offs, acc0, mask=mask)\n"
    )


def memory(n: int, geo: float, rng: random.Random, action: str, **extra) -> str:
    by_shape = {s: round(geo * rng.uniform(0.5, 2.0), 3) for s in SHAPES}
    rec = {
        "version": f"v{n}",
        "performance": {"latency_us_geomean": round(geo, 4), "latency_us_by_shape": by_shape},
        "correctness": {"status": "PASS", "max_abs_err": 0.001, "max_rel_err": 0.002},
        "quality_gate": {"result": "PASS", "failure_reason": None},
        "optimization": {"action_category": "tiling", "action_description": action},
        "pitfalls_and_fixes": [
            {
                "pitfall": rng.choice(TECHNIQUES) + " exceeded shared memory",
                "explanation": "occupancy fell to 1 CTA/SM because each stage needs 48 KB",
                "fix": "2 stages",
            }
        ],
        "open_directions": [{"direction": lever(rng), "rationale": "grid < #SMs"}],
    }
    rec.update(extra)
    return json.dumps(rec)


def workload(epoch: int) -> str:
    return "\n".join(json.dumps({"uuid": s, "axes": {"M": 64 * (epoch + 1)}}) for s in SHAPES) + "\n"


def synthetic_trace(dest: Path, n_versions: int, seed: int = 3) -> Path:
    rng = random.Random(seed)
    meta = {
        "definition.json": json.dumps(
            {"name": "gemm_n4096_k4096", "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 4096}}}
        ),
        "solution.json": json.dumps({"spec": {"language": "triton", "target_hardware": ["NVIDIA_H100"]}}),
        "workload.jsonl": workload(0),
    }
    geo, floor = 1000.0, FLOOR_US
    commits = [
        CommitSpec(
            "V0: baseline kernel",
            {"kernel.py": kernel_source(0, rng), "memory/v0.json": memory(0, geo, rng, "baseline"), **meta},
        )
    ]
    untracked: dict[str, str] = {}
    for n in range(1, n_versions):
        mem = f"memory/v{n}.json"
        roll = rng.random()
        if n % EPOCH_VERSIONS == 0:
            # a new workload set moves everything by the same factor, the reference included
            factor = 1.6 if (n // EPOCH_VERSIONS) % 2 else 1 / 1.6  # new shapes: larger, then smaller
            geo, floor = geo * factor, floor * factor
            commits.append(
                CommitSpec(
                    f"v{n}: committed (re-baseline on workload set {n // EPOCH_VERSIONS})",
                    {
                        "workload.jsonl": workload(n // EPOCH_VERSIONS),
                        "kernel.py": kernel_source(n, rng),
                        mem: memory(n, geo, rng, "re-baseline on the new workload set", speedup_vs_ref_geomean=1.0),
                    },
                )
            )
        elif roll < 0.4:
            geo = floor + (geo - floor) * rng.uniform(0.9, 0.995)
            commits.append(
                CommitSpec(
                    f"v{n}: committed (+{rng.uniform(0.5, 10):.1f}%)",
                    {"kernel.py": kernel_source(n, rng), mem: memory(n, geo, rng, lever(rng))},
                )
            )
        elif roll < 0.65:
            tried = lever(rng)
            commits.append(
                CommitSpec(
                    f"v{n}: reverted ({tried}) — dead-end recorded",
                    {mem: memory(n, geo * 1.05, rng, tried)},
                    body=f"{tried} serialises the warps on a barrier, so the gain is lost.",
                )
            )
        elif roll < 0.8:
            items = ", ".join(lever(rng) for _ in range(3))
            commits.append(
                CommitSpec(f"dead-end recorded: {items}. Next: {lever(rng)}", {mem: memory(n, geo * 1.02, rng, items)})
            )
        elif roll < 0.9:
            commits.append(
                CommitSpec(
                    f"v{n}: reorder loads -> {geo:.1f}->{geo * 0.998:.1f}us (-0.2%), NO_CHANGE",
                    {"kernel.py": kernel_source(n, rng), mem: memory(n, geo * 0.998, rng, "reorder loads")},
                )
            )
        else:
            commits.append(CommitSpec(f"chore({n}): bookkeeping", {"notes.md": f"note {n}\n"}))
        if n % 10 == 0:
            untracked[f"profiles/v{n}/summary.txt"] = (
                f"===== NCU Profile Summary =====\nKernel: {'_kernel' if n % 20 else 'distribution_elementwise_grid_stride_kernel'}\n"
            )
            untracked[f"profiles/v{n}/REPORT.md"] = "**Root cause**: memory-bound, long scoreboard stalls on B loads\n"
    build_trace(dest, commits, untracked)
    return dest
