"""The phrases that say whether a text states a fact: a checkable condition, a cause, an outcome that is
no cause, an absolute latency. One list for every user: the store gates (established-fact,
self-contained), the drafter that must satisfy them, and partition's triage, which flags (never drops)
anti-strategy segments too thin to become an established fact. It imports no gate, so a stage that
only triages or drafts does not load the gates.
"""

from __future__ import annotations

import re

from optrace.rows import Precheck

MIN_CLAIM_CHARS = 12
MIN_MECHANISM_CHARS = 40
# an outcome, not a cause: the union of the store's and the admission gate's lists
NON_MECHANISM = re.compile(
    r"no improvement (?:found|over)|flat[- ]within[- ]noise|within noise"
    r"|all (?:\w+\s+){0,3}(?:approaches|trials|variants|attempts) (?:tested|were|failed|flat)"
    r"|tested \d+ approaches|reverted to an earlier|hw floor (?:confirmed|reconfirmed)|no kernel change"
    r"|sanity[_ ]bench|stall[_ ]count|consecutive (?:dead-end|stall|revert)",
    re.I,
)
# a latency in absolute units, which means nothing without its hardware and shape (self-contained)
ABSOLUTE_LATENCY = re.compile(r"[\d.]+\s*(?:us|µs|μs|ms)\b", re.I)
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
