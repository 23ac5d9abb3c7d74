"""Which DSL a kernel source is written in, from its code (comments are not code)."""

from __future__ import annotations

import re

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
_COMMENT_RE = re.compile(r"(?m)^\s*#.*$|(?<=\s)#(?![^\n]*[\"']).*$")


def strip_comments(source: str) -> str:
    # Python line comments only: strings are kept, since CUDA sources live in strings for load_inline
    return _COMMENT_RE.sub("", source)


def detect_dsl(source: str | bytes | None) -> str:
    if not source:
        return "any"
    if isinstance(source, bytes):
        source = source[:SCAN_BYTES].decode("utf-8", errors="replace")
    code = strip_comments(source[:SCAN_BYTES])
    for dsl, pattern in _PATTERNS:
        if pattern.search(code):
            return dsl
    return "any"
