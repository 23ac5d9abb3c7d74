"""Shared, built once per session: the example trace and a realistic FlashInfer-Bench trace (A800, CUDA),
mined into packets and drafted into records that pass all 17 gates."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from optrace.cli import main as optrace
from optrace.gates.trace.injection import mine_example, workbench
from tests.adversarial.fib_trace import NAME, build_fib_trace
from tests.support.paths import SHARED_DATA


def mine(trace: Path, root: Path, slug: str) -> Path:
    work, packets = root / "work" / slug, root / "packets" / f"{slug}.json"
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in (
            ["ingest", str(trace), "--out-dir", str(work)],
            ["partition", "--work-dir", str(work), "--report", str(root / "partition.md")],
            ["packets", str(trace), "--work-dir", str(work), "--out", str(packets), "--slug", slug],
        ):
            assert optrace(argv) == 0, argv
    return root


@pytest.fixture(scope="session")
def mined_roots(tmp_path_factory):
    """slug -> results root holding work/<slug> and packets/<slug>."""
    out = {"example": mine_example(tmp_path_factory.mktemp("adv-example"))}
    if SHARED_DATA.is_dir():
        root = tmp_path_factory.mktemp("adv-fib")
        out["fib"] = mine(build_fib_trace(root / NAME, SHARED_DATA), root, "fib")
    return out


@pytest.fixture(scope="session")
def benches(mined_roots):
    return {slug: workbench(root, slug) for slug, root in mined_roots.items()}


@pytest.fixture(scope="session")
def realistic(tmp_path_factory):
    """name -> workbench of every realistic trace built from ../shared/data (tests/adversarial/realistic_benches)."""
    from tests.adversarial.realistic_benches import realistic_benches

    return realistic_benches(lambda name: tmp_path_factory.mktemp(f"adv-{name}"))
