"""An iteration-era Triton trace on an H20: the gate/up projection of a Llama-style MLP fused with SwiGLU,
out = silu(x @ W_gate) * (x @ W_up), hidden 4096, intermediate 11008, bf16, four token counts.

Ours throughout (kernels, numbers, prose), written as an agent of the iteration era leaves a trace: SOL
files (bare workload lines, `languages` list, a config.json naming the harness's warm-up and timed runs),
the GPU only in the workspace name (`..._h20`), `v<N>: committed (+x%)` / `v<N>: reverted (...) —
dead-end recorded` subjects and one `dead-end recorded: a, b. Next: ...` list whose body gives each lever
its own cause. The reference latencies follow the shape of a cuBLAS GEMM on an H20 (148 TFLOPS bf16
dense, 4 TB/s); the SOL sample format is trace-format.md §7.

What it exercises: a strategy whose memory field says why ("the 2*I intermediate never reaches HBM");
failed levers with a cause in the body ("an extra IMAD per LDS"), in the gate's message, in the first
sentence of the lever's own text ("aligned only when the base pointer is"), and without one; a
multi-lever dead end; a floor-only step between claims; a `{pitfall, why, fix}` pitfall whose cause is
architecture-bound ("exist only for __CUDA_ARCH__ >= 800") and a bare-string pitfall without a cause;
version references in the final kernel's comments (`# v11: maxnreg=168 ...`, `# v4: ...`).
"""

from __future__ import annotations

import json
import math

from optrace.example.repo_builder import CommitSpec
from tests.support.realistic_traces import memory

LABEL = "kernel_opt_063_swiglu_mlp_triton_h20"
HIDDEN, INTER = 4096, 11008
TOKENS = (16, 128, 512, 2048)
SHAPES = (
    "0c4a9e71-2f3b-4d86-b1a5-6e8d07c3f912",
    "5b7d1c28-9e04-4a6f-8d3b-c2f1a9e07654",
    "a91f3e5c-7d28-4b0a-96e1-4c5b8d2f0a37",
    "e2c86b1d-43f9-4e75-a0d2-17b9c6f83e48",
)
REFERENCE = (62.4, 214.8, 851.3, 3196.0)  # torch: cuBLAS GEMM, then silu and mul kernels (µs)
HARNESS = "SOL-ExecBench harness, 10 warm-up and 50 timed runs (seed 200)"


def available() -> bool:
    return True  # built from nothing under ../shared/data


def geo(xs) -> float:
    return round(math.exp(sum(math.log(x) for x in xs) / len(xs)), 3)


def step(n: int, lat: tuple[float, ...] | None, **kw) -> str:
    if lat is None:
        return memory(n, None, **kw)
    speedup = round(math.exp(sum(math.log(r / x) for r, x in zip(REFERENCE, lat)) / len(lat)), 4)
    return memory(n, geo(lat), by_shape=dict(zip(SHAPES, lat)), speedup=speedup, **kw)


REFERENCE_KERNEL = '''"""Gate/up projection + SwiGLU, the SOL reference wrapper (PyTorch)."""
import torch
import torch.nn.functional as F


def run(x, w_gate_up):
    gate, up = (x @ w_gate_up).chunk(2, dim=-1)
    return F.silu(gate) * up
'''

TWO_KERNELS = '''"""Gate/up projection + SwiGLU in Triton: a GEMM writes the 2*I gate_up tensor, a second kernel applies SwiGLU."""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(x_ptr, w_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(w_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=rm[:, None] < M)


@triton.jit
def silu_mul_kernel(gu_ptr, out_ptr, M, I, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(gu_ptr + row * 2 * I + cols).to(tl.float32)
    u = tl.load(gu_ptr + row * 2 * I + I + cols).to(tl.float32)
    tl.store(out_ptr + row * I + cols, (g * tl.sigmoid(g) * u).to(tl.bfloat16))


def run(x, w_gate_up):
    M, K = x.shape
    N = w_gate_up.shape[1]
    gate_up = torch.empty(M, N, dtype=x.dtype, device=x.device)
    matmul_kernel[(triton.cdiv(M, 128), N // 128)](x, w_gate_up, gate_up, M, N, K, 128, 128, 64, num_warps=4, num_stages=3)
    out = torch.empty(M, N // 2, dtype=x.dtype, device=x.device)
    silu_mul_kernel[(M, N // 2 // 1024)](gate_up, out, M, N // 2, 1024)
    return out
'''


