"""Established-fact triage phrases: does a failed-lever text carry a checkable condition and a cause?

Used by partition to flag (never drop) anti-strategy segments, so the distiller knows which packets
are too thin to become an established fact. The phrases that mark an outcome rather than a cause are
the store gate's own (gates.store.established_fact.NON_MECHANISM): one list, two users.
"""

from __future__ import annotations

import re

from optrace.gates.store.established_fact import NON_MECHANISM
from optrace.rows import Precheck

MIN_CLAIM_CHARS = 12
CONDITION_RE = re.compile(
    r"\bsm_?\d{2,3}\b|\b(?:b200|b300|gb200|h100|h200|h20|a100|mi300x|mi308x|mi355x|l20n?|blackwell|hopper|ampere|cdna[34])\b"
    r"|\b[MNK]\s*[=<>≤≥]\s*\d+|\b(?:small|large|tiny)-[mnk]\b|\b(?:bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int8|e4m3|e5m2)\b"
    r"|\b(?:triton|cutlass|ptx|driver) \d|\bcuda \d{2}|\bwhen [a-z]|\bonly (?:if|when|on)\b"
    r"|\bfor (?:all )?shapes? (?:with|where|below|above)|\b(?:batch_size|hidden|seq_len|head_dim)\s*[=<>≤≥]*\s*\d+",
    re.I,
)
# Causal forms as runs write them, British and American spellings alike ("serialises", "quantisation").
MECHANISM_RE = re.compile(
    r"because|\bsince\b|due to|caused by|the reason|as a result of|bound by|limited by|gated by|seriali[sz]|contention"
    r"|saturat|spill|occupancy|bank conflict|scoreboard|barrier|bandwidth[- ]bound|latency[- ]bound|compute[- ]bound"
    r"|memory[- ]bound|wave quanti[sz]ation|tail effect|partial wave|launch overhead|does not fit|exceeds|cannot"
    r"|unsupported|not supported|requires|\bneeds?\b|costs? more than|more than it saves|register pressure"
    r"|\bforces?\b|\bprevents?\b|\bstalls?\b|\bleaves? [^.]{0,40}\bidle\b|\bdoes not (?:compile|lower|hide)\b"
    r"|\bso (?:nothing|no|the|each|every|half|its|a)\b|\bonly (?:helps|pays off)\b|\bhalves\b",
    re.I,
)


def precheck(text: str) -> tuple[Precheck, str]:
    """("ok" | "flag", reason). A flag says why the lever may not make an established fact."""
    text = (text or "").strip()
    if len(text) < MIN_CLAIM_CHARS:
        return "flag", "too short to carry a claim"
    cause = MECHANISM_RE.search(text)
    if NON_MECHANISM.search(text) and not cause:
        return "flag", "reports a measurement, names no cause"
    if not cause and not CONDITION_RE.search(text):
        return "flag", "no checkable condition and no cause"
    if not cause:
        return "flag", "a condition but no stated cause"
    return "ok", "names a cause" + (" and a condition" if CONDITION_RE.search(text) else "")
