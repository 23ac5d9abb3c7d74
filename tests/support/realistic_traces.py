"""Three realistic traces built from the public run data in ../shared/data/ (read at run time, never copied).

- `fib_rmsnorm`: the FlashInfer-Bench kernel-generator run (samples/fib_kgen_run_20260316_172250_*): ten rounds
  of a CUDA fused add+RMSNorm (hidden 4096) on an A800, iteration-era grammar. The per-round latencies, the
  reference latency and the speedups are the run's own; the final 14-workload benchmark is the real
  re-baseline (the reference re-measured with the kernel, the workload set changed in the commit).
- `aka_attention`: the AKA long-horizon flash-attention run on an L20N (samples/aka_run7_*: the CUDA curve),
  episode grammar: promotes, an invalid hand-off, verification-rejected candidates whose experiments
  state why they failed.
- `sgemm_ladder`: an SGEMM ladder on an RTX A6000 in the `V<N>: <perf> | <change>` grammar, with
  `revert V<N> (reason)` pairs, a naive -> coalesced 6x step (a real win, no re-baseline evidence) and a
  benchmark-size change that is a real re-baseline.

The kernel sources, commit bodies, memory prose and profiler captures are ours, written as an engineer's
agent would leave them. `build(name, dest)` builds one trace as a git work tree; `EXPECTED[name]` is what
mining it must find (the tests assert it).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from optrace.example.repo_builder import CommitSpec, build_trace
from tests.support.paths import SHARED_DATA

SAMPLES = SHARED_DATA / "samples"


def available() -> bool:
    return (SAMPLES / "fib_kgen_run_20260316_172250_generation_feedback_records.csv").is_file()


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def memory(
    n: int,
    geo: float | None,
    *,
    by_shape: dict | None = None,
    speedup: float | None = None,
    category: str | None = None,
    description: str | None = None,
    impact: str | None = None,
    evidence: str | None = None,
    bottleneck: str | None = None,
    status: str = "PASS",
    pitfalls: list | None = None,
    directions: list | None = None,
    experiments: list | None = None,
    gate: str | None = None,
    carried: str | None = None,
    lh_status: str | None = None,
) -> str:
    perf = {
        "latency_us": geo,
        "latency_us_geomean": geo,
        "latency_us_by_shape": by_shape or {},
        "speedup_vs_ref_geomean": speedup,
        "tflops": None,
        "bandwidth_gbps": None,
    }
    if carried:
        perf["carried_from_version"] = carried
    rec = {
        "version": f"v{n}",
        "masked": False,
        "timestamp": f"2026-03-16T17:{20 + n:02d}:00+00:00",
        "performance": perf,
        "optimization": {
            "action_category": category,
            "action_description": description,
            "expected_impact": impact,
            "risks_and_rollback": None,
        },
        "profile_evidence": {
            "tool_used": "ncu" if evidence else None,
            "evidence_summary": evidence,
            "bottleneck_type": bottleneck,
            "evidence_chain": None,
        },
        "correctness": {
            "status": status,
            "max_abs_err": 0.0078125 if status == "PASS" else None,
            "max_rel_err": 0.0076 if status == "PASS" else None,
        },
        "quality_gate": {
            "result": "PASS" if status == "PASS" and not gate else "FAIL" if gate else None,
            "failure_reason": gate,
        },
        "pitfalls_and_fixes": pitfalls or [],
        "open_directions": directions or [],
        "experience": {"experiment_count": len(experiments or []), "experiments": experiments or []},
        "git_commit_hash": None,
    }
    if lh_status:
        rec["long_horizon"] = {"status": lh_status, "mode": "full", "verification": "abba"}
    return json.dumps(rec, indent=1)


def summary_txt(
    kernel: str,
    *,
    duration: float,
    grid: str,
    sm: float,
    mem: float,
    l2: float,
    occ: float,
    regs: int,
    stalls: dict,
    diagnosis: str,
    symptoms: str,
) -> str:
    lines = [
        "===== NCU Profile Summary =====",
        f"Kernel: {kernel}",
        f"Duration: {duration} us",
        f"Grid: {grid}",
        f"SM Throughput: {sm}%",
        f"Memory Throughput: {mem}%",
        f"L2 Hit Rate: {l2}%",
        f"Achieved Occupancy: {occ}%",
        "Tensor Core Utilization: 0.0%",
        f"Registers/Thread: {regs}",
        "Local Ld/St: 0 / 0",
        "Top Stall Reasons:",
    ]
    lines += [f"  {k}: {v}" for k, v in stalls.items()]
    lines += [
        "",
        "===== Diagnosis =====",
        "Detected 1 pattern(s):",
        f"  {diagnosis}",
        f"SYMPTOMS: {symptoms}",
        "LOCALIZE: analysis/metrics_key_run.txt",
    ]
    return "\n".join(lines) + "\n"


# =============================================================================================
# 1. FlashInfer-Bench kernel generator: fused add + RMSNorm, hidden 4096, A800 (CUDA)
# =============================================================================================

FIB_RUN = "fib_kgen_run_20260316_172250"


def fib_rounds() -> list[dict]:
    with open(SAMPLES / f"{FIB_RUN}_generation_feedback_records.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def fib_final() -> list[dict]:
    with open(SAMPLES / f"{FIB_RUN}_trace_records.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def us(ms: str) -> float:
    return round(float(ms) * 1000.0, 3)


def rmsnorm_reference() -> str:
    definition = json.loads((SAMPLES / "fib_definition_fused_add_rmsnorm_h4096.json").read_text())
    return definition["reference"] + "\n"


RMS_HEAD = '''"""Fused add + RMSNorm (hidden 4096, bf16) as a CUDA extension."""
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_bf16.h>
#include <cuda_runtime.h>

constexpr int HIDDEN = 4096;
constexpr float EPS = 1e-5f;
'''

RMS_TAIL = '''"""

CPP_SRC = "torch::Tensor run(torch::Tensor hidden_states, torch::Tensor residual, torch::Tensor weight);"

