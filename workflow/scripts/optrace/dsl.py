"""Which DSL a kernel source is written in, from its code (comments are not code)."""

from __future__ import annotations

import re
from functools import lru_cache

# Bounded scan: a DSL reveals itself in its imports and decorators, near the top.
SCAN_BYTES = 64 * 1024

# Ordered: a Gluon kernel also imports triton; a CuTe DSL kernel may mention CUDA.
_PATTERNS = [
    ("gluon", re.compile(r"\btriton\.experimental\.gluon\b|\bfrom\s+triton\.experimental\s+import\s+gluon\b|@gluon\.jit\b")),
    ("cutedsl", re.compile(r"\bimport\s+cutlass\b|\bfrom\s+cutlass\b[\w.]*\s+import\b|\bcutlass\.cute\b|@cute\.(?:jit|kernel)\b", re.I)),
    ("flydsl", re.compile(r"\bimport\s+flydsl\b|\bfrom\s+flydsl\b")),
    ("aiter", re.compile(r"\bimport\s+aiter\b|\bfrom\s+aiter\b")),
    ("cuda", re.compile(r"\bload_inline\b|__global__|\bcpp_extension\b|\bhipcc\b")),
    ("triton", re.compile(r"\bimport\s+triton\b|\bfrom\s+triton\b|@triton\.jit\b")),
]
# Lines that can reveal a DSL; the kernel body is never scanned line by line.
_IMPORT_LINES = re.compile(r"^[ \t]*(?:import |from |@)[^\n]*", re.M)
# CUDA sources live in strings passed to load_inline: marker lines count unless they are comments
_MARKERS = ("__global__", "load_inline", "cpp_extension", "hipcc")
_MARKER_LINES = re.compile(r"^[ \t]*(?!#)[^\n]*?(?:__global__|load_inline|cpp_extension|hipcc)[^\n]*", re.M)


def revealing_lines(source: str) -> str:
    """Import and decorator lines (comments cut) and CUDA-marker lines; comment lines never count."""
    lines = [line.split("#", 1)[0].strip() for line in _IMPORT_LINES.findall(source)]
    if any(marker in source for marker in _MARKERS):  # a substring test is far cheaper than the regex
        lines += [line.strip() for line in _MARKER_LINES.findall(source)]
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
