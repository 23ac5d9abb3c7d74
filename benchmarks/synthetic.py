"""Synthetic traces for benchmarks: realistic mix of grammars, verdicts, memory records and captures.

Deterministic for a given (n_versions, seed). Kernels stay a few KB (real kernels do not grow without
bound), memory records carry per-shape latencies, every 10th version has a profile capture.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from optrace.tracebuild import CommitSpec, build_trace  # noqa: E402

SHAPES = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(1, 9)]
LEVERS = ["split-K reduction (atomics, contention)", "fp32 accumulation in shared memory", "cp.async prefetch of B",
          "num_stages=5 (smem overflow)", "BLOCK_M=256 register spills", "persistent grid over tiles",
          "warp specialisation on the epilogue", "TMA multicast across the cluster", "swizzle 128B layout",
          "vectorised 16-byte stores"]


def kernel_source(step: int, rng: random.Random) -> str:
    body = "\n".join(f"    acc{i} = tl.load(ptr + offs + {rng.randint(0, 4096)}, mask=mask, other=0.0)" for i in range(40))
    return (f"import triton\nimport triton.language as tl\n\n# variant {step}\n@triton.jit\n"
            f"def _kernel(ptr, out, n, BLOCK: tl.constexpr = {64 * (1 + step % 8)}):\n"
            f"    pid = tl.program_id(0)\n    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n{body}\n"
            f"    tl.store(out + offs, acc0, mask=mask)\n")


def memory(n: int, geo: float, rng: random.Random, **extra) -> str:
    by_shape = {s: round(geo * rng.uniform(0.5, 2.0), 3) for s in SHAPES}
    rec = {"version": f"v{n}", "performance": {"latency_us_geomean": round(geo, 4), "latency_us_by_shape": by_shape},
           "correctness": {"status": "PASS", "max_abs_err": 0.001, "max_rel_err": 0.002},
           "quality_gate": {"result": "PASS", "failure_reason": None},
           "optimization": {"action_category": "tiling", "action_description": f"step {n}: {rng.choice(LEVERS)}"},
           "pitfalls_and_fixes": [{"pitfall": rng.choice(LEVERS) + " exceeded smem", "explanation": "occupancy 1 CTA/SM", "fix": "2 stages"}],
           "open_directions": [{"direction": rng.choice(LEVERS), "rationale": "grid < #SMs"}]}
    rec.update(extra)
    return json.dumps(rec)


def synthetic_trace(dest: Path, n_versions: int, seed: int = 3) -> Path:
    rng = random.Random(seed)
    meta = {
        "definition.json": json.dumps({"name": "gemm_n4096_k4096", "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 4096}}}),
        "solution.json": json.dumps({"spec": {"language": "triton", "target_hardware": ["NVIDIA_H100"]}}),
        "workload.jsonl": "\n".join(json.dumps({"uuid": s, "axes": {"M": 64}}) for s in SHAPES) + "\n",
    }
    geo = 1000.0
    commits = [CommitSpec("V0: baseline kernel", {"kernel.py": kernel_source(0, rng), "memory/v0.json": memory(0, geo, rng), **meta})]
    untracked: dict[str, str] = {}
    for n in range(1, n_versions):
        roll = rng.random()
        if roll < 0.45:
            geo *= rng.uniform(0.9, 0.995)
            commits.append(CommitSpec(f"v{n}: committed (+{rng.uniform(0.5, 10):.1f}%)",
                                      {"kernel.py": kernel_source(n, rng), "memory/v%d.json" % n: memory(n, geo, rng)}))
        elif roll < 0.65:
            commits.append(CommitSpec(f"v{n}: reverted ({rng.choice(LEVERS)}) — dead-end recorded",
                                      {"memory/v%d.json" % n: memory(n, geo * 1.05, rng)}))
        elif roll < 0.8:
            items = ", ".join(rng.sample(LEVERS, 3))
            commits.append(CommitSpec(f"dead-end recorded: {items}. Next: {rng.choice(LEVERS)}",
                                      {"memory/v%d.json" % n: memory(n, geo * 1.02, rng)}))
        elif roll < 0.9:
            commits.append(CommitSpec(f"v{n}: reorder loads -> {geo:.1f}->{geo * 0.998:.1f}us (-0.2%), NO_CHANGE",
                                      {"kernel.py": kernel_source(n, rng), "memory/v%d.json" % n: memory(n, geo * 0.998, rng)}))
        else:
            commits.append(CommitSpec(f"chore({n}): bookkeeping", {"notes.md": f"note {n}\n"}))
        if n % 10 == 0:
            untracked[f"profiles/v{n}/summary.txt"] = f"===== NCU Profile Summary =====\nKernel: {'_kernel' if n % 20 else 'distribution_elementwise_grid_stride_kernel'}\n"
            untracked[f"profiles/v{n}/REPORT.md"] = "**Root cause**: memory-bound, long scoreboard stalls on B loads\n"
    build_trace(dest, commits, untracked)
    return dest
