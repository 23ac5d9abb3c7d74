"""What a per-type drafter returns: the type-specific parts of a record, or why it cannot write one."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Draft:
    """The type-specific parts of a record; `thin` names fields the packet was too thin to fill."""

    payload: dict
    gain: dict
    effect: dict  # evidence.raw.effect: the absolute numbers, human-only
    thin: list[str] = field(default_factory=list)
