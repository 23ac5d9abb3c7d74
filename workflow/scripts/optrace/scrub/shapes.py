"""Neutral labels (shape-1, shape-2, ...) for a trace's benchmark shape keys, in tables and in prose."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

_UUID_KEY = re.compile(r"[0-9a-f]{8}(?:-?[0-9a-f]{4}){3}-?[0-9a-f]{12}", re.I)
# A uuid-shaped token in prose: dashed, undashed, or its 8-hex prefix.
_SHAPE_TOKEN = re.compile(r"\b[0-9a-f]{8}(?:(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{24})?\b", re.I)


def _canonical(key: str) -> str:
    """A uuid key in one spelling (lowercase, undashed), so tables and prose agree; others as given."""
    return key.lower().replace("-", "") if _UUID_KEY.fullmatch(key) else key


@dataclass(frozen=True)
class ShapeLabels:
    """Neutral labels (shape-1, shape-2, ...) for a trace's benchmark shape keys, in sorted key order."""

    by_key: Mapping[str, str]
    by_prefix: Mapping[str, str]  # 8-hex prefix of a uuid key -> its label; a shared prefix names neither

    @classmethod
    def from_keys(cls, keys: Iterable[str]) -> ShapeLabels:
        ordered = sorted({_canonical(k) for k in keys})
        by_key = {k: f"shape-{i}" for i, k in enumerate(ordered, 1)}
        uuids = [k for k in ordered if _UUID_KEY.fullmatch(k)]
        shared = Counter(k[:8] for k in uuids)  # counted once: a list.count per key was quadratic (#28)
        by_prefix = {k[:8]: by_key[k] for k in uuids if shared[k[:8]] == 1}
        return cls(by_key, by_prefix)

    def label(self, key: str) -> str:
        canon = _canonical(key)
        found = self.by_key.get(canon) or self.by_prefix.get(canon.lower())
        if found is None:
            raise KeyError(f"unknown shape key {key!r}")
        return found

    def spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        for m in _SHAPE_TOKEN.finditer(text):
            token = _canonical(m.group(0)).lower()
            found = self.by_key.get(token) if len(token) == 32 else self.by_prefix.get(token)
            if found:
                yield m.start(), m.end(), found
