"""A realistic trace built from real data: the FlashInfer-Bench kernel-generator run that optimised
fused_add_rmsnorm_h4096 in CUDA on an A800 (../shared/data/samples/fib_kgen_run_20260316_172250_*, the
definition and the workloads). The run's per-round status and latency become the trace's versions;
its kernel sources are elided upstream, so each version's kernel.py is a small CUDA source we write,
one change per round. Read at test time only: nothing of ../shared is copied into the project.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from optrace.example.repo_builder import CommitSpec, build_trace

SAMPLES = "samples"
RUN = "fib_kgen_run_20260316_172250"
NAME = "fib_kgen_fused_add_rmsnorm_h4096_a800"

KERNEL = """from torch.utils.cpp_extension import load_inline

CUDA_SRC = r'''
#include <cuda_bf16.h>
// round {n}: {what}
__global__ void fused_add_rmsnorm_kernel(const __nv_bfloat16* __restrict__ h, const __nv_bfloat16* __restrict__ r,
                                         const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ out,
                                         int hidden, float eps) {{
{body}
}}
'''

_mod = load_inline(name="fused_add_rmsnorm_r{n}", cpp_sources="", cuda_sources=CUDA_SRC, functions=[])


def run(hidden_states, residual, weight, output):
    _mod.launch(hidden_states, residual, weight, output, {threads})
