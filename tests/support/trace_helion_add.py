"""A Helion trace: the broadcast `add` kernel of samples/helion/ tuned on an H100, skill-era grammar.

Read at build time from ../shared/data/samples/helion/ (never copied into the project): the kernel source
the autotuner's meta records carry, the configs of the autotune CSV (each pinned version uses one of
them verbatim) and their measured perf (ms -> µs, both benchmarked shapes where the CSV has them), and
the autotune pair itself, committed under `autotune/` as a Helion run leaves it. What the CSV lacks
(the eager reference, the later hand-tuned steps, the big shape of the gen-1 config) is ours.

What it exercises: dsl `helion` from the kernel's own imports (its autotune rows say `helion` too);
`V<N>: <GB/s> | <change> (bottleneck: ...)` subjects with a field to parse; a unit slip (v4: its
latencies written in ns, x1000, kernel changed, no harness change, subject and speedup say faster);
a floor-only step (v6) between claims; a revert pair with a stated reason (V9 undoes V8) and one
without (V11 undoes V10); curated pitfalls with and without a cause; a Latin-1 commit body (v5); the
harness named by the trace's README.
"""

from __future__ import annotations

import csv
import json

from optrace.example.repo_builder import CommitSpec
from tests.support.realistic_traces import SAMPLES, memory

HELION = SAMPLES / "helion"
AUTOTUNE_CSV = HELION / "autotune-add.csv"
AUTOTUNE_META = HELION / "autotune-add.meta.jsonl"
LABEL = "kernel_opt_051_broadcast_add_h100"

# workload uuids of the two benchmarked shapes (the autotune runs' input_shapes)
SMALL = "3f9c2d41-7a8e-4b1f-9c55-0d6e2a71b804"  # x, y: (8, 512, 512) fp32
BIG = "b82e6f10-45c3-4d9a-8e27-91fa0c3d5e66"  # x, y: (8, 1024, 1024) fp32
BIG_BYTES = 3 * 8 * 1024 * 1024 * 4  # two reads and one write of the big shape
HARNESS = "triton.testing.do_bench (median of 100 ms of repetitions, L2 flushed before each)"

# config ids of the autotune CSV each pinned version uses
DEFAULT, AUTOTUNED, INTERLEAVED, GEN1_BEST = (
    "b0a6698744a80cc8",
    "4479f49621cb446a",
    "2e0bd274443a2a81",
    "bca6aa8fa7d753b3",
)


def available() -> bool:
    return AUTOTUNE_CSV.is_file() and AUTOTUNE_META.is_file()


def meta_records() -> list[dict]:
    return [json.loads(line) for line in AUTOTUNE_META.read_text().splitlines() if line.strip()]


