"""The realistic traces built from ../shared/data, mined into packets and drafted into records once per
session: the three of tests/support/realistic_traces.py (fib_rmsnorm, aka_attention, sgemm_ladder),
the three of tests/support/more_traces.py (helion_add, fp8_gemm_b200, swiglu_h20) and the adversarial
suite's FlashInfer-Bench A800 run (fib). Each is skipped where its data is absent.
"""

from __future__ import annotations

from pathlib import Path

from optrace.gates.trace.injection import Workbench, workbench
from tests.adversarial.conftest import mine
from tests.adversarial.fib_trace import NAME as FIB_NAME
from tests.adversarial.fib_trace import build_fib_trace
from tests.support import more_traces as mt
from tests.support import realistic_traces as rt
from tests.support.paths import SHARED_DATA

NAMES = ("fib", *rt.BUILDERS, *mt.BUILDERS)


def build(name: str, root: Path) -> Path | None:
    """The built trace, or None when its data is absent."""
    if name == "fib":
        return build_fib_trace(root / FIB_NAME, SHARED_DATA) if SHARED_DATA.is_dir() else None
    if name in rt.BUILDERS:
        return rt.build(name, root) if rt.available() else None
    return mt.build(name, root) if mt.available(name) else None


def realistic_benches(make_root) -> dict[str, Workbench]:
    """name -> workbench of every realistic trace whose data is here (make_root(name) gives a scratch dir)."""
    out = {}
    for name in NAMES:
        root = make_root(name)
        trace = build(name, root)
        if trace is not None:
            slug = name.replace("_", "-")
            out[name] = workbench(mine(trace, root, slug), slug)
    return out
