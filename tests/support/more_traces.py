"""Three more realistic traces (round two), each with what mining it must find, written by reading it.

- `helion_add`: Helion on an H100, skill-era grammar, the autotune pair of samples/helion/ (trace_helion_add).
- `fp8_gemm_b200`: CuTe DSL on a B200, long-horizon grammar, the real sm_100 ncu log as a capture
  (trace_fp8_gemm_b200).
- `swiglu_h20`: Triton on an H20, iteration grammar (trace_swiglu_h20).

`build(name, parent)` builds one as a git work tree named like a real trace; `EXPECTED[name]` is its
expected structure. Traces that read ../shared/data are skipped where it is absent (`available`).
"""

from __future__ import annotations

from pathlib import Path

from optrace.example.repo_builder import build_trace
from tests.support import trace_fp8_gemm_b200, trace_helion_add, trace_swiglu_h20

MODULES = {"helion_add": trace_helion_add, "fp8_gemm_b200": trace_fp8_gemm_b200, "swiglu_h20": trace_swiglu_h20}
BUILDERS = {
    "helion_add": trace_helion_add.helion_commits,
    "fp8_gemm_b200": trace_fp8_gemm_b200.fp8_commits,
    "swiglu_h20": trace_swiglu_h20.swiglu_commits,
}
LABELS = {name: module.LABEL for name, module in MODULES.items()}
EXPECTED = {name: module.EXPECTED for name, module in MODULES.items()}


def available(name: str) -> bool:
    return MODULES[name].available()


def build(name: str, parent: Path) -> Path:
    """Build trace `name` under `parent`; returns its path."""
    commits, untracked = BUILDERS[name]()
    dest = parent / LABELS[name]
    build_trace(dest, commits, untracked)
    return dest
