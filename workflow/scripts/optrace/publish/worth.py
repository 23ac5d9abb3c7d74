"""The store's worth formula: a record's rank from its prior and its feedback counters.

score = round(clamp01((prior + 0.35*signed*confidence + usage) * recency), 4). The distiller never
scores its own records: the stage computes this from the track block, which holds what the trace
measured (step gain, kept ratio, rediscoveries, best speedup) and zeroed feedback counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

FORMULA = "clamp(prior + 0.35*signed_feedback*confidence + usage_bonus) * recency_decay(half_life=90d)"
BUILDER_VERSION = "opt-trace-1.0"
COUNTERS = (
    "query_count",
    "served_count",
    "applied_count",
    "verified_effective",
    "verified_ineffective",
    "fallback_served",
)
HALF_LIFE_DAYS = 90.0


def clamp(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return max(lo, min(hi, x))


def stretch(kept: float) -> float:
    return clamp((kept - 0.10) / 0.70)


def _known(prior: dict, key: str) -> Any:
    value = prior.get(key)
    return None if value is None or isinstance(value, bool) else value


def prior_score(record_type: str, prior: dict) -> float:
    kept = _known(prior, "corpus_kept_ratio")
    if record_type == "anti-strategy":
        score = 0.45
        rediscovered, n_ops = _known(prior, "rediscovered"), _known(prior, "n_operators")
        if rediscovered is not None and rediscovered > 1:
            score += 0.30 * clamp(math.log10(rediscovered))
        if n_ops is not None and n_ops > 1:
            score += 0.20 * clamp(math.log(n_ops) / math.log(5))
        if kept is not None:
            score += 0.25 * (1 - stretch(kept))
        return score
    if record_type == "technique-card":
        return 0.55 if kept is None else 0.55 + 0.30 * clamp(abs(kept - 0.5) / 0.35)
    if record_type == "symptom-card":
        return 0.55 + 0.25 * clamp(math.log(1 + (_known(prior, "n_operators") or 0)) / math.log(11))
    if record_type == "reference-kernel":
        speedup = _known(prior, "best_speedup_x")
        return 0.45 + (0.15 * clamp(math.log(speedup) / math.log(300)) if speedup and speedup > 1 else 0.0)
    if record_type == "doc":
        return 0.40
    # strategy, numerics-rule, dispatch-rule: weighted mean of what is known
    parts = []
    gain = _known(prior, "step_gain_pct")
    if gain is not None:
        parts.append((clamp(math.log(1 + max(0.0, gain)) / math.log(101)), 1.5))
    if kept is not None:
        parts.append((stretch(kept), 1.0))
    runs = _known(prior, "n_independent_runs")
    if runs is not None and runs > 1:  # a single run says nothing about reproducibility
        parts.append((clamp(math.log(max(1, runs)) / math.log(4)), 0.5))
    return sum(v * w for v, w in parts) / sum(w for _, w in parts) if parts else 0.30


@dataclass(frozen=True)
class Rank:
    score: float
    tier: str
    components: dict


def feedback(record_type: str, prior: dict, counters: dict) -> tuple[float, float, float]:
    """(signed, confidence, base_rate or -1.0)"""
    base = _known(prior, "corpus_ladder_ratio")
    base = _known(prior, "corpus_kept_ratio") if base is None else base
    if base is not None and record_type == "anti-strategy":
        base = 1 - base
    good, bad = counters.get("verified_effective", 0), counters.get("verified_ineffective", 0)
    n = good + bad
    if n == 0:
        return 0.0, 0.0, -1.0 if base is None else base
    posterior = (good + 1) / (n + 2)
    ref = 0.5 if base is None else clamp(base, 0.05, 0.95)
    room = 1 - ref if posterior >= ref else ref
    return clamp((posterior - ref) / room, -1.0, 1.0), clamp(n / 8), -1.0 if base is None else base


def recency(last_used_ts: str | None, now: datetime | None) -> float:
    if not last_used_ts or now is None:
        return 1.0
    age = (now - datetime.fromisoformat(last_used_ts.replace("Z", ""))).total_seconds() / 86400
    return 0.5 + 0.5 * 0.5 ** (max(0.0, age) / HALF_LIFE_DAYS)


def rank(record_type: str, gain_basis: str, track: dict, now: datetime | None = None) -> Rank:
    prior = track.get("prior") or {}
    counters = track.get("counters") or {}
    p = prior_score(record_type, prior)
    signed, confidence, base = feedback(record_type, prior, counters)
    usage = 0.05 * clamp(
        math.log(1 + max(counters.get("served_count", 0), counters.get("query_count", 0))) / math.log(50)
    )
    rec = recency(counters.get("last_used_ts"), now)
    adjust = 0.35 * signed * confidence
    score = round(clamp((p + adjust + usage) * rec), 4)
    decided = confidence >= 0.5
    if record_type == "anti-strategy" or (decided and signed <= -0.5):
        tier = "cautionary"
    elif gain_basis != "measured":
        tier = "provisional"
    elif decided and signed >= 0.5:
        tier = "proven"
    else:
        tier = "promising"
    components = {
        "prior": round(p, 4),
        "base_rate": round(base, 4),
        "feedback_signed": round(signed, 4),
        "feedback_confidence": round(confidence, 4),
        "feedback_adjust": round(adjust, 4),
        "usage_bonus": round(usage, 4),
        "recency": round(rec, 4),
    }
    return Rank(score, tier, components)
