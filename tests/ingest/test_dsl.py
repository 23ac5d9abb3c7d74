"""DSL detection: the literal-led line scans find exactly the lines the line-anchored regexes found."""

import random
import re

import pytest

from optrace.ingest.dsl import detect_dsl, import_lines, marker_lines, store_dsl

# The specification the scans replace (a ^-anchored regex under re.M is tried at every character).
IMPORT_LINES = re.compile(r"^[ \t]*(?:import |from |@)[^\n]*", re.M)
MARKER_LINES = re.compile(r"^[ \t]*(?!#)[^\n]*?(?:__global__|load_inline|cpp_extension|hipcc)[^\n]*", re.M)
PIECES = [
    "import ",
    "from ",
    "@",
    "#",
    " ",
    "\t",
    "\n",
    "\r",
    "x",
    "a#b",
    "__global__",
    "hipcc",
    "load_inline",
    "cpp_extension",
    "triton",
    "imp",
    "fro",
]


def sources(n=4000, seed=7):
    rnd = random.Random(seed)
    return ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 40))) for _ in range(n)]


def test_import_lines_are_the_anchored_regexs_lines():
    for source in sources():
        assert import_lines(source) == IMPORT_LINES.findall(source), repr(source)


def test_marker_lines_are_the_anchored_regexs_lines():
    for source in sources(seed=8):
        assert marker_lines(source) == MARKER_LINES.findall(source), repr(source)


@pytest.mark.parametrize(
    "source, dsl",
    [
        ("import torch\nimport triton\n\n@triton.jit\ndef k(): pass\n", "triton"),
        ("# import triton\nimport torch\n", "any"),
        ("from torch.utils.cpp_extension import load_inline\nsrc = '__global__ void k() {}'\n", "cuda"),
        ("# __global__ in a comment\nimport torch\n", "any"),
        ("import triton\nfrom triton.experimental import gluon\n", "gluon"),
        ("    import cutlass.cute as cute\n", "cutedsl"),
        # Helion: its own name, as its autotune rows have it (a Helion kernel module imports torch, maybe triton)
        ("import torch\nimport helion\nimport helion.language as hl\n\n@helion.kernel\ndef add(x, y): ...\n", "helion"),
        ("import triton\nfrom helion import Config\n", "helion"),
        ("import torch\n# import helion\n", "any"),
    ],
)
def test_detect_dsl(source, dsl):
    assert detect_dsl(source) == dsl
    assert detect_dsl(source.encode()) == dsl


def test_the_store_files_a_helion_kernel_under_triton_and_keeps_every_store_dsl():
    assert store_dsl("helion") == "triton"  # Helion lowers to Triton; the store's vocabulary has no helion
    for dsl in ("cuda", "cutedsl", "flydsl", "gluon", "triton", "aiter", "any"):
        assert store_dsl(dsl) == dsl