_ext = load_inline(name="fused_add_rmsnorm_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["run"], extra_cuda_cflags=["-O3", "--use_fast_math"])


def run(hidden_states, residual, weight):
    return _ext.run(hidden_states.contiguous(), residual.contiguous(), weight.contiguous())
'''

RMS_K2 = """
__global__ void fused_add_rmsnorm_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ r,
                                         const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ out) {
    __shared__ float partial[256];
    const int row = blockIdx.x;
    const __nv_bfloat16* xr = x + (size_t)row * HIDDEN;
    const __nv_bfloat16* rr = r + (size_t)row * HIDDEN;
    float v[HIDDEN / 256];
    float sumsq = 0.f;
    #pragma unroll
    for (int i = 0; i < HIDDEN / 256; ++i) {
        int col = threadIdx.x + i * 256;
        v[i] = __bfloat162float(xr[col]) + __bfloat162float(rr[col]);
        sumsq += v[i] * v[i];
    }
    partial[threadIdx.x] = sumsq;
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    const float inv_rms = rsqrtf(partial[0] / HIDDEN + EPS);
    #pragma unroll
    for (int i = 0; i < HIDDEN / 256; ++i) {
        int col = threadIdx.x + i * 256;
        out[(size_t)row * HIDDEN + col] = __float2bfloat16(v[i] * inv_rms * __bfloat162float(w[col]));
    }
}

torch::Tensor run(torch::Tensor hidden_states, torch::Tensor residual, torch::Tensor weight) {
    auto out = torch::empty_like(hidden_states);
    const int rows = hidden_states.size(0);
    fused_add_rmsnorm_kernel<<<rows, 256>>>(
        reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(residual.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr()));
    return out;
}
"""

RMS_VEC_LOAD = """
struct alignas(16) Pack8 { __nv_bfloat162 h[4]; };

__device__ __forceinline__ void load8(const __nv_bfloat16* p, float* dst) {
    Pack8 pk = *reinterpret_cast<const Pack8*>(p);
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float2 f = __bfloat1622float2(pk.h[j]);
        dst[2 * j] = f.x;
        dst[2 * j + 1] = f.y;
    }
}
"""


def rms_vector_kernel(threads: int, reduction: str, rows_per_block: int = 1, bf16x2_store: bool = False) -> str:
    per_thread = 4096 // threads  # elements per thread, 8 per 16-byte pack
    packs = per_thread // 8
    if reduction == "smem":
        reduce = f"""    __shared__ float partial[{threads}];
    partial[threadIdx.x] = sumsq;
    __syncthreads();
    for (int stride = {threads // 2}; stride > 0; stride >>= 1) {{
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }}
    const float inv_rms = rsqrtf(partial[0] / HIDDEN + EPS);
"""
    else:
        reduce = f"""    __shared__ float warp_sums[{threads // 32}];
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sumsq += __shfl_xor_sync(FULL_MASK, sumsq, offset);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sumsq;
    __syncthreads();
    float total = 0.f;
    #pragma unroll
    for (int i = 0; i < {threads // 32}; ++i) total += warp_sums[i];
    const float inv_rms = rsqrtf(total / HIDDEN + EPS);
"""
    store = (
        """        Pack8 o;
        #pragma unroll
        for (int j = 0; j < 4; ++j)
            o.h[j] = __floats2bfloat162_rn(v[p][2 * j] * inv_rms * wv[2 * j], v[p][2 * j + 1] * inv_rms * wv[2 * j + 1]);
        *reinterpret_cast<Pack8*>(out + base + col) = o;
"""
        if bf16x2_store
        else """        #pragma unroll
        for (int j = 0; j < 8; ++j) out[base + col + j] = __float2bfloat16(v[p][j] * inv_rms * wv[j]);
"""
    )
    mask = "constexpr unsigned FULL_MASK = ~0u;\n" if reduction == "shuffle" else ""
    row_expr = "blockIdx.x" if rows_per_block == 1 else f"blockIdx.x * {rows_per_block} + (threadIdx.y)"
    launch_rows = "rows" if rows_per_block == 1 else f"(rows + {rows_per_block - 1}) / {rows_per_block}"
    block = f"{threads}" if rows_per_block == 1 else f"dim3({threads}, {rows_per_block})"
    guard = "" if rows_per_block == 1 else "    if (row >= rows) return;\n"
    rows_arg = "" if rows_per_block == 1 else ", int rows"
    rows_val = "" if rows_per_block == 1 else ", rows"
    return f"""{mask}{RMS_VEC_LOAD}
__global__ void __launch_bounds__({threads * rows_per_block}) fused_add_rmsnorm_kernel(
        const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ r,
        const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ out{rows_arg}) {{
    const int row = {row_expr};
{guard}    const size_t base = (size_t)row * HIDDEN;
    float v[{packs}][8];
    float sumsq = 0.f;
    #pragma unroll
    for (int p = 0; p < {packs}; ++p) {{
        const int col = (threadIdx.x + p * {threads}) * 8;
        float xs[8], rs[8];
        load8(x + base + col, xs);
        load8(r + base + col, rs);
        #pragma unroll
        for (int j = 0; j < 8; ++j) {{
            v[p][j] = xs[j] + rs[j];
            sumsq += v[p][j] * v[p][j];
        }}
    }}
{reduce}    #pragma unroll
    for (int p = 0; p < {packs}; ++p) {{
        const int col = (threadIdx.x + p * {threads}) * 8;
        float wv[8];
        load8(w + col, wv);
{store}    }}
}}

torch::Tensor run(torch::Tensor hidden_states, torch::Tensor residual, torch::Tensor weight) {{
    TORCH_CHECK(reinterpret_cast<uintptr_t>(hidden_states.data_ptr()) % 16 == 0, "16-byte aligned rows required");
    auto out = torch::empty_like(hidden_states);
    const int rows = hidden_states.size(0);
    fused_add_rmsnorm_kernel<<<{launch_rows}, {block}>>>(
        reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(residual.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr()){rows_val});
    return out;
}}
"""


def rms_kernel(body: str) -> str:
    return RMS_HEAD + body + RMS_TAIL


def fib_workloads(first_only: bool) -> str:
    lines = (SAMPLES / "fib_workload_fused_add_rmsnorm_h4096.jsonl").read_text().strip().splitlines()
    return "\n".join(lines[:1] if first_only else lines) + "\n"


def fib_solution() -> str:
    sol = json.loads((SAMPLES / f"{FIB_RUN}_r04_solution_sources_elided.json").read_text())
    return json.dumps(
        {
            "name": sol["name"],
            "definition": sol["definition"],
            "author": sol["author"],
            "spec": sol["spec"],
            "sources": [{"path": "kernel.py"}],
            "description": sol["description"],
        },
        indent=1,
    )


def fib_commits() -> tuple[list[CommitSpec], dict]:
    rounds = {int(r["generation_round"]): r for r in fib_rounds()}
    feedback_uuid = rounds[2]["feedback_workload_uuid"]
    ref = us(rounds[2]["reference_latency_ms"])  # the PyTorch reference, measured by the same harness

    def lat(k):
        return us(rounds[k]["latency_ms"])

    def spd(k):
        return round(float(rounds[k]["speedup_factor"]), 4)

    def one(k):
        return {feedback_uuid: lat(k)}

    k2 = rms_kernel(RMS_K2)
    k3 = rms_kernel(rms_vector_kernel(256, "smem"))
    k4 = rms_kernel(rms_vector_kernel(512, "shuffle"))
    k11 = rms_kernel(rms_vector_kernel(512, "shuffle", bf16x2_store=True))
    k12 = rms_kernel(rms_vector_kernel(512, "shuffle", rows_per_block=2, bf16x2_store=True))
    final = {r["benchmark_workload_uuid"]: us(r["latency_ms"]) for r in fib_final()}
    final_speedup = round(geomean(float(r["speedup_factor"]) for r in fib_final()), 4)
    axes = {
        json.loads(line)["workload"]["uuid"]: json.loads(line)["workload"]["axes"]["batch_size"]
        for line in fib_workloads(False).splitlines()
    }
    # two rows per block pays off only where there are rows to pack: the big batches of the full set
    v12_shapes = {u: round(t * (0.93 if axes[u] >= 1024 else 1.0), 3) for u, t in final.items()}
    v12_speedup = round(final_speedup * geomean(final.values()) / geomean(v12_shapes.values()), 4)
    meta = {
        "definition.json": (SAMPLES / "fib_definition_fused_add_rmsnorm_h4096.json").read_text(),
        "workload.jsonl": fib_workloads(True),
        "solution.json": fib_solution(),
    }
    commits = [
        CommitSpec(
            "V0: baseline (FlashInfer-Bench reference wrapper)",
            {
                "kernel.py": rmsnorm_reference(),
                **meta,
                "memory/v0.json": memory(
                    0,
                    ref,
                    by_shape={feedback_uuid: ref},
                    speedup=1.0,
                    category="baseline",
                    description="PyTorch reference: fp32 add, pow/mean, rsqrt and mul as separate kernels",
                ),
            },
        ),
        CommitSpec(
            "v1: reverted (compile error) — dead-end recorded",
            {
                "memory/v1.json": memory(
                    1,
                    None,
                    status="FAIL",
                    category="cuda_rewrite",
                    description="one-pass CUDA kernel using bf16 operator overloads (x + r on __nv_bfloat16)",
                    gate='COMPILE_ERROR: no operator "+" matches these operands (__nv_bfloat16, __nv_bfloat16)',
                )
            },
            body="The torch extension build passes -D__CUDA_NO_BFLOAT16_CONVERSIONS__ and -D__CUDA_NO_HALF_OPERATORS__, "
            "so the bf16 operator overloads and implicit float conversions do not compile in this toolchain. "
            "Convert explicitly with __bfloat162float and __float2bfloat16 instead.",
        ),
        CommitSpec(
            "v2: committed (+84.5%) one-pass fused add+RMSNorm CUDA kernel",
            {
                "kernel.py": k2,
                "memory/v2.json": memory(
                    2,
                    lat(2),
                    by_shape=one(2),
                    speedup=spd(2),
                    category="kernel_fusion",
                    description="one-pass fused add+RMSNorm CUDA kernel: one block of 256 threads per row, "
                    "the row kept in registers between the sum of squares and the scaling",
                    impact="one read of each input row instead of three passes",
                    evidence="the reference launches five elementwise/reduction kernels per call",
                    bottleneck="launch_bound",
                    directions=[
                        {
                            "direction": "16-byte vector loads of the bf16 rows",
                            "rationale": "scalar 2-byte loads leave the memory pipe underused",
                        }
                    ],
                ),
            },
            body="The PyTorch reference makes three passes over each row (add, pow/mean, scale) and launches five kernels. "
            "The fused kernel reads hidden_states and residual once, keeps the fp32 row in registers for both the "
            "reduction and the scaling, and writes the output once, so global traffic falls to the algorithmic "
            "minimum and the launch overhead of the extra kernels disappears.",
        ),
        CommitSpec(
            "v3: committed (+15.4%) 16-byte vector loads of the bf16 rows",
            {
                "kernel.py": k3,
                "memory/v3.json": memory(
                    3,
                    lat(3),
                    by_shape=one(3),
                    speedup=spd(3),
                    category="vectorization",
                    description="16-byte vector loads: each thread loads 8 bf16 values of hidden_states, "
                    "residual and weight per instruction",
                    impact="fewer, wider memory requests per warp",
                    evidence="long_scoreboard dominates the stalls: loads of 2 bytes per thread waiting on global memory",
                    bottleneck="memory_bound",
                    pitfalls=[
                        {
                            "pitfall": "misaligned address on a sliced hidden_states tensor",
                            "explanation": "the 16-byte vector load requires a 16-byte aligned row start; "
                            "a view that starts mid-row is only 2-byte aligned, so the load faults",
                            "fix": "check the data pointer alignment in the host wrapper and call .contiguous() first",
                        }
                    ],
                    directions=[
                        {
                            "direction": "warp-shuffle block reduction",
                            "rationale": "the shared-memory tree needs a barrier per level",
                        }
                    ],
                ),
            },
            body="Each thread now issues one 16-byte load per 8 elements instead of eight 2-byte loads, so a warp's request "
            "covers whole 128-byte lines and the load/store unit issues 8x fewer instructions; the kernel is memory bound "
            "and the wider requests raise achieved bandwidth.",
        ),
        CommitSpec(
            "v4: committed (+13.6%) warp-shuffle reduction with 512 threads per row",
            {
                "kernel.py": k4,
                "memory/v4.json": memory(
                    4,
                    lat(4),
                    by_shape=one(4),
                    speedup=spd(4),
                    category="reduction",
                    description="warp-shuffle reduction of the sum of squares with 512 threads per row",
                    impact="one barrier per row instead of nine",
                    evidence="barrier stalls second after long_scoreboard in the vectorised kernel",
                    bottleneck="latency_bound",
                ),
            },
            body="The shared-memory tree reduction needs a __syncthreads() per level (nine for 256 threads). Reducing within "
            "each warp with __shfl_xor_sync and combining the 16 warp sums needs one barrier, because only the warp "
            "totals go through shared memory; the shorter dependency chain is what the single-row block waits on.",
        ),
        CommitSpec(
            "v5: reverted (flat-within-noise, 0.0%) — dead-end recorded",
            {
                "memory/v5.json": memory(
                    5,
                    lat(5),
                    by_shape=one(5),
                    speedup=spd(5),
                    category="launch_config",
                    description="__launch_bounds__(512, 2) to keep two blocks resident per SM",
                    gate="geomean +0.0% vs HEAD, within noise",
                )
            },
            body="At batch_size = 7 the grid is only 7 blocks on 108 SMs, so a second resident block per SM has nothing to "
            "schedule; occupancy is not the limiter and the register cap cannot help.",
        ),
        CommitSpec(
            "v6: reverted (-5.3%, shared-memory weight) — dead-end recorded",
            {
                "memory/v6.json": memory(
                    6,
                    lat(6),
                    by_shape=one(6),
                    speedup=spd(6),
                    category="smem_staging",
                    description="stage the 8 KB weight vector in shared memory once per block",
                    gate="geomean -5.3% vs HEAD",
                )
            },
            body="Staging the weight vector in shared memory needs a __syncthreads() between the copy and the output loop. "
            "With one row per block every block pays that barrier once and nothing amortises it, so the barrier "
            "costs more than it saves in L2 reads of the weight.",
        ),
        CommitSpec(
            "dead-end recorded: persistent grid-stride loop over rows, cp.async prefetch of the residual row. "
            "Next: fuse the weight load into the vector loop",
            {
                "memory/v7.json": memory(
                    7,
                    lat(7),
                    by_shape=one(7),
                    speedup=spd(7),
                    category="scheduling",
                    description="persistent grid-stride loop over rows; cp.async prefetch of the residual row",
                )
            },
            body="The persistent grid-stride loop over rows launches 108 blocks for 7 rows, which leaves 101 of them idle "
            "and adds index math to every row. The cp.async prefetch of the residual row requires a commit/wait pair "
            "per stage, and with a single row per block there is no second stage to overlap it with.",
        ),
        CommitSpec(
            "v8: reverted (within noise) — dead-end recorded",
            {
                "memory/v8.json": memory(
                    8,
                    lat(8),
                    by_shape=one(8),
                    speedup=spd(8),
                    category="reordering",
                    description="store the residual sum before the normalisation",
                    gate="geomean +0.0% vs HEAD",
                )
            },
        ),
        CommitSpec(
            "v9: reverted (sandbox outage) — dead-end recorded",
            {
                "memory/v9.json": memory(
                    9, None, status="UNKNOWN", category="rerun", description="re-run of the previous kernel"
                )
            },
        ),
        CommitSpec(
            "v10: reverted (-5.3%) — dead-end recorded",
            {
                "memory/v10.json": memory(
                    10,
                    lat(10),
                    by_shape=one(10),
                    speedup=spd(10),
                    category="multi_row",
                    description="two rows per block with 256 threads each",
                    gate="geomean -5.3% vs HEAD",
                )
            },
            body="Packing two rows into one block only helps batch_size >= 1024: on the feedback workload the grid "
            "halves to 4 blocks, so half of the SMs that had a row now have none and the per-row work is unchanged.",
        ),
        CommitSpec(
            "v11: evaluate on the full 14-workload set; bf16x2 packed stores of the output",
            {
                "kernel.py": k11,
                "workload.jsonl": fib_workloads(False),
                "memory/v11.json": memory(
                    11,
                    round(geomean(final.values()), 3),
                    by_shape=final,
                    speedup=final_speedup,
                    category="harness",
                    description="bf16x2 packed stores of the output row",
                    evidence="the feedback workload alone (batch_size 7) under-represents the large batches",
                    bottleneck="memory_bound",
                    directions=[
                        {
                            "direction": "two rows per block for the large batches",
                            "rationale": "batch sizes above 8000 leave many rows per SM",
                        }
                    ],
                ),
            },
            body="From here on the harness benchmarks all 14 workloads of the definition (batch_size 1 to 14509) instead "
            "of the first one; the output is stored as packed bf16x2 pairs.",
        ),
        CommitSpec(
            "v12: committed two rows per block when batch_size >= 1024",
            {
                "kernel.py": k12,
                "memory/v12.json": memory(
                    12,
                    round(geomean(v12_shapes.values()), 3),
                    by_shape=v12_shapes,
                    speedup=v12_speedup,
                    category="multi_row",
                    description="two rows per block (blockDim 512x2) when batch_size >= 1024, one row otherwise",
                    impact="halve the block count where the grid is many waves deep",
                    bottleneck="memory_bound",
                ),
            },
            body="With thousands of rows the grid is many waves deep, so packing two rows per block halves the number of "
            "blocks the scheduler launches and shares each weight load between both rows, because the weight pack "
            "is loaded once per column for the pair.",
        ),
    ]
    untracked = {
        "profiles/v0/summary.txt": summary_txt(
            "distribution_elementwise_grid_stride_kernel",
            duration=3.1,
            grid="216 blocks x 256 threads",
            sm=4.2,
            mem=12.5,
            l2=50.0,
            occ=40.1,
            regs=18,
            stalls={"long_scoreboard": 1.2},
            diagnosis="Pattern A [low]: launch bound",
            symptoms="launch-bound",
        ),
        "profiles/v2/summary.txt": summary_txt(
            "fused_add_rmsnorm_kernel",
            duration=11.8,
            grid="7 blocks x 256 threads",
            sm=3.9,
            mem=31.4,
            l2=62.0,
            occ=12.3,
            regs=64,
            stalls={"long_scoreboard": 9.12, "barrier": 2.41, "lg_throttle": 1.05},
            diagnosis="Pattern E [high]: memory latency bound, scalar loads",
            symptoms="memory-bound, latency-bound",
        ),
        "profiles/v2/REPORT.md": "# v2 profile\n\n**Root cause**: scalar 2-byte loads: every warp issues eight separate requests "
        "per 16 bytes of a row, so long_scoreboard stalls dominate and memory throughput stays at 31.4% "
        "of peak.\n\n## Next\nvectorise the loads.\n",
        "profiles/v4/summary.txt": summary_txt(
            "fused_add_rmsnorm_kernel",
            duration=8.9,
            grid="7 blocks x 512 threads",
            sm=6.8,
            mem=47.9,
            l2=64.3,
            occ=24.6,
            regs=56,
            stalls={"long_scoreboard": 5.31, "barrier": 0.62, "wait": 0.41},
            diagnosis="Pattern B [medium]: tail effect (7 blocks on 108 SMs)",
            symptoms="memory-bound, tail-effect",
        ),
    }
    return commits, untracked


# =============================================================================================
# 2. AKA long-horizon run: flash attention forward on an L20N (CUDA), episode grammar
# =============================================================================================

AKA_SHAPES = [str(i) for i in range(6)]  # opaque shape ids (generalised Atrex-Bench)
AKA_AXES = [
    {"batch_size": 1, "seq_len": 512},
    {"batch_size": 1, "seq_len": 2048},
    {"batch_size": 4, "seq_len": 1024},
    {"batch_size": 4, "seq_len": 4096},
    {"batch_size": 8, "seq_len": 2048},
    {"batch_size": 16, "seq_len": 8192},
]
AKA_WEIGHTS = [0.18, 0.55, 0.62, 1.9, 1.25, 4.6]  # relative cost per shape (geomean 1)


def aka_curve() -> dict:
    return json.loads((SAMPLES / "aka_run7_flash_attention_l20n_episode_curves.json").read_text())["cuda"]


def aka_by_shape(geo: float) -> dict:
    g = geomean(AKA_WEIGHTS)
    return {s: round(geo * w / g, 2) for s, w in zip(AKA_SHAPES, AKA_WEIGHTS)}


ATTN_HEAD = '''"""Flash-attention forward (bf16, head_dim 128) as a CUDA extension."""
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>
using namespace nvcuda;

constexpr int HEAD_DIM = 128;
'''

ATTN_TAIL = '''"""

CPP_SRC = "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale);"

_ext = load_inline(name="flash_attn_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["run"],
                   extra_cuda_cflags=["-O3", "-arch=sm_120"])


def run(q, k, v, scale):
    return _ext.run(q.contiguous(), k.contiguous(), v.contiguous(), float(scale))
'''

ATTN_NAIVE = """
__global__ void scores_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k, float* s, int n, float scale) {
    const int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float acc = 0.f;
    for (int d = 0; d < HEAD_DIM; ++d) acc += __bfloat162float(q[i * HEAD_DIM + d]) * __bfloat162float(k[j * HEAD_DIM + d]);
    s[(size_t)i * n + j] = acc * scale;
}