def fused_kernel(step: int) -> str:
    """The fused kernel as it grew (`step` = the version that last changed it)."""
    notes = []
    if step >= 4:
        notes.append("# v4: GROUP_M=8 program order, so programs that share W column tiles run back to back")
    if step >= 11:
        notes.append("# v11: maxnreg=168 caps registers the way __launch_bounds__(256, 2) would: two CTAs per SM")
    header = "\n".join(notes) + ("\n\n" if notes else "")
    if step >= 4:
        order = """    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(I, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (tile // group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % group) % rows
    pid_n = (tile % group) // rows
"""
    else:
        order = """    pid_m = tile // tl.cdiv(I, BLOCK_N)
    pid_n = tile % tl.cdiv(I, BLOCK_N)
"""
    if step >= 9:
        loads = """        a = x_desc.load([pid_m * BLOCK_M, k])
        bg = wg_desc.load([k, pid_n * BLOCK_N])
        bu = wu_desc.load([k, pid_n * BLOCK_N])
"""
        prologue = """    x_desc = tl.make_tensor_descriptor(x_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    wg_desc = tl.make_tensor_descriptor(w_ptr, [K, 2 * I], [2 * I, 1], [BLOCK_K, BLOCK_N])
    wu_desc = tl.make_tensor_descriptor(w_ptr + I, [K, 2 * I], [2 * I, 1], [BLOCK_K, BLOCK_N])
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tl.cdiv(I, BLOCK_N), NUM_SMS, flatten=True):
"""
        indent = "    "
    else:
        loads = """        a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        bg = tl.load(w_ptr + (k + rk)[:, None] * (2 * I) + rn[None, :])
        bu = tl.load(w_ptr + (k + rk)[:, None] * (2 * I) + I + rn[None, :])
"""
        prologue = "    tile = tl.program_id(0)\n"
        indent = ""
    body = f"""{order}    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
{loads}        acc_g = tl.dot(a, bg, acc_g)
        acc_u = tl.dot(a, bu, acc_u)
    out = acc_g * tl.sigmoid(acc_g) * acc_u
    tl.store(out_ptr + rm[:, None] * I + rn[None, :], out.to(tl.bfloat16), mask=rm[:, None] < M)
"""
    body = "".join(indent + line if line.strip() else line for line in body.splitlines(keepends=True))
    warps = "8 if M >= 512 else 4" if step >= 7 else "4"
    extra = ", maxnreg=168" if step >= 11 else ""
    grid = "(min(NUM_SMS, tiles),)" if step >= 9 else "(tiles,)"
    return f'''"""Gate/up projection fused with SwiGLU in one Triton kernel: out = silu(x @ W_gate) * (x @ W_up)."""
import torch
import triton
import triton.language as tl

{header}GROUP_M = 8
NUM_SMS = 78


@triton.jit
def swiglu_gate_up_kernel(x_ptr, w_ptr, out_ptr, M, I, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr):
{prologue}{body}

def run(x, w_gate_up):
    M, K = x.shape
    I = w_gate_up.shape[1] // 2
    out = torch.empty(M, I, dtype=x.dtype, device=x.device)
    tiles = triton.cdiv(M, 128) * triton.cdiv(I, 128)
    swiglu_gate_up_kernel[{grid}](x, w_gate_up, out, M, I, K, 128, 128, 64, num_warps={warps}, num_stages=3{extra})
    return out
'''


LAT = {
    1: (70.9, 236.4, 902.7, 3342.5),
    2: (64.8, 219.0, 851.0, 3190.2),
    3: (66.9, 228.1, 887.3, 3321.0),
    4: (64.5, 207.3, 781.9, 2967.4),
    6: (66.0, 214.2, 800.1, 3051.3),
    7: (64.5, 207.3, 771.2, 2942.8),
    9: (60.2, 199.8, 751.0, 2873.6),
    10: (61.0, 201.9, 760.3, 2901.0),
    11: (59.9, 194.1, 728.7, 2790.2),
}


