"""Gate `verbatim`: quoted code is the packet's code, whole lines, in order.

Every line of `implementation.snippet` and `dispatch_snippet` must be a whole line of the packet's
code file -- for a `.diff` including its `+`, `-` or space prefix -- and the lines must appear in the
file's order (a selection of lines, never a re-arrangement). Trailing whitespace is ignored (editors
strip it); blank lines carry no code and may separate the selected lines. A diff's snippet quotes the
step's change: at least one added (`+`) line when the diff adds any (else one removed `-` line), so
the lines the step deleted, or unchanged context alone, are never presented as what it implemented.
implementation.core_kernel_name is an identifier of the packet's code (a whole word of it), never a
harness kernel or one the trace does not hold. The format must name what
was quoted: `unified-diff` for a `.diff`, `source` for a `.py`. The reference accepted any line of 12+
characters that was a substring of the code, so fragments, lines without their diff marker and short
invented lines all passed.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.trace.model import PacketEvidence, needs_packet

CODE_FIELDS = ("snippet", "dispatch_snippet")
FORMAT_OF_SUFFIX = {".diff": "unified-diff", ".py": "source"}


def line_positions(code: str) -> dict[str, list[int]]:
    """Each distinct (right-stripped) line of the code -> the line numbers it occurs at, ascending."""
    positions: dict[str, list[int]] = {}
    for i, line in enumerate(code.splitlines()):
        positions.setdefault(line.rstrip(), []).append(i)
    return positions


def first_unquoted(snippet: str, code: str) -> tuple[int, str, str] | None:
    """(snippet line number, line, why) of the first line that breaks the rule, or None."""
    positions = line_positions(code)
    after = -1
    for n, line in enumerate(snippet.splitlines(), 1):
        line = line.rstrip()
        if not line:
            continue
        found = positions.get(line)
        if found is None:
            return n, line, "is not a whole line of"
        i = bisect_right(found, after)
        if i == len(found):
            return n, line, "is out of order with respect to"
        after = found[i]
    return None


def changed_lines(code: str, mark: str) -> bool:
    return any(line.startswith(mark) and not line.startswith(mark * 3) for line in code.splitlines())


def quotes_the_change(snippet: str, code: str) -> bool:
    """The snippet holds an added line when the diff adds any, else a removed one (a pure deletion)."""
    mark = "+" if changed_lines(code, "+") else "-"
    return changed_lines(snippet, mark)


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    impl = obj(view.record, "payload", "implementation")
    quoted = [(k, impl[k]) for k in CODE_FIELDS if isinstance(impl.get(k), str) and impl[k].strip()]
    if not quoted:
        return []
    rel, packet = view.relpath, ev.packet
    if packet.code is None:
        return [f"{rel}: payload.implementation.{k}: quotes code, but the packet has no code file" for k, _ in quoted]
    out = []
    for key, snippet in quoted:
        if (packet.code_file or "").endswith(".diff") and not quotes_the_change(snippet, packet.code):
            out.append(
                f"{rel}: payload.implementation.{key}: quotes none of the lines this step "
                f"{'added' if changed_lines(packet.code, '+') else 'removed'} in {packet.code_file}"
            )
        bad = first_unquoted(snippet, packet.code)
        if bad is not None:
            n, line, why = bad
            out.append(f"{rel}: payload.implementation.{key} line {n}: {line[:100]!r} {why} {packet.code_file}")
    name = impl.get("core_kernel_name")
    if name is not None and not (
        isinstance(name, str)
        and re.fullmatch(r"\w+", name)
        and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", packet.code)
    ):
        out.append(
            f"{rel}: payload.implementation.core_kernel_name: {str(name)[:80]!r} is not an identifier of "
            f"{packet.code_file}"
        )
    kind = next((k for suffix, k in FORMAT_OF_SUFFIX.items() if (packet.code_file or "").endswith(suffix)), None)
    fmt = impl.get("format")
    if kind and isinstance(fmt, str) and not fmt.startswith(kind):
        out.append(f"{rel}: payload.implementation.format: {fmt!r} for code quoted from {packet.code_file}")
    return out


GATE = Gate("verbatim", "quoted code is whole lines of the packet's .diff (with +/-) or .py, in order", check=check)