__global__ void softmax_pv_kernel(const float* s, const __nv_bfloat16* v, __nv_bfloat16* o, int n) {
    const int i = blockIdx.x, d = threadIdx.x;
    float m = -INFINITY, l = 0.f, acc = 0.f;
    for (int j = 0; j < n; ++j) m = fmaxf(m, s[(size_t)i * n + j]);
    for (int j = 0; j < n; ++j) {
        float p = __expf(s[(size_t)i * n + j] - m);
        l += p;
        acc += p * __bfloat162float(v[j * HEAD_DIM + d]);
    }
    o[i * HEAD_DIM + d] = __float2bfloat16(acc / l);
}
"""

ATTN_RUN_NAIVE = """
torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale) {
    const int n = q.size(-2);
    auto o = torch::empty_like(q);
    auto s = torch::empty({n, n}, q.options().dtype(torch::kFloat32));
    for (int bh = 0; bh < q.numel() / (n * HEAD_DIM); ++bh) {
        auto qp = reinterpret_cast<const __nv_bfloat16*>(q.data_ptr()) + (size_t)bh * n * HEAD_DIM;
        auto kp = reinterpret_cast<const __nv_bfloat16*>(k.data_ptr()) + (size_t)bh * n * HEAD_DIM;
        auto vp = reinterpret_cast<const __nv_bfloat16*>(v.data_ptr()) + (size_t)bh * n * HEAD_DIM;
        auto op = reinterpret_cast<__nv_bfloat16*>(o.data_ptr()) + (size_t)bh * n * HEAD_DIM;
        scores_kernel<<<dim3((n + 127) / 128, n), 128>>>(qp, kp, s.data_ptr<float>(), n, (float)scale);
        softmax_pv_kernel<<<n, HEAD_DIM>>>(s.data_ptr<float>(), vp, op, n);
    }
    return o;
}
"""


def attn_flash(step: int) -> str:
    """The tiled online-softmax kernel as it grew over the episodes (step = episode number)."""
    block_m = 128 if step >= 5 else 64
    warps = 8 if step >= 5 else 4
    parts = [f"\nconstexpr int BLOCK_M = {block_m};\nconstexpr int BLOCK_N = 64;\nconstexpr int NUM_WARPS = {warps};\n"]
    if step >= 5:
        parts.append("constexpr int SMEM_PAD = 8;  // XOR-free padding: rows of 136 bf16 keep ldmatrix conflict-free\n")
    else:
        parts.append("constexpr int SMEM_PAD = 0;\n")
    if step >= 4:
        parts.append("""
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(addr), "l"(gmem));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\\n" ::); }
""")
    exp = "exp2f((s - m_new) * LOG2E)" if step >= 6 else "__expf(s - m_new)"
    if step >= 6:
        parts.append("constexpr float LOG2E = 1.4426950408889634f;\n")
    mma = (
        """        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> kb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> sc;
        wmma::fill_fragment(sc, 0.f);
        for (int d = 0; d < HEAD_DIM; d += 16) {
            wmma::load_matrix_sync(qa, q_s + warp_row * (HEAD_DIM + SMEM_PAD) + d, HEAD_DIM + SMEM_PAD);
            wmma::load_matrix_sync(kb, k_s[stage] + d, HEAD_DIM + SMEM_PAD);
            wmma::mma_sync(sc, qa, kb, sc);
        }
        wmma::store_matrix_sync(s_s + warp_row * BLOCK_N, sc, BLOCK_N, wmma::mem_row_major);