def swiglu_commits() -> tuple[list[CommitSpec], dict]:
    definition = json.dumps(
        {
            "name": f"swiglu_gate_up_h{HIDDEN}_i{INTER}",
            "op_type": "gemm",
            "description": f"out = silu(x @ W[:, :I]) * (x @ W[:, I:]) for x [M, {HIDDEN}] and W [{HIDDEN}, 2*{INTER}], bf16.",
            "axes": {
                "M": {"type": "var"},
                "H": {"type": "const", "value": HIDDEN},
                "I": {"type": "const", "value": INTER},
            },
        },
        indent=1,
    )
    workloads = "".join(json.dumps({"uuid": u, "axes": {"M": m}, "inputs": {}}) + "\n" for u, m in zip(SHAPES, TOKENS))
    solution = json.dumps(
        {
            "name": "swiglu_gate_up_triton",
            "definition": f"swiglu_gate_up_h{HIDDEN}_i{INTER}",
            "spec": {"languages": ["triton"], "target_hardware": ["LOCAL"], "entry_point": "kernel.py::run"},
            "sources": [{"path": "kernel.py"}],
        },
        indent=1,
    )
    config = json.dumps({"seed": 200, "warmup_runs": 10, "iterations": 50, "benchmark_reference": True})
    s = step
    commits = [
        CommitSpec(
            "V0: baseline (SOL reference wrapper)",
            {
                "kernel.py": REFERENCE_KERNEL,
                "definition.json": definition,
                "workload.jsonl": workloads,
                "solution.json": solution,
                "config.json": config,
                "memory/v0.json": s(0, None, category="baseline", description="PyTorch reference wrapper"),
            },
        ),
        CommitSpec(
            "v1: framework baseline (triton) replacing the V0 PyTorch wrapper",
            {
                "kernel.py": TWO_KERNELS,
                "memory/v1.json": s(
                    1,
                    LAT[1],
                    category="framework_baseline",
                    description="Triton GEMM writing the 2*I gate_up tensor, then a SwiGLU kernel",
                    bottleneck="memory_bound",
                ),
            },
        ),
        CommitSpec(
            "v1: pin framework baseline 7c2e9a14",
            {"framework_baseline.json": json.dumps({"framework": "triton", "version": "v1"})},
        ),
        CommitSpec(
            "v2: committed (+6.6%) SwiGLU fused into the GEMM epilogue",
            {
                "kernel.py": fused_kernel(2),
                "memory/v2.json": s(
                    2,
                    LAT[2],
                    category="kernel_fusion",
                    description="one kernel: each program accumulates matching gate and up tiles and writes "
                    "silu(gate) * up",
                    impact="the 2*I intermediate never reaches HBM: its M x 2I bf16 write and the activation "
                    "kernel's read of it are gone",
                    bottleneck="memory_bound",
                    pitfalls=[
                        {
                            "pitfall": "the fused kernel did not build on the sm_75 CI runner",
                            "why": "bf16 tl.dot operands need mma instructions that exist only for __CUDA_ARCH__ >= 800",
                            "fix": "run the Triton tests on the sm_90 runner only",
                        }
                    ],
                ),
            },
        ),
        CommitSpec(
            "v3: reverted (-3.9%) — dead-end recorded",
            {
                "memory/v3.json": s(
                    3,
                    LAT[3],
                    category="smem_layout",
                    description="manual XOR swizzle of the W tile's column offsets",
                    gate="geomean -3.9% vs HEAD",
                )
            },
            body="The swizzle is computed inside the K loop: ptxas emits an extra IMAD per LDS, and that costs more "
            "than the 2-way bank conflict on the W tile it removes.",
        ),
        CommitSpec(
            "v4: committed (+5.3%) GROUP_M=8 program order",
            {
                "kernel.py": fused_kernel(4),
                "memory/v4.json": s(
                    4,
                    LAT[4],
                    category="scheduling",
                    description="GROUP_M=8 swizzled program order over the (M, N) tiles",
                    evidence="W tiles re-read from HBM by every M tile: 4.1x the weight bytes at M=2048",
                    bottleneck="memory_bound",
                ),
            },
            body="Programs that share a W column tile now run back to back, so W is read from HBM once per group "
            "of 8 M tiles instead of once per M tile; L2 holds the tile between them.",
        ),
        CommitSpec(
            "v5: reverted (out of shared memory) — dead-end recorded",
            {
                "memory/v5.json": s(
                    5,
                    None,
                    status="FAIL",
                    category="pipelining",
                    description="num_stages=5 for the 128x128x64 tiles",
                    gate="OutOfResources: out of resource: shared memory, Required: 245760, Hardware limit: 232448. "
                    "Reducing block sizes or `num_stages` may help.",
                )
            },
        ),
        CommitSpec(
            "dead-end recorded: split-K over 2 programs with an fp32 atomic reduction, BLOCK_M=64 for M <= 128. "
            "Next: persistent tiles",
            {
                "memory/v6.json": s(
                    6,
                    LAT[6],
                    category="decomposition",
                    description="split-K with atomics; smaller M tiles for small batches",
                )
            },
            body="Split-K sends every fp32 partial sum through L2 twice and needs a zeroed workspace per call, which "
            "costs more than the extra programs gain. BLOCK_M=64 for M <= 128 still pads a 16-row batch to 64 rows, "
            "so three quarters of each MMA is wasted work.",
        ),
        CommitSpec(
            "v7: committed (+0.6%) num_warps=8 for M >= 512",
            {
                "kernel.py": fused_kernel(7),
                "memory/v7.json": s(7, LAT[7], category="tuning", description="num_warps=8 when M >= 512"),
            },
        ),
        CommitSpec(
            "v8: reverted (misaligned address on 2 of 4 shapes) — dead-end recorded",
            {
                "memory/v8.json": s(
                    8,
                    None,
                    status="FAIL",
                    category="vectorization",
                    description="16-byte loads of x are aligned only when the base pointer is, and the harness passes "
                    "x sliced at odd token offsets. Tried tl.multiple_of(x_ptr, 16) hints on the x loads.",
                    gate="2 of 4 workloads: CUDA error: misaligned address",
                )
            },
        ),
        CommitSpec(
            "v9: committed (+3.8%) persistent programs over TMA tensor descriptors",
            {
                "kernel.py": fused_kernel(9),
                "memory/v9.json": s(
                    9,
                    LAT[9],
                    category="persistent",
                    description="persistent programs (one per SM) walking the tiles, loads through tensor descriptors",
                    evidence="5504 programs at M=2048, each paying the pointer set-up and the pipeline prologue",
                    bottleneck="latency_bound",
                    pitfalls=["keep the autotune key to M only"],
                ),
            },
            body="A persistent program pays the descriptor set-up and the pipeline prologue once per SM instead of "
            "once per tile, and the TMA engine computes the load addresses the warps used to compute.",
        ),
        CommitSpec(
            "v10: reverted (-1.1%) — dead-end recorded",
            {
                "memory/v10.json": s(
                    10,
                    LAT[10],
                    category="tuning",
                    description="BLOCK_N=256 when M >= 512",
                    gate="geomean -1.1% vs HEAD",
                )
            },
        ),
        CommitSpec(
            "v11: committed (+2.3%) maxnreg=168: two CTAs per SM",
            {
                "kernel.py": fused_kernel(11),
                "memory/v11.json": s(
                    11,
                    LAT[11],
                    category="occupancy",
                    description="maxnreg=168 so that two 8-warp CTAs fit on an SM",
                    bottleneck="latency_bound",
                ),
            },
            body="With 168 registers per thread two CTAs share an SM, so one CTA's epilogue runs while the other is "
            "in its K loop.",
        ),
    ]
    return commits, {}


