"""Small builders for real test traces (git repositories in tmp_path) in each commit grammar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from optrace.example.repo_builder import CommitSpec, build_trace

SHAPES = ["0b6f2c1e-4a7d-4e2b-9c11-5d3e2f1a0b9c", "7c1d9e2f-3b4a-4c5d-8e6f-1a2b3c4d5e6f"]


def kernel(step: int, dsl: str = "triton") -> str:
    head = {
        "triton": "import triton\nimport triton.language as tl\n",
        "cuda": "from torch.utils.cpp_extension import load_inline\n",
        "gluon": "from triton.experimental import gluon\n",
    }[dsl]
    return f"{head}\n# step {step}\nBLOCK = {128 * (step + 1)}\n\ndef run(x):\n    return x  # variant {step}\n"


def memory(n: int, geomean: float | None, **extra) -> str:
    perf = {"latency_us_geomean": geomean, "latency_us": geomean}
    if geomean:
        perf["latency_us_by_shape"] = {SHAPES[0]: round(geomean * 0.5, 4), SHAPES[1]: round(geomean * 2.0, 4)}
        perf["latency_us_arith_mean"] = round(geomean * 1.25, 4)
    perf.update(extra.pop("performance", {}))
    rec = {
        "version": f"v{n}",
        "masked": False,
        "performance": perf,
        "correctness": {"status": "PASS", "max_abs_err": 0.001, "max_rel_err": 0.002},
        "quality_gate": {"result": "PASS", "failure_reason": None},
        "optimization": {"action_category": "tiling", "action_description": f"step {n} change"},
        "git_commit_hash": None,
    }
    rec.update(extra)
    return json.dumps(rec)


SOLUTION_FIB = json.dumps(
    {
        "name": "s",
        "definition": "softmax_h4096",
        "spec": {"language": "triton", "target_hardware": ["NVIDIA_H100"]},
        "sources": [],
    }
)
SOLUTION_SOL = json.dumps(
    {
        "name": "s",
        "definition": "softmax_h4096",
        "spec": {"languages": ["pytorch"], "target_hardware": ["LOCAL"]},
        "sources": [{"path": "kernel.py"}],
    }
)
DEFINITION = json.dumps(
    {
        "name": "softmax_h4096",
        "description": "Row softmax, hidden 4096.",
        "axes": {"batch_size": {"type": "var"}, "hidden": {"type": "const", "value": 4096}},
    }
)
WORKLOAD_FIB = "\n".join(
    json.dumps(
        {
            "definition": "softmax_h4096",
            "solution": None,
            "evaluation": None,
            "workload": {"uuid": u, "axes": {"batch_size": 8}, "inputs": {}},
        }
    )
    for u in SHAPES
)
WORKLOAD_SOL = "\n".join(json.dumps({"uuid": u, "axes": {"batch_size": 8}, "inputs": {}}) for u in SHAPES)


def meta_files(dialect: str = "fib") -> dict:
    if dialect == "fib":
        return {"definition.json": DEFINITION, "solution.json": SOLUTION_FIB, "workload.jsonl": WORKLOAD_FIB}
    return {
        "definition.json": DEFINITION,
        "solution.json": SOLUTION_SOL,
        "workload.jsonl": WORKLOAD_SOL,
        "framework_baseline.json": json.dumps({"framework": "triton", "platform": "B200", "arch": "sm_100"}),
    }


def skill_era(dest) -> str:
    """Era A: `V<N>: <perf> | <change> (bottleneck: ...)` and `V<N>: revert V<M>`."""
    commits = [
        CommitSpec("V0: baseline kernel", {"kernel.py": kernel(0), "memory/v0.json": memory(0, 40.0), **meta_files()}),
        CommitSpec(
            "V1: 120 TFLOPS / 1.2 GB/s | XOR16 swizzle layout (bottleneck: ds_read bank conflict stall 12 cycles)",
            {"kernel.py": kernel(1), "memory/v1.json": memory(1, 30.0)},
        ),
        CommitSpec(
            "V2: 125 TFLOPS | num_warps=8 (bottleneck: occupancy)",
            {"kernel.py": kernel(2), "memory/v2.json": memory(2, 33.0)},
        ),
        CommitSpec("V3: revert V2 (occupancy 25% -> 12%)", {"kernel.py": kernel(1), "memory/v3.json": memory(3, 30.1)}),
    ]
    return build_trace(dest, commits)


def iteration_era(dest, untracked=None) -> str:
    """Era B: `committed (+x%)`, `reverted (...) — dead-end recorded`, list-form dead ends, arrows."""
    commits = [
        CommitSpec(
            "V0: baseline (SOL reference wrapper)",
            {"kernel.py": kernel(0), "memory/v0.json": memory(0, 50.0), **meta_files()},
        ),
        CommitSpec("v1: committed (+20.0%)", {"kernel.py": kernel(1), "memory/v1.json": memory(1, 40.0)}),
        CommitSpec(
            "v2: reverted (register spills at BLOCK=8192) — dead-end recorded",
            {"memory/v2.json": memory(2, 44.0)},
            body="not reverted in spirit: the body must not decide anything",
        ),
        CommitSpec(
            "dead-end recorded: split-K reduction (atomics, contention), fp32 smem accumulate, cp.async prefetch. Next: warp specialisation",
            {"memory/v3.json": memory(3, 41.0)},
            body="v3 body text that must not be glued onto the last lever",
        ),
        CommitSpec(
            "v4: reorder loads -> 40.0->39.8us (-0.5%), NO_CHANGE",
            {"kernel.py": kernel(4), "memory/v4.json": memory(4, 39.8)},
        ),
        CommitSpec("chore(007): tidy README", {"README.md": "notes\n"}),
        CommitSpec(
            "v5: committed (+5.0%) explicit BlockedLayout tiling",
            {"kernel.py": kernel(5, "gluon"), "memory/v5.json": memory(5, 37.8)},
        ),
        CommitSpec("v6: reverted (flat-within-noise, +1.4%) - dead-end recorded", {"memory/v6.json": memory(6, 37.3)}),
    ]
    return build_trace(dest, commits, untracked)


def long_horizon_era(dest) -> str:
    """Era C: framework baseline + pin, `episode E: promote ...`, `vN: long-horizon episode E <status>`,
    an episode branch merged into main (its commits are not the trace)."""
    commits = [
        CommitSpec(
            "V0: baseline (SOL reference wrapper)",
            {"kernel.py": kernel(0), "memory/v0.json": memory(0, 900.0), **meta_files("sol")},
        ),
        CommitSpec(
            "v1: framework baseline (triton) replacing the V0 PyTorch wrapper",
            {"kernel.py": kernel(1), "memory/v1.json": memory(1, 400.0)},
        ),
        CommitSpec(
            "v1: pin framework baseline 1a2b3c4d",
            {
                "framework_baseline.json": json.dumps(
                    {"framework": "triton", "platform": "B200", "arch": "sm_100", "version": "v1"}
                )
            },
        ),
        CommitSpec(
            "episode 1: promote verified long-horizon candidate",
            {"kernel.py": kernel(2), "memory/v2.json": memory(2, 300.0), "memory/long_horizon_e0001.json": "{}"},
        ),
        CommitSpec(
            "v3: long-horizon episode 2 candidate_ready",
            {"memory/v3.json": memory(3, 300.0, performance={"carried_from_version": "v2"})},
        ),
        CommitSpec("v4: kernel candidate", {"kernel.py": kernel(9)}, branch="atrex/long-e0003-deadbeef"),
        CommitSpec("v4 trial 1: fast kernel candidate", {"kernel.py": kernel(8)}, branch="atrex/long-e0003-deadbeef"),
        CommitSpec(
            "episode 3: promote verified long-horizon candidate",
            {"kernel.py": kernel(3), "memory/v4.json": memory(4, 250.0)},
            merge="atrex/long-e0003-deadbeef",
        ),
        CommitSpec(
            "v5: long-horizon episode 4 blocked",
            {"memory/v5.json": memory(5, None, performance={"measurement_status": "not_evaluated_or_incomplete"})},
        ),
    ]
    return build_trace(dest, commits)


def ingested(tmp_path: Path) -> Path:
    """A skill-era trace at tmp_path/t, ingested by the real command into tmp_path/work."""
    skill_era(tmp_path / "t")
    work = tmp_path / "work"
    subprocess.run(
        [sys.executable, "-m", "optrace", "ingest", str(tmp_path / "t"), "--out-dir", str(work)],
        check=True,
        capture_output=True,
    )
    return work