"""
        if step >= 3
        else """        for (int j = lane; j < BLOCK_N; j += 32) {
            float acc = 0.f;
            for (int d = 0; d < HEAD_DIM; ++d)
                acc += __bfloat162float(q_s[warp_row * (HEAD_DIM + SMEM_PAD) + d]) * __bfloat162float(k_s[stage][j * (HEAD_DIM + SMEM_PAD) + d]);
            s_s[warp_row * BLOCK_N + j] = acc;
        }
"""
    )
    load = (
        """        for (int i = threadIdx.x; i < BLOCK_N * HEAD_DIM / 8; i += blockDim.x) {
            const int r = i / (HEAD_DIM / 8), c = (i % (HEAD_DIM / 8)) * 8;
            cp_async16(&k_s[next][r * (HEAD_DIM + SMEM_PAD) + c], k + (size_t)(kv0 + BLOCK_N + r) * HEAD_DIM + c);
            cp_async16(&v_s[next][r * (HEAD_DIM + SMEM_PAD) + c], v + (size_t)(kv0 + BLOCK_N + r) * HEAD_DIM + c);
        }
"""
        if step >= 4
        else """        for (int i = threadIdx.x; i < BLOCK_N * HEAD_DIM; i += blockDim.x) {
            const int r = i / HEAD_DIM, c = i % HEAD_DIM;
            k_s[stage][r * (HEAD_DIM + SMEM_PAD) + c] = k[(size_t)(kv0 + r) * HEAD_DIM + c];
            v_s[stage][r * (HEAD_DIM + SMEM_PAD) + c] = v[(size_t)(kv0 + r) * HEAD_DIM + c];
        }
        __syncthreads();
"""
    )
    stages = 2 if step >= 4 else 1
    schedule = (
        """    // longest rows first: (batch, head, q-tile) in descending work order keeps the last wave full
    const int tile = gridDim.x - 1 - blockIdx.x;
"""
        if step >= 8
        else "    const int tile = blockIdx.x;\n"
    )
    unroll = "            #pragma unroll 4\n" if step >= 7 else ""
    vt = (
        "            wmma::load_matrix_sync(vb, v_s[stage] + d, HEAD_DIM + SMEM_PAD);  // ldmatrix.trans path\n"
        if step >= 10
        else ""
    )
    parts.append(f"""
