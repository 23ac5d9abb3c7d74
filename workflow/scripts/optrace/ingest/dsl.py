"""Which DSL a kernel source is written in, from its code (comments are not code), and the store's name for it.

Ingest labels a kernel by what it is written in (a Helion kernel is `helion`, as its autotune rows are);
a record's scope uses the store's DSL vocabulary, which has no Helion: `store_dsl` maps it.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Bounded scan: a DSL reveals itself in its imports and decorators, near the top.
SCAN_BYTES = 64 * 1024

# Ordered: a Gluon kernel also imports triton; a CuTe DSL kernel may mention CUDA.
_PATTERNS = [
    (
        "gluon",
        re.compile(r"\btriton\.experimental\.gluon\b|\bfrom\s+triton\.experimental\s+import\s+gluon\b|@gluon\.jit\b"),
    ),
    (
        "cutedsl",
        re.compile(
            r"\bimport\s+cutlass\b|\bfrom\s+cutlass\b[\w.]*\s+import\b|\bcutlass\.cute\b|@cute\.(?:jit|kernel)\b", re.I
        ),
    ),
    ("helion", re.compile(r"\bimport\s+helion\b|\bfrom\s+helion\b|@helion\.kernel\b")),
    ("flydsl", re.compile(r"\bimport\s+flydsl\b|\bfrom\s+flydsl\b")),
    ("aiter", re.compile(r"\bimport\s+aiter\b|\bfrom\s+aiter\b")),
    ("cuda", re.compile(r"\bload_inline\b|__global__|\bcpp_extension\b|\bhipcc\b")),
    ("triton", re.compile(r"\bimport\s+triton\b|\bfrom\s+triton\b|@triton\.jit\b")),
]
# Lines that can reveal a DSL; the kernel body is never scanned line by line. Both scans look for a
# literal first (a regex that starts with ^ under re.M is tried at every character of a 64 KB blob) and
# only then look back to the start of the line.
_IMPORT_START = re.compile(r"(?:import |from |@)[^\n]*")
# CUDA sources live in strings passed to load_inline: marker lines count unless they start with `#`
_MARKERS = ("__global__", "load_inline", "cpp_extension", "hipcc")
_MARKER = re.compile("|".join(_MARKERS))


def _line_start(source: str, pos: int) -> int:
    return source.rfind("\n", 0, pos) + 1


def import_lines(source: str) -> list[str]:
    r"""Lines whose first non-blank text is `import `, `from ` or `@` (as `^[ \t]*(?:import |from |@).*`
    under re.M finds them). A line's first keyword hit is at its indentation exactly when it qualifies."""
    out = []
    for m in _IMPORT_START.finditer(source):
        start = _line_start(source, m.start())
        if not source[start : m.start()].strip(" \t"):
            out.append(source[start : m.end()])
    return out


def marker_lines(source: str) -> list[str]:
    r"""Every line holding a marker that does not start with `#` in column 0 (as the earlier
    `^[ \t]*(?!#).*?(?:markers).*` under re.M found them: its [ \t]* backtracks past leading blanks)."""
    out, seen = [], -1
    for m in _MARKER.finditer(source):
        start = _line_start(source, m.start())
        if start == seen:  # one line, several markers
            continue
        seen = start
        end = source.find("\n", m.end())
        line = source[start : end if end >= 0 else len(source)]
        if not line.startswith("#"):
            out.append(line)
    return out


def revealing_lines(source: str) -> str:
    """Import and decorator lines (comments cut) and CUDA-marker lines; comment lines never count."""
    lines = [line.split("#", 1)[0].strip() for line in import_lines(source)]
    if any(marker in source for marker in _MARKERS):  # a substring test is far cheaper than any scan
        lines += [line.strip() for line in marker_lines(source)]
    return "\n".join(lines)


@lru_cache(maxsize=4096)
def _dsl_of(lines: str) -> str:
    for dsl, pattern in _PATTERNS:
        if pattern.search(lines):
            return dsl
    return "any"


def detect_dsl(source: str | bytes | None) -> str:
    if not source:
        return "any"
    if isinstance(source, bytes):
        source = source[:SCAN_BYTES].decode("utf-8", errors="replace")
    # successive kernels share their imports: the cache makes a long trace cost one regex pass per header
    return _dsl_of(revealing_lines(source[:SCAN_BYTES]))


# DSLs the store's scope vocabulary lacks -> the store DSL that holds their records. Helion lowers to
# Triton (the `backend` of its autotune settings), and its kernels are Python that a Triton reader reads.
STORE_DSL = {"helion": "triton"}


def store_dsl(dsl: str) -> str:
    """The store's DSL for a kernel labelled `dsl` by `detect_dsl` (itself when the store has it)."""
    return STORE_DSL.get(dsl, dsl)