EXPECTED = {
    "product": "h20",
    "dsl": "triton",
    "harness": HARNESS,
    "claims": {
        "v2": ("milestone", 6.57),
        "v4": ("milestone", 5.27),
        "v9": ("milestone", 3.83),
        "v11": ("milestone", 2.31),
    },
    "floor_before": {"v2": "v1", "v4": "v2", "v9": "v7", "v11": "v9"},
    "floor_only": {"v7"},
    "unit_slip": None,
    "flat": set(),
    "rejected": {"v0", "v3", "v5", "v6", "v8", "v10"},
    "final": ("v11", "swiglu_gate_up_kernel"),
    "strategy_causes": {
        "v2": "the 2*I intermediate never reaches HBM",
        "v4": "W is read from HBM once per group of 8 M tiles instead of once per M tile",
        "v9": "pays the descriptor set-up and the pipeline prologue once per SM instead of once per tile",
        "v11": "one CTA's epilogue runs while the other is in its K loop",
    },
    "failed_levers": {
        "manual XOR swizzle of the W tile's column offsets": "an extra IMAD per LDS",
        "num_stages=5 for the 128x128x64 tiles": "Required: 245760, Hardware limit: 232448",
        "split-K over 2 programs with an fp32 atomic reduction": "sends every fp32 partial sum through L2 twice",
        "BLOCK_M=64 for M <= 128": "pads a 16-row batch to 64 rows",
        "tl.multiple_of(x_ptr, 16) hints on the x loads": "aligned only when the base pointer is",
        "BLOCK_N=256 when M >= 512": None,
    },
    "multi_lever": {"v6": ["split-K over 2 programs with an fp32 atomic reduction", "BLOCK_M=64 for M <= 128"]},
    "pitfalls": {
        "the fused kernel did not build on the sm_75 CI runner": "exist only for __CUDA_ARCH__ >= 800",
        "keep the autotune key to M only": None,
    },
    "pitfall_symptoms": {"the fused kernel did not build on the sm_75 CI runner": ["compile-failure"]},
    "version_refs": {"v11": {"v4": "an earlier step", "v11": "this step"}},
}