__global__ void __launch_bounds__(NUM_WARPS * 32) flash_attn_fwd_kernel(
        const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
        __nv_bfloat16* __restrict__ o, int n, float scale) {{
    __shared__ __align__(16) __nv_bfloat16 q_s[BLOCK_M * (HEAD_DIM + SMEM_PAD)];
    __shared__ __align__(16) __nv_bfloat16 k_s[{stages}][BLOCK_N * (HEAD_DIM + SMEM_PAD)];
    __shared__ __align__(16) __nv_bfloat16 v_s[{stages}][BLOCK_N * (HEAD_DIM + SMEM_PAD)];
    __shared__ float s_s[BLOCK_M * BLOCK_N];
{schedule}    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp * (BLOCK_M / NUM_WARPS);
    const int q0 = tile * BLOCK_M;
    for (int i = threadIdx.x; i < BLOCK_M * HEAD_DIM; i += blockDim.x)
        q_s[(i / HEAD_DIM) * (HEAD_DIM + SMEM_PAD) + i % HEAD_DIM] = q[(size_t)(q0 + i / HEAD_DIM) * HEAD_DIM + i % HEAD_DIM];
    float m_i = -INFINITY, l_i = 0.f, acc[HEAD_DIM / 32] = {{0.f}};
    int stage = 0;
    for (int kv0 = 0; kv0 < n; kv0 += BLOCK_N) {{
        const int next = (stage + 1) % {stages};
{load}{mma}        __syncthreads();
        float m_new = m_i;
        for (int j = 0; j < BLOCK_N; ++j) m_new = fmaxf(m_new, s_s[warp_row * BLOCK_N + j] * scale);
        const float alpha = __expf(m_i - m_new);
        l_i *= alpha;
        for (int c = 0; c < HEAD_DIM / 32; ++c) acc[c] *= alpha;
        for (int j = 0; j < BLOCK_N; ++j) {{
            const float s = s_s[warp_row * BLOCK_N + j] * scale;
            const float p = {exp};
            l_i += p;
{vt}{unroll}            for (int c = 0; c < HEAD_DIM / 32; ++c)
                acc[c] += p * __bfloat162float(v_s[stage][j * (HEAD_DIM + SMEM_PAD) + lane + 32 * c]);
        }}
        m_i = m_new;
        stage = next;
    }}
    for (int c = 0; c < HEAD_DIM / 32; ++c)
        o[(size_t)(q0 + warp_row) * HEAD_DIM + lane + 32 * c] = __float2bfloat16(acc[c] / l_i);
}}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale) {{
    const int n = q.size(-2);
    auto o = torch::empty_like(q);
    const int tiles = q.numel() / HEAD_DIM / BLOCK_M;
    flash_attn_fwd_kernel<<<tiles, NUM_WARPS * 32>>>(
        reinterpret_cast<const __nv_bfloat16*>(q.data_ptr()), reinterpret_cast<const __nv_bfloat16*>(k.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(v.data_ptr()), reinterpret_cast<__nv_bfloat16*>(o.data_ptr()), n, (float)scale);
    return o;
}}
""")
    return "".join(parts)


AKA_STEPS = {  # episode -> (what it changed, why it is faster, evidence, bottleneck type)
    1: (
        "fuse the softmax into the P*V pass so the score matrix is read once",
        "The framework baseline wrote the full score matrix to global memory and read it three times (max, exp-sum, "
        "P*V); reading it once removes two of the three passes over the n x n floats, which dominate the traffic.",
        "score-matrix traffic is most of the DRAM bytes",
        "memory_bound",
    ),
    2: (
        "tiled flash attention: online softmax over 64-wide K/V tiles held in shared memory",
        "The online softmax keeps the running max and sum in registers, so the score matrix never reaches global "
        "memory; K and V tiles are loaded once per query tile instead of once per query row.",
        "DRAM traffic scales with n squared because of the materialised scores",
        "memory_bound",
    ),
    3: (
        "tensor-core QK^T with wmma 16x16x16 bf16 fragments",
        "The scalar dot products were compute bound on FP32 FMA; the wmma fragments run QK^T on the tensor cores, "
        "which deliver many times the FMA pipe's throughput for bf16 inputs.",
        "fma pipe utilisation above 90%, tensor cores idle",
        "compute_bound",
    ),
    4: (
        "two-stage cp.async pipeline for the K/V tiles",
        "The next K/V tile is copied with cp.async while the current one is multiplied, so the global load latency "
        "is hidden behind the tensor-core work instead of stalling every tile on long_scoreboard.",
        "long_scoreboard stalls at every tile boundary",
        "latency_bound",
    ),
    5: (
        "128-row query tiles with 8 warps and padded shared-memory rows",
        "Doubling the query tile halves the K/V reloads per query row, and padding each shared-memory row by 8 bf16 "
        "removes the 8-way bank conflicts of the fragment loads, so both the traffic and the shared-memory stalls fall.",
        "K/V reload traffic per query row and bank conflicts on fragment loads",
        "memory_bound",
    ),
    6: (
        "exp2 with a log2(e) prescale in the online softmax",
        "exp2f maps to a single MUFU.EX2 instruction while __expf needs an extra multiply per element, so the "
        "softmax's special-function pipe issue rate limits less.",
        "MUFU issue stalls in the softmax loop",
        "compute_bound",
    ),
    7: ("unroll the P*V loop by 4", None, None, "compute_bound"),
    8: (
        "longest-first persistent ordering of (batch, head, query-tile) work",
        "Launching the longest tiles first keeps the last wave full; with descending work order the tail effect of "
        "the ragged final wave shrinks, because short tiles fill the gaps the long ones leave.",
        "tail effect: the final wave runs with a third of the SMs busy",
        "tail_effect",
    ),
    10: (
        "ldmatrix.trans loads of the V tile",
        "Loading V transposed with ldmatrix.trans feeds the P*V fragments directly, so the per-element shared-memory "
        "reads of V are replaced by one instruction per 8x8 tile.",
        "shared-memory load instructions in the P*V loop",
        "memory_bound",
    ),
}

AKA_EXPERIMENTS = {  # episode -> experiments the run gave up on (each a lever with its own cause)
    5: [
        {
            "name": "XOR swizzle of the Q tile",
            "hypothesis": "conflict-free Q fragment loads",
            "change": "XOR-swizzle the Q tile in shared memory as well as K and V",
            "evidence": "no change in shared-memory wavefronts for Q",
            "result": "the swizzle cannot pay off because Q is read from shared memory once per tile into registers",
            "decision": "revert",
        }
    ],
    11: [
        {
            "name": "split-KV with a combine kernel",
            "hypothesis": "more CTAs for short sequences",
            "change": "split-KV with a separate combine kernel for seq_len <= 512",
            "evidence": "shape-0 slower by 9%",
            "result": "the combine kernel launch and the partial-output round trip through global memory cost more than the "
            "extra CTAs save when seq_len <= 512",
            "decision": "revert",
        }
    ],
    12: [
        {
            "name": "fp16 accumulation of P*V",
            "hypothesis": "half the accumulator registers",
            "change": "accumulate P*V in fp16 instead of fp32",
            "evidence": "max_abs_err 0.031 against the 0.01 tolerance on 11 of 90 shapes",
            "result": "fp16 accumulation loses the low bits of long rows, so the correctness gate rejects it",
            "decision": "revert",
        }
    ],
    13: [
        {
            "name": "128x128 tiles",
            "hypothesis": "fewer K/V reloads",
            "change": "128x128 query/key tiles with 8 warps",
            "evidence": "ptxas reports 255 registers per thread and 1136 bytes of spill stores",
            "result": "the register spills to local memory cost more than the larger tile saves",
            "decision": "revert",
        }
    ],
    14: [
        {
            "name": "warp-specialised producer",
            "hypothesis": "overlap loads and MMA",
            "change": "warp-specialised producer/consumer split with one producer warp",
            "evidence": "named-barrier wait time grows to a quarter of the loop",
            "result": "with 4 consumer warps the producer's named-barrier hand-off serialises each K/V tile load with the "
            "MMA loop at head_dim = 128",
            "decision": "revert",
        }
    ],
}


def aka_kernel(step: int) -> str:
    body = (
        ATTN_NAIVE + ATTN_RUN_NAIVE
        if step == 0
        else attn_flash(step)
        if step >= 2
        else ATTN_NAIVE.replace("__global__ void scores_kernel", "__global__ void __launch_bounds__(128) scores_kernel")
        + ATTN_RUN_NAIVE
    )
    return ATTN_HEAD + body + ATTN_TAIL


def aka_commits() -> tuple[list[CommitSpec], dict]:
    curve = aka_curve()["curve"]
    definition = json.dumps(
        {
            "name": "flash_attention_fwd_h32_d128",
            "op_type": "attention",
            "description": "Flash-attention forward, bf16, 32 heads of dim 128, no mask.",
            "axes": {
                "batch_size": {"type": "var"},
                "seq_len": {"type": "var"},
                "num_heads": {"type": "const", "value": 32},
                "head_dim": {"type": "const", "value": 128},
            },
        },
        indent=1,
    )
    workloads = "\n".join(json.dumps({"uuid": s, "axes": a, "inputs": {}}) for s, a in zip(AKA_SHAPES, AKA_AXES)) + "\n"
    solution = json.dumps(
        {
            "name": "flash_attention_fwd",
            "definition": "flash_attention_fwd_h32_d128",
            "spec": {"languages": ["pytorch"], "target_hardware": ["LOCAL"]},
            "sources": [{"path": "kernel.py"}],
        }
    )
    baseline = {"framework": "cuda", "platform": "L20N", "arch": "sm_120"}
    base = curve[0]["latency_us"]
    commits = [
        CommitSpec(
            "V0: baseline (SOL reference wrapper)",
            {
                "kernel.py": "import torch\n\n\ndef run(q, k, v, scale):\n    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)\n",
                "definition.json": definition,
                "workload.jsonl": workloads,
                "solution.json": solution,
                "framework_baseline.json": json.dumps(baseline),
                "memory/v0.json": memory(0, None, category="baseline", description="PyTorch SDPA reference"),
            },
        ),
        CommitSpec(
            "v1: framework baseline (cuda) replacing the V0 PyTorch wrapper",
            {
                "kernel.py": aka_kernel(0),
                "memory/v1.json": memory(
                    1,
                    round(base, 2),
                    by_shape=aka_by_shape(base),
                    category="framework_baseline",
                    description="CUDA framework baseline: materialised scores, separate softmax and P*V kernels",
                    bottleneck="memory_bound",
                ),
            },
        ),
        CommitSpec(
            "v1: pin framework baseline 32cbb0c2",
            {"framework_baseline.json": json.dumps({**baseline, "version": "v1"})},
        ),
    ]
    incumbent = 1
    for point in curve[1:]:
        e = point["step"]
        n = e + 1
        exps = AKA_EXPERIMENTS.get(e, [])
        if point.get("accepted"):
            change, why, evidence, bottleneck = AKA_STEPS[e]
            geo = round(point["latency_us"], 2)
            mem = memory(
                n,
                geo,
                by_shape=aka_by_shape(geo),
                category="long_horizon_episode",
                description=f"episode {e}: {change}",
                impact=why.split(";")[0].split(", so")[0] if why else None,
                evidence=evidence,
                bottleneck=bottleneck,
                experiments=exps,
                lh_status="promoted",
                pitfalls=[
                    {
                        "error_type": "misaligned address",
                        "error_message": "CUDA error: misaligned address in the wmma fragment load",
                        "root_cause": "wmma::load_matrix_sync requires 16-byte aligned shared-memory rows; an unpadded "
                        "row stride of 136 bytes breaks the alignment of odd rows",
                        "fix_applied": "declare the tiles __align__(16) and pad rows to a multiple of 8 elements",
                        "lesson": "check the row stride alignment before every fragment load",
                    }
                ]
                if e == 3
                else None,
            )
            commits.append(
                CommitSpec(
                    f"episode {e}: promote verified long-horizon candidate",
                    {
                        "kernel.py": aka_kernel(e),
                        f"memory/v{n}.json": mem,
                        f"memory/long_horizon_e{e:04d}.json": json.dumps({"episode": e, "status": "promoted"}),
                    },
                    body=why or "",
                )
            )
            incumbent = n
        else:
            status = point["status"] if point["status"] != "candidate_ready" else "candidate_ready"
            mem = memory(
                n,
                round(point["latency_us"], 2),
                category="long_horizon_episode",
                description=f"episode {e}: " + (exps[0]["change"] if exps else "hand-off without a candidate"),
                experiments=exps,
                carried=f"v{incumbent}",
                lh_status=status,
                evidence="ABBA verification rejected the candidate" if exps else None,
                bottleneck="episode-derived",
            )
            commits.append(CommitSpec(f"v{n}: long-horizon episode {e} {status}", {f"memory/v{n}.json": mem}))
    untracked = {
        "profiles/episode_4/summary.txt": summary_txt(
            "flash_attn_fwd_kernel",
            duration=612.0,
            grid="2048 blocks x 128 threads",
            sm=41.2,
            mem=72.5,
            l2=58.1,
            occ=33.0,
            regs=128,
            stalls={"long_scoreboard": 4.1, "mio_throttle": 2.9, "barrier": 1.2},
            diagnosis="Pattern C [high]: shared-memory bank conflicts on fragment loads",
            symptoms="memory-bound, bank-conflicts",
        ),
        "profiles/episode_8/summary.txt": summary_txt(
            "flash_attn_fwd_kernel",
            duration=291.0,
            grid="1024 blocks x 256 threads",
            sm=63.7,
            mem=55.4,
            l2=71.0,
            occ=25.0,
            regs=168,
            stalls={"math_pipe_throttle": 3.3, "short_scoreboard": 1.4},
            diagnosis="Pattern F [medium]: compute bound in the softmax",
            symptoms="compute-bound",
        ),
    }
    return commits, untracked


# =============================================================================================
# 3. SGEMM ladder on an RTX A6000, `V<N>: <perf> | <change>` grammar with reverts
# =============================================================================================

SGEMM_HEAD = '''"""SGEMM C = A @ B (fp32, row-major) as a CUDA extension."""
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
'''

SGEMM_TAIL = '''"""

CPP_SRC = "torch::Tensor run(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="sgemm_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["run"],
                   extra_cuda_cflags=["-O3", "-arch=sm_86"])