"""

BODIES = {
    2: (
        "one block per row, fp32 accumulation in shared memory",
        256,
        "    __shared__ float partial[256];\n    int row = blockIdx.x;\n    float acc = 0.f;\n"
        "    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {\n"
        "        float x = __bfloat162float(h[row * hidden + i]) + __bfloat162float(r[row * hidden + i]);\n"
        "        acc += x * x;\n    }\n    partial[threadIdx.x] = acc;",
    ),
    3: (
        "warp shuffle reduction instead of the shared-memory tree",
        256,
        "    int row = blockIdx.x;\n    float acc = 0.f;\n"
        "    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {\n"
        "        float x = __bfloat162float(h[row * hidden + i]) + __bfloat162float(r[row * hidden + i]);\n"
        "        acc += x * x;\n    }\n"
        "    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);",
    ),
    4: (
        "128-bit vector loads of eight bf16 per thread",
        512,
        "    int row = blockIdx.x;\n    float acc = 0.f;\n"
        "    const uint4* hv = reinterpret_cast<const uint4*>(h + row * hidden);\n"
        "    const uint4* rv = reinterpret_cast<const uint4*>(r + row * hidden);\n"
        "    uint4 a = hv[threadIdx.x], b = rv[threadIdx.x];\n"
        "    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);",
    ),
    6: (
        "1024 threads per row",
        1024,
        "    int row = blockIdx.x;\n    float acc = 0.f;\n"
        "    const uint2* hv = reinterpret_cast<const uint2*>(h + row * hidden);\n"
        "    uint2 a = hv[threadIdx.x];\n"
        "    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);",
    ),
}


def rounds(data: Path) -> list[dict]:
    with open(data / SAMPLES / f"{RUN}_generation_feedback_records.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def memory(
    version: str,
    latency_us: float | None,
    shape: str,
    category: str,
    action: str,
    status: str = "PASS",
    err: float = 0.0078125,
    pitfalls: list | None = None,
) -> str:
    perf = {
        "latency_us": latency_us,
        "latency_us_geomean": latency_us,
        "latency_us_by_shape": {shape: latency_us} if latency_us is not None else {},
    }
    return json.dumps(
        {
            "version": version,
            "masked": False,
            "performance": perf,
            "optimization": {"action_category": category, "action_description": action},
            "correctness": {"status": status, "max_abs_err": err, "max_rel_err": err},
            "quality_gate": {
                "result": "PASS" if status == "PASS" else "FAIL",
                "failure_reason": None if status == "PASS" else "nvcc: compile error",
            },
            "pitfalls_and_fixes": pitfalls or [],
            "open_directions": [],
            "git_commit_hash": None,
        },
        indent=1,
    )


def build_fib_trace(dest: Path, data: Path) -> Path:
    """The trace at dest; data is ../shared/data."""
    rows = {int(r["generation_round"]): r for r in rounds(data)}
    us = {n: round(float(r["latency_ms"]) * 1000, 3) for n, r in rows.items() if r["latency_ms"]}
    ref = round(float(rows[2]["reference_latency_ms"]) * 1000, 3)
    shape = rows[2]["feedback_workload_uuid"]
    definition = (data / SAMPLES / "fib_definition_fused_add_rmsnorm_h4096.json").read_text(encoding="utf-8")
    workloads = (data / SAMPLES / "fib_workload_fused_add_rmsnorm_h4096.jsonl").read_text(encoding="utf-8")
    solution = json.dumps(
        {
            "name": "fused_add_rmsnorm_h4096_cuda",
            "definition": "fused_add_rmsnorm_h4096",
            "spec": {"language": "cuda", "target_hardware": ["NVIDIA_A800"], "entry_point": "kernel.py::run"},
            "sources": [{"path": "kernel.py"}],
        }
    )
    reference = (
        "import torch\n\n\ndef run(hidden_states, residual, weight, output):\n"
        "    x = hidden_states.float() + residual.float()\n"
        "    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()).bfloat16())\n"
    )

    def kern(n):
        what, threads, body = BODIES[n]
        return KERNEL.format(n=n, what=what, body=body, threads=threads)

    def pct(a, b):
        return round((a - b) / a * 100, 1)

    commits = [
        CommitSpec(
            "V0: baseline (PyTorch reference)",
            {
                "kernel.py": reference,
                "definition.json": definition,
                "solution.json": solution,
                "workload.jsonl": workloads,
                "memory/v0.json": memory(
                    "v0", ref, shape, "baseline", "PyTorch reference: float32 add, mean of squares, rsqrt, scale"
                ),
            },
        ),
        CommitSpec(
            "v1: reverted (compile error in the first CUDA kernel) — dead-end recorded",
            {
                "memory/v1.json": memory(
                    "v1", None, shape, "compile", "first CUDA kernel: nvcc rejected the bf16 intrinsics", status="FAIL"
                )
            },
        ),
        CommitSpec(
            f"v2: committed (+{pct(ref, us[2])}%)",
            {
                "kernel.py": kern(2),
                "memory/v2.json": memory(
                    "v2",
                    us[2],
                    shape,
                    "fusion",
                    "one CUDA block per row: the residual add, the mean of squares and the scale in a single kernel",
                ),
            },
            body="One launch instead of the reference's chain of elementwise kernels.",
        ),
        CommitSpec(
            f"v3: committed (+{pct(us[2], us[3])}%)",
            {
                "kernel.py": kern(3),
                "memory/v3.json": memory(
                    "v3", us[3], shape, "reduction", "warp shuffle reduction instead of the shared-memory tree"
                ),
            },
            body="The shuffle reduction needs no shared-memory round trip and no block-wide barrier per step.",
        ),
        CommitSpec(
            f"v4: committed (+{pct(us[3], us[4])}%)",
            {
                "kernel.py": kern(4),
                "memory/v4.json": memory(
                    "v4",
                    us[4],
                    shape,
                    "vectorization",
                    "128-bit vector loads: each thread reads eight bf16 of hidden_states and residual at once",
                ),
            },
        ),
        CommitSpec(
            f"v5: reverted (1024 threads per row, -{pct(us[6], us[6] * 2 - us[4])}%) — dead-end recorded",
            {
                "memory/v5.json": memory(
                    "v5",
                    us[6],
                    shape,
                    "launch_config",
                    "1024 threads per row with 64-bit loads",
                    pitfalls=[
                        {
                            "pitfall": "1024 threads per row with 64-bit loads is slower",
                            "explanation": "halving the load width doubles the load instructions per row, "
                            "because each thread now moves four bf16 instead of eight",
                            "fix": "keep 512 threads with 128-bit loads",
                        }
                    ],
                )
            },
        ),
    ]
    build_trace(dest, commits, {})
    return dest