def perf_us() -> dict[tuple[str, str], float]:
    """(config_id, shape uuid) -> the CSV's measured perf in µs (ok rows only)."""
    shape_of = {r["run_id"]: SMALL if "512, 512" in r["input_shapes"] else BIG for r in meta_records()}
    out = {}
    with open(AUTOTUNE_CSV, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["status"] == "ok":
                out[(row["config_id"], shape_of[row["run_id"]])] = round(float(row["perf_ms"]) * 1000.0, 3)
    return out


def config_of(config_id: str) -> dict:
    for rec in meta_records():
        configs = rec["configs"]
        if config_id in configs:
            return configs[config_id]
    raise KeyError(config_id)


def config_call(config: dict) -> str:
    args = ",\n".join(f"        {k}={v!r}" for k, v in sorted(config.items()))
    return f"helion.Config(\n{args},\n    )"


HEAD = '''"""Broadcast add of two fp32 tensors as a Helion kernel ({note})."""
import torch

import helion
import helion.language as hl

'''

TAIL = """

def run(x, y):
    return add(x, y)
"""


def helion_kernel(decorator: str, note: str) -> str:
    source = meta_records()[0]["kernel_source"]  # `@helion.kernel\ndef add(x, y): ...` as the autotuner saw it
    body = source.split("\n", 1)[1]
    return HEAD.format(note=note) + decorator + "\n" + body + TAIL


def pinned(config: dict, note: str, comment: str = "") -> str:
    decorator = f"{comment}@helion.kernel(\n    static_shapes=True,\n    config={config_call(config)},\n)"
    return helion_kernel(decorator, note)


REFERENCE = '''"""Broadcast add of two fp32 tensors, the PyTorch reference (eager)."""
import torch


def run(x, y):
    return torch.add(x, y)
'''


def step(n: int, small: float, big: float, *, ns: bool = False, **kw) -> str:
    """A memory record over both shapes; the speedup is the harness's own (eager reference re-measured
    in the same run, from the true µs timings even when the latencies are written in the wrong unit)."""
    speedup = round(((11.30 / small) * (36.10 / big)) ** 0.5, 4)
    scale = 1000.0 if ns else 1.0
    by_shape = {SMALL: round(small * scale, 3), BIG: round(big * scale, 3)}
    geo = round((by_shape[SMALL] * by_shape[BIG]) ** 0.5, 3)
    return memory(n, geo, by_shape=by_shape, speedup=speedup, **kw)


def gbps(big_us: float) -> str:
    return f"{BIG_BYTES / big_us / 1e3:.1f} GB/s"


def helion_commits() -> tuple[list[CommitSpec], dict]:
    perf = perf_us()
    definition = json.dumps(
        {
            "name": "broadcast_add_fp32",
            "op_type": "elementwise",
            "description": "out = x + y for two fp32 tensors of one shape (broadcast when they differ).",
            "axes": {"B": {"type": "var"}, "M": {"type": "var"}, "N": {"type": "var"}},
        },
        indent=1,
    )
    workloads = "".join(
        json.dumps(
            {
                "definition": "broadcast_add_fp32",
                "solution": None,
                "evaluation": None,
                "workload": {"uuid": u, "axes": {"B": 8, "M": m, "N": m}, "inputs": {}},
            }
        )
        + "\n"
        for u, m in ((SMALL, 512), (BIG, 1024))
    )
    solution = json.dumps(
        {
            "name": "broadcast_add_helion",
            "definition": "broadcast_add_fp32",
            "spec": {"language": "python", "target_hardware": ["NVIDIA_H100"]},
            "sources": [{"path": "kernel.py"}],
        },
        indent=1,
    )
    readme = (
        "# broadcast add on H100\n\n## Task Context\n\n- platform: H100\n- dsl: helion (triton backend)\n"
        f"- harness: {HARNESS}\n"
    )
    autotuned, interleaved, gen1 = (config_of(c) for c in (AUTOTUNED, INTERLEAVED, GEN1_BEST))
    unrolled = {**gen1, "range_unroll_factors": [4], "range_num_stages": [2]}
    eight_warps = {**unrolled, "num_warps": 8}
    evict_first = {**eight_warps, "load_eviction_policies": ["first", "first"]}
    blocked = {**evict_first, "pid_type": "persistent_blocked", "num_sm_multiplier": 8}
    grouped = {**evict_first, "l2_groupings": [4]}
    k1 = helion_kernel("@helion.kernel(static_shapes=True)", "default config")
    k2 = pinned(autotuned, "autotuned config")
    k3 = pinned(interleaved, "persistent_interleaved config")
    k4 = pinned(gen1, "64-wide tiles")
    k5 = pinned(unrolled, "two tiles in flight")
    k6 = pinned(eight_warps, "8 warps")
    comment = "# v7: evict-first on both loads keeps L2 for the output lines the write-back needs\n"
    k7 = pinned(evict_first, "evict-first loads", comment)
    k8 = pinned(blocked, "persistent_blocked")
    k10 = pinned(grouped, "l2 groupings")
    s = step
    commits = [
        CommitSpec(
            "V0: baseline kernel",
            {
                "kernel.py": REFERENCE,
                "definition.json": definition,
                "workload.jsonl": workloads,
                "solution.json": solution,
                "README.md": readme,
                "memory/v0.json": s(0, 11.30, 36.10, category="baseline", description="torch.add, eager"),
            },
        ),
        CommitSpec(
            f"V1: {gbps(perf[(DEFAULT, BIG)])} | Helion add kernel, default config "
            "(bottleneck: 37% of DRAM peak with 512-element tiles, one row slice per program)",
            {
                "kernel.py": k1,
                "memory/v1.json": s(
                    1,
                    perf[(DEFAULT, SMALL)],
                    perf[(DEFAULT, BIG)],
                    category="port",
                    description="Helion add kernel with the default config (block_sizes [1, 1, 512], flat pids)",
                    bottleneck="memory_bound",
                ),
            },
        ),
        CommitSpec(
            f"V2: {gbps(perf[(AUTOTUNED, BIG)])} | autotuned config: 4x256x128 tiles, persistent_blocked, "
            "tensor-descriptor loads (bottleneck: 512-element tiles issue one narrow request per row slice)",
            {
                "kernel.py": k2,
                "autotune/autotune-add.csv": AUTOTUNE_CSV.read_bytes(),
                "autotune/autotune-add.meta.jsonl": AUTOTUNE_META.read_bytes(),
                "memory/v2.json": s(
                    2,
                    perf[(AUTOTUNED, SMALL)],
                    perf[(AUTOTUNED, BIG)],
                    category="autotune",
                    description="pin the autotuner's best generation-0 config: 4x256x128 tiles, persistent_blocked pids, "
                    "tensor-descriptor loads of x and the output",
                    bottleneck="memory_bound",
                    pitfalls=[
                        {
                            "pitfall": "the first timed call measured the autotuner",
                            "explanation": "an unpinned @helion.kernel autotunes on its first call for about a minute, "
                            "so a benchmark that times the first call measures the search, not the kernel",
                            "fix": "pin the config with @helion.kernel(config=...) or call the kernel once before timing",
                        }
                    ],
                ),
            },
            body="With 512-element tiles every program moves one row slice, 2 KB per input, so the memory system "
            "sees many small requests and never reaches its streaming rate. 4x256x128 tiles move 512 KB per "
            "program and the tensor descriptors let the TMA engine issue the loads, which frees the warps "
            "from address arithmetic.",
        ),
        CommitSpec(
            f"V3: {gbps(perf[(INTERLEAVED, BIG)])} | persistent_interleaved, 1x32x256 tiles, 16 warps "
            "(bottleneck: tail of the blocked persistent grid)",
            {
                "kernel.py": k3,
                "memory/v3.json": s(
                    3,
                    perf[(INTERLEAVED, SMALL)],
                    perf[(INTERLEAVED, BIG)],
                    category="autotune",
                    description="persistent_interleaved pids with 1x32x256 tiles and 16 warps",
                    bottleneck="memory_bound",
                    pitfalls=["re-check the pinned config after every Helion upgrade"],
                ),
            },
            body="persistent_blocked gives each program one contiguous run of tiles, so the programs that start "
            "on the last SMs finish late; interleaving the tiles across programs makes every program end within "
            "one tile of the others.",
        ),
        CommitSpec(
            f"V4: {gbps(28.160)} | 1x64x256 tiles from the generation-1 search",
            {
                "kernel.py": k4,
                "memory/v4.json": s(
                    4,
                    perf[(GEN1_BEST, SMALL)],
                    28.160,
                    ns=True,
                    category="autotune",
                    description="the generation-1 best config: 1x64x256 tiles, 16 warps",
                ),
            },
        ),
        CommitSpec(
            f"V5: {gbps(27.02)} | range_unroll_factors=[4], range_num_stages=[2]: two tiles in flight per program",
            {
                "kernel.py": k5,
                "memory/v5.json": s(
                    5,
                    8.02,
                    27.02,
                    category="pipelining",
                    description="unroll the persistent tile loop by 4 with two stages, so each program keeps two "
                    "tiles' loads in flight",
                    impact="the next tile's loads are issued before the current tile's store, so DRAM never idles "
                    "between tiles",
                    bottleneck="memory_bound",
                ),
            },
            # ISO-8859-1 bytes, undeclared, as a French locale's editor leaves them
            body=(
                "Deux tuiles en vol par programme: la latence DRAM est masquée. 27.02 µs au lieu de 28.67 µs sur "
                "8×1024×1024 (naïve: une tuile à la fois)."
            ).encode("latin-1"),
        ),
        CommitSpec(
            f"V6: {gbps(26.98)} | num_warps=8 (within noise)",
            {
                "kernel.py": k6,
                "memory/v6.json": s(
                    6, 8.00, 26.98, category="tuning", description="num_warps 8 instead of 16 for the unrolled loop"
                ),
            },
        ),
        CommitSpec(
            f"V7: {gbps(26.40)} | load_eviction_policies=['first', 'first'] (bottleneck: L2 evictions of the "
            "output lines)",
            {
                "kernel.py": k7,
                "memory/v7.json": s(
                    7,
                    7.86,
                    26.40,
                    category="cache_policy",
                    description="evict-first policy on both input loads",
                    impact="inputs are read exactly once, so keeping them in L2 only evicts the output lines that the "
                    "write-back still needs",
                    bottleneck="memory_bound",
                ),
            },
        ),
        CommitSpec(
            f"V8: {gbps(28.90)} | persistent_blocked with 8 programs per SM",
            {
                "kernel.py": k8,
                "memory/v8.json": s(
                    8,
                    8.61,
                    28.90,
                    category="scheduling",
                    description="persistent_blocked pids with num_sm_multiplier=8",
                ),
            },
        ),
        CommitSpec(
            "V9: revert V8 (each blocked program walks one contiguous run of tiles, so the programs that start "
            "last hold the tail; interleaved tiles finish together)",
            {
                "kernel.py": k7,
                "memory/v9.json": s(9, 7.87, 26.41, category="revert", description="back to interleaved pids"),
            },
        ),
        CommitSpec(
            f"V10: {gbps(26.71)} | l2_groupings=[4] on the output tiles",
            {
                "kernel.py": k10,
                "memory/v10.json": s(
                    10, 7.95, 26.71, category="tuning", description="l2_groupings=[4] on the output tiles"
                ),
            },
        ),
        CommitSpec(
            "V11: revert V10",
            {
                "kernel.py": k7,
                "memory/v11.json": s(11, 7.86, 26.42, category="revert", description="back to l2_groupings=[1]"),
            },
        ),
    ]
    return commits, {}


# What a kernel engineer reading this trace files, version by version (worked out from the numbers and
# the prose above, not from the pipeline). Gains are vs the floor each claim beat, 2 decimals.
EXPECTED = {
    "product": "h100",
    "dsl": "helion",
    "harness": HARNESS,
    "claims": {
        "v2": ("milestone", 18.09),
        "v3": ("milestone", 4.5),
        "v5": ("milestone", 6.82),
        "v7": ("milestone", 1.95),
    },
    "floor_before": {"v2": "v0", "v3": "v2", "v5": "v3", "v7": "v6"},
    "floor_only": {"v6"},
    "unit_slip": "v4",
    "flat": {"v1"},
    "rejected": {"v4", "v8", "v9", "v10", "v11"},
    "final": ("v7", "add"),
    # the reason each claim's trace states, in its own words (subject field, body or memory field)
    "strategy_causes": {
        "v2": "every program moves one row slice",
        "v3": "interleaving the tiles across programs makes every program end within one tile of the others",
        "v5": "the next tile's loads are issued before the current tile's store",
        "v7": "keeping them in L2 only evicts the output lines",
    },
    # failed lever -> its stated cause (None: the trace states none)
    "failed_levers": {
        "persistent_blocked pids with num_sm_multiplier=8": "the programs that start last hold the tail",
        "l2_groupings=[4] on the output tiles": None,
    },
    # curated pitfall (its start) -> its stated cause (None: none stated)
    "pitfalls": {
        "the first timed call measured the autotuner": "autotunes on its first call for about a minute",
        "re-check the pinned config after every Helion upgrade": None,
    },
    # a curated pitfall's record (its start) -> the failures its own statements name: a timing pitfall, none
    "pitfall_symptoms": {"the first timed call measured the autotuner": []},
    "subject_fields": {
        "v2": {
            "perf": [(3389.8, "GB/s")],
            "change": "autotuned config: 4x256x128 tiles, persistent_blocked, tensor-descriptor loads",
            "bottleneck": "512-element tiles issue one narrow request per row slice",
        },
        "v6": {"perf": [(3731.0, "GB/s")], "change": "num_warps=8", "bottleneck": None, "note": "within noise"},
    },
    "latin1": ("v5", "Deux tuiles en vol par programme: la latence DRAM est masquée. 27.02 µs"),
    # version references in the code/prose and what is true of them relative to the step that wrote them
    "version_refs": {"v7": {"v7": "this step"}},
}