def run(a, b):
    return _ext.run(a.contiguous(), b.contiguous())
'''


def sgemm_launcher(kernel: str, grid: str, block: str) -> str:
    return f"""
torch::Tensor run(torch::Tensor a, torch::Tensor b) {{
    const int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({{M, N}}, a.options());
    {kernel}<<<{grid}, {block}>>>(M, N, K, a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>());
    return c;
}}
"""


SGEMM_KERNELS = {
    "naive": """
__global__ void sgemm_naive(int M, int N, int K, const float* A, const float* B, float* C) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""
    + sgemm_launcher("sgemm_naive", "dim3((M + 31) / 32, (N + 31) / 32)", "dim3(32, 32)"),
    "coalesced": """
constexpr int BLOCK = 32;

__global__ void sgemm_coalesced(int M, int N, int K, const float* A, const float* B, float* C) {
    const int row = blockIdx.x * BLOCK + threadIdx.x / BLOCK;
    const int col = blockIdx.y * BLOCK + threadIdx.x % BLOCK;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""
    + sgemm_launcher("sgemm_coalesced", "dim3((M + BLOCK - 1) / BLOCK, (N + BLOCK - 1) / BLOCK)", "BLOCK * BLOCK"),
}


def smem_kernel(tile: int) -> str:
    return f"""
constexpr int TILE = {tile};

__global__ void sgemm_smem(int M, int N, int K, const float* A, const float* B, float* C) {{
    __shared__ float As[TILE * TILE];
    __shared__ float Bs[TILE * TILE];
    const int tr = threadIdx.x / TILE, tc = threadIdx.x % TILE;
    const int row = blockIdx.x * TILE + tr, col = blockIdx.y * TILE + tc;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {{
        As[tr * TILE + tc] = A[row * K + k0 + tc];
        Bs[tr * TILE + tc] = B[(k0 + tr) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[tr * TILE + k] * Bs[k * TILE + tc];
        __syncthreads();
    }}
    C[row * N + col] = acc;
}}
""" + sgemm_launcher("sgemm_smem", "dim3(M / TILE, N / TILE)", "TILE * TILE")


def blocktile_kernel(
    kind: str,
    bk: int = 8,
    bounds: bool = False,
    vectorized: bool = False,
    double_buffer: bool = False,
    warptile: bool = False,
) -> str:
    tm, tn = (8, 8) if kind == "2d" else (8, 1)
    guard = "    if (cRow * BM >= M || cCol * BN >= N) return;\n" if bounds else ""
    stages = 2 if double_buffer else 1
    if vectorized:
        load = """        float4 a4 = reinterpret_cast<const float4*>(&A[innerRowA * K + innerColA * 4])[0];
        As[cur][(innerColA * 4 + 0) * BM + innerRowA] = a4.x;  // transposed: As is read along M
        As[cur][(innerColA * 4 + 1) * BM + innerRowA] = a4.y;
        As[cur][(innerColA * 4 + 2) * BM + innerRowA] = a4.z;
        As[cur][(innerColA * 4 + 3) * BM + innerRowA] = a4.w;
        reinterpret_cast<float4*>(&Bs[cur][innerRowB * BN + innerColB * 4])[0] =
            reinterpret_cast<const float4*>(&B[innerRowB * N + innerColB * 4])[0];
"""
        a_read = "As[cur][dot * BM + threadRow * TM + i]"
    else:
        load = """        As[cur][innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[cur][innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
"""
        a_read = "As[cur][(threadRow * TM + i) * BK + dot]"
    if double_buffer:
        load = load.replace("[cur]", "[nxt]")
    warp = (
        """    // warptiling: each warp owns a WM x WN sub-tile, so a warp's Bs reads hit distinct banks
    const int warpIdx = threadIdx.x / 32, warpRow = warpIdx / (BN / WN), warpCol = warpIdx % (BN / WN);
    const int threadRow = warpRow * (WM / TM) + (threadIdx.x % 32) / (WN / TN);
    const int threadCol = warpCol * (WN / TN) + (threadIdx.x % 32) % (WN / TN);
"""
        if warptile
        else """    const int threadRow = threadIdx.x / (BN / TN), threadCol = threadIdx.x % (BN / TN);
"""
    )
    consts = f"constexpr int BM = 128, BN = 128, BK = {bk}, TM = {tm}, TN = {tn};\n"
    if warptile:
        consts += "constexpr int WM = 64, WN = 32;\n"
    name = {"1d": "sgemm_blocktile_1d", "2d": "sgemm_blocktile_2d"}[kind]
    if warptile:
        name = "sgemm_warptile"
    elif vectorized:
        name = "sgemm_vectorized"
    inner = (
        "        for (int j = 0; j < TN; ++j) regN[j] = Bs[cur][dot * BN + threadCol * TN + j];\n"
        f"        for (int i = 0; i < TM; ++i) regM[i] = {a_read};\n"
        "        for (int i = 0; i < TM; ++i)\n"
        "            for (int j = 0; j < TN; ++j) acc[i * TN + j] += regM[i] * regN[j];\n"
    )
    swap = "        cur ^= 1; nxt ^= 1;\n" if double_buffer else ""
    return f"""
{consts}
__global__ void __launch_bounds__((BM * BN) / (TM * TN)) {name}(int M, int N, int K, const float* A, const float* B, float* C) {{
    const int cRow = blockIdx.y, cCol = blockIdx.x;
{guard}    __shared__ float As[{stages}][BM * BK];
    __shared__ float Bs[{stages}][BK * BN];
{warp}    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const int innerRowA = threadIdx.x / {"(BK / 4)" if vectorized else "BK"}, innerColA = threadIdx.x % {"(BK / 4)" if vectorized else "BK"};
    const int innerRowB = threadIdx.x / {"(BN / 4)" if vectorized else "BN"}, innerColB = threadIdx.x % {"(BN / 4)" if vectorized else "BN"};
    float acc[TM * TN] = {{0.f}};
    float regM[TM], regN[TN];
    int cur = 0, nxt = {1 if double_buffer else 0};
    for (int bk = 0; bk < K; bk += BK) {{
{load}        __syncthreads();
        A += BK;
        B += BK * N;
        for (int dot = 0; dot < BK; ++dot) {{
{inner}        }}
        __syncthreads();
{swap}    }}
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            C[(threadRow * TM + i) * N + threadCol * TN + j] = acc[i * TN + j];
}}
""" + sgemm_launcher(name, "dim3(N / BN, M / BM)", "(BM * BN) / (TM * TN)")


def sgemm_kernel(body: str) -> str:
    return SGEMM_HEAD + body + SGEMM_TAIL


SIZE_BIG, SIZE_SMALL = 4096, 2048
CUBLAS_GFLOPS = {SIZE_BIG: 23015.0, SIZE_SMALL: 21504.0}  # the reference, re-measured by the same harness


def sgemm_point(gflops: float, size: int) -> tuple[float, float]:
    """(latency µs, speedup vs the cuBLAS reference) of one SGEMM of size^3 at `gflops`."""
    latency = round(2.0 * size**3 / (gflops * 1e3), 2)
    ref = 2.0 * size**3 / (CUBLAS_GFLOPS[size] * 1e3)
    return latency, round(ref / latency, 4)


def sgemm_memory(n: int, gflops: float, size: int, **kw) -> str:
    latency, speedup = sgemm_point(gflops, size)
    return memory(n, latency, by_shape={f"m{size}": latency}, speedup=speedup, **kw)


def sgemm_commits() -> tuple[list[CommitSpec], dict]:
    def workload(size):
        return (
            json.dumps(
                {
                    "definition": "sgemm_fp32",
                    "solution": None,
                    "evaluation": None,
                    "workload": {"uuid": f"m{size}", "axes": {"M": size, "N": size, "K": size}, "inputs": {}},
                }
            )
            + "\n"
        )

    definition = json.dumps(
        {
            "name": "sgemm_fp32",
            "op_type": "gemm",
            "description": "C = A @ B for row-major fp32 matrices.",
            "axes": {"M": {"type": "var"}, "N": {"type": "var"}, "K": {"type": "var"}},
        },
        indent=1,
    )
    solution = json.dumps(
        {
            "name": "sgemm_cuda",
            "definition": "sgemm_fp32",
            "spec": {"language": "cuda", "target_hardware": ["NVIDIA RTX A6000"]},
            "sources": [{"path": "kernel.py"}],
        }
    )
    bench = (
        "import torch, time\n\nSIZE = {size}\n\n\ndef bench(run):\n    a = torch.randn(SIZE, SIZE, device='cuda')\n"
        "    b = torch.randn(SIZE, SIZE, device='cuda')\n    return torch.cuda.Event(enable_timing=True), run(a, b)\n"
    )
    k_naive = sgemm_kernel(SGEMM_KERNELS["naive"])
    k_coal = sgemm_kernel(SGEMM_KERNELS["coalesced"])
    k_smem = sgemm_kernel(smem_kernel(32))
    k_smem64 = sgemm_kernel(smem_kernel(64).replace("constexpr int TILE = 64;", "constexpr int TILE = 64;  // 4 warps"))
    k_1d = sgemm_kernel(blocktile_kernel("1d"))
    k_1d_bounds = sgemm_kernel(blocktile_kernel("1d", bounds=True))
    k_2d = sgemm_kernel(blocktile_kernel("2d", bounds=True))
    k_2d_db = sgemm_kernel(blocktile_kernel("2d", bounds=True, double_buffer=True))
    k_vec = sgemm_kernel(blocktile_kernel("2d", bounds=True, vectorized=True))
    k_vec16 = sgemm_kernel(blocktile_kernel("2d", bk=16, bounds=True, vectorized=True))
    k_warp = sgemm_kernel(blocktile_kernel("2d", bk=16, bounds=True, vectorized=True, warptile=True))
    m = sgemm_memory
    commits = [
        CommitSpec(
            "V0: baseline kernel",
            {
                "kernel.py": k_naive,
                "definition.json": definition,
                "solution.json": solution,
                "workload.jsonl": workload(SIZE_BIG),
                "bench/sgemm_bench.py": bench.format(size=SIZE_BIG),
                "memory/v0.json": m(
                    0,
                    309.5,
                    SIZE_BIG,
                    category="baseline",
                    description="naive SGEMM: one thread per element of C",
                    evidence="32 sectors per request on the A loads",
                    bottleneck="memory_bound",
                ),
            },
        ),
        CommitSpec(
            "V1: 1987.3 GFLOPS | global memory coalescing (bottleneck: uncoalesced loads, 32 sectors per request)",
            {
                "kernel.py": k_coal,
                "memory/v1.json": m(
                    1,
                    1987.3,
                    SIZE_BIG,
                    category="memory_coalescing",
                    description="global memory coalescing: consecutive threads walk consecutive columns of C",
                    impact="one 128-byte transaction per warp instead of 32 sectors",
                    bottleneck="memory_bound",
                    directions=[
                        {
                            "direction": "shared-memory cache blocking",
                            "rationale": "every element of A and B is still read from L2 once per use",
                        }
                    ],
                ),
            },
            body="threadIdx.x used to walk the rows of C, so the 32 threads of a warp read 32 different rows of A and B "
            "and each load became 32 separate sectors. Mapping consecutive threads to consecutive columns makes a "
            "warp's B loads and C stores hit one 128-byte line, because the addresses are contiguous, and A is "
            "broadcast within the warp.",
        ),
        CommitSpec(
            "V2: 3318.4 GFLOPS | shared-memory cache blocking 32x32 (bottleneck: L1 hit rate, global loads per FMA)",
            {
                "kernel.py": k_smem,
                "memory/v2.json": m(
                    2,
                    3318.4,
                    SIZE_BIG,
                    category="smem_tiling",
                    description="shared-memory cache blocking with 32x32 tiles of A and B",
                    bottleneck="memory_bound",
                ),
            },
            body="Each 32x32 tile of A and B is loaded into shared memory once and reused by all 32 threads of a row or "
            "column, so global loads per FMA fall 32-fold and the kernel is limited by shared-memory bandwidth instead.",
        ),
        CommitSpec(
            "V3: 2740.1 GFLOPS | 64x64 shared-memory tiles (bottleneck: occupancy)",
            {
                "kernel.py": k_smem64,
                "memory/v3.json": m(
                    3,
                    2740.1,
                    SIZE_BIG,
                    category="smem_tiling",
                    description="64x64 shared-memory tiles",
                    pitfalls=[
                        {
                            "pitfall": "64x64 tiles with one thread per element launch 4096 threads per block",
                            "explanation": "a block is limited to 1024 threads, so the launch fails with an "
                            "invalid configuration error",
                            "fix": "keep 1024 threads and compute four outputs per thread",
                        }
                    ],
                ),
            },
        ),
        CommitSpec(
            "V4: revert V3 (64x64 tiles need 32 KB of shared memory per block; occupancy 67% -> 33%, so the global "
            "loads are no longer hidden)",
            {
                "kernel.py": k_smem,
                "memory/v4.json": m(4, 3317.9, SIZE_BIG, category="revert", description="revert to 32x32 tiles"),
            },
        ),
        CommitSpec(
            "V5: 8474.6 GFLOPS | 1D blocktiling, 8 results per thread (bottleneck: MIO throttle on shared-memory loads)",
            {
                "kernel.py": k_1d,
                "memory/v5.json": m(
                    5,
                    8474.6,
                    SIZE_BIG,
                    category="register_blocking",
                    description="1D blocktiling: each thread computes a column of 8 results of C",
                    evidence="mio_throttle stalls on the shared-memory loads",
                    bottleneck="memory_bound",
                ),
            },
            body="Each thread now computes 8 results of C from one Bs value held in a register, so the shared-memory "
            "loads per FMA fall from 2 to about 1.1 and the MIO throttle stalls that bounded the 32x32 kernel ease.",
        ),
        CommitSpec(
            "V6: 9102.3 GFLOPS | re-baseline on M=N=K=2048, bounds checks for partial tiles",
            {
                "kernel.py": k_1d_bounds,
                "workload.jsonl": workload(SIZE_SMALL),
                "bench/sgemm_bench.py": bench.format(size=SIZE_SMALL),
                "memory/v6.json": m(
                    6,
                    9102.3,
                    SIZE_SMALL,
                    category="harness",
                    description="bounds checks for partial tiles; benchmark size 2048",
                ),
            },
            body="The benchmark moves to 2048^3 so that each candidate runs within the sandbox's time limit; the numbers "
            "from here on are not comparable with the 4096^3 ones.",
        ),
        CommitSpec(
            "V7: 15971.7 GFLOPS | 2D blocktiling (bottleneck: shared-memory loads per FMA)",
            {
                "kernel.py": k_2d,
                "memory/v7.json": m(
                    7,
                    15971.7,
                    SIZE_SMALL,
                    category="register_blocking",
                    description="2D blocktiling: each thread computes an 8x8 block of C from registers",
                    impact="arithmetic intensity per shared-memory load up by 4x",
                    bottleneck="memory_bound",
                    pitfalls=[
                        {
                            "pitfall": "register spills at TM=TN=16",
                            "explanation": "256 accumulators plus the A and B fragments exceed the 255-register "
                            "limit, so ptxas spills to local memory",
                            "fix": "keep TM=TN=8",
                        }
                    ],
                ),
            },
            body="An 8x8 thread tile loads 8 values of As and 8 of Bs into registers per dot step and performs 64 FMAs "
            "with them, so each shared-memory load feeds 4 FMAs instead of 1 and the kernel leaves the shared-memory "
            "bound.",
        ),
        CommitSpec(
            "V8: 14210.5 GFLOPS | double-buffered shared memory tiles (bottleneck: global load latency)",
            {
                "kernel.py": k_2d_db,
                "memory/v8.json": m(
                    8,
                    14210.5,
                    SIZE_SMALL,
                    category="pipelining",
                    description="double-buffered shared-memory tiles of A and B",
                ),
            },
        ),
        CommitSpec(
            "V9: revert V8 (the second stage needs 16 KB more shared memory per block; occupancy drops to one block "
            "per SM and the prefetch cannot overlap the FMA loop)",
            {
                "kernel.py": k_2d,
                "memory/v9.json": m(
                    9, 15968.2, SIZE_SMALL, category="revert", description="revert the double buffering"
                ),
            },
        ),
        CommitSpec(
            "V10: 18236.0 GFLOPS | vectorized float4 loads, transposed As (bottleneck: LDS.32 instruction count)",
            {
                "kernel.py": k_vec,
                "memory/v10.json": m(
                    10,
                    18236.0,
                    SIZE_SMALL,
                    category="vectorization",
                    description="float4 global loads and a transposed As tile",
                    bottleneck="memory_bound",
                    directions=[{"direction": "warptiling", "rationale": "bank conflicts on the Bs reads"}],
                ),
            },
            body="float4 loads move 16 bytes per instruction, and storing As transposed lets the dot loop read 4 "
            "consecutive A values with one LDS.128, so the number of shared-memory load instructions falls by 4x.",
        ),
        CommitSpec(
            "V11: 18390.2 GFLOPS | BK=16 (within noise)",
            {
                "kernel.py": k_vec16,
                "memory/v11.json": m(11, 18390.2, SIZE_SMALL, category="tuning", description="BK=16 instead of 8"),
            },
        ),
        CommitSpec(
            "V12: 20480.9 GFLOPS | warptiling, 2x4 warps per block tile (bottleneck: bank conflicts on Bs reads)",
            {
                "kernel.py": k_warp,
                "memory/v12.json": m(
                    12,
                    20480.9,
                    SIZE_SMALL,
                    category="warptiling",
                    description="warptiling: each warp owns a 64x32 sub-tile of the block tile",
                    bottleneck="memory_bound",
                ),
            },
            body="With each warp owning a 64x32 sub-tile, the 32 threads of a warp read Bs at 32 distinct banks, "
            "so the 2-way bank conflicts of the block-wide thread layout disappear and the register tile is reused "
            "across the warp's rows.",
        ),
    ]
    untracked = {
        "profiles/v0/summary.txt": summary_txt(
            "sgemm_naive",
            duration=444100.0,
            grid="16384 blocks x 1024 threads",
            sm=9.7,
            mem=88.4,
            l2=12.0,
            occ=96.1,
            regs=30,
            stalls={"long_scoreboard": 31.2, "lg_throttle": 6.7},
            diagnosis="Pattern E [high]: uncoalesced global loads",
            symptoms="memory-bound, uncoalesced",
        ),
        "profiles/v5/summary.txt": summary_txt(
            "sgemm_blocktile_1d",
            duration=16200.0,
            grid="1024 blocks x 512 threads",
            sm=58.2,
            mem=39.1,
            l2=81.3,
            occ=62.5,
            regs=86,
            stalls={"mio_throttle": 3.6, "short_scoreboard": 1.9},
            diagnosis="Pattern C [medium]: shared-memory bound",
            symptoms="smem-bound",
        ),
        "profiles/v7/summary.txt": summary_txt(
            "sgemm_blocktile_2d",
            duration=1080.0,
            grid="256 blocks x 256 threads",
            sm=77.4,
            mem=22.3,
            l2=83.8,
            occ=32.9,
            regs=128,
            stalls={"short_scoreboard": 1.4, "mio_throttle": 0.9},
            diagnosis="Pattern C [low]: bank conflicts on Bs reads",
            symptoms="bank-conflicts",
        ),
    }
    return commits, untracked


# =============================================================================================

BUILDERS = {"fib_rmsnorm": fib_commits, "aka_attention": aka_commits, "sgemm_ladder": sgemm_commits}
LABELS = {
    "fib_rmsnorm": "kernel_opt_021_fused_add_rmsnorm_h4096",
    "aka_attention": "kernel_opt_031_flash_attention_l20n",
    "sgemm_ladder": "kernel_opt_041_sgemm_a6000",
}


def build(name: str, parent: Path) -> Path:
    """Build trace `name` as a git work tree under `parent`; returns its path (named like a real trace)."""
    commits, untracked = BUILDERS[name]()
    dest = parent / LABELS[name]
    build_trace(dest, commits, untracked)
    return dest
