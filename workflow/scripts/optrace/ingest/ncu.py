"""Nsight Compute output: kernel-name normalisation and a tolerant reader for `ncu --csv` exports.

Captures are untrusted and come from many ncu builds, so the reader never raises: odd input gives an
empty table and a reason. It understands the details page (20-column header, or the older 15-column
one ending at `Metric Value`), the `--metrics` form (same layout, raw counter names), and the raw page
(`--page raw`: one column per metric, a units row, one row per launch). See trace-format.md §8.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

# Spellings of an anonymous namespace in demangled (ncu, c++filt) and nsys names.
_ANON_SCOPES = ("(anonymous namespace)::", "<unnamed>::")


def normalize_kernel_name(name: str) -> str:
    """The bare function name: `void a::(anonymous namespace)::k<T, 4>(long, ...)` -> `k`.

    The order matters: anonymous scopes go before any `(` cut, or "(anonymous namespace)" would
    truncate the name to `a::`.
    """
    text = name.strip()
    if text.startswith("void "):
        text = text[len("void ") :]
    for scope in _ANON_SCOPES:
        text = text.replace(scope, "")
    text = _cut_template_args(text)
    text = text.split("(", 1)[0]
    return text.rsplit("::", 1)[-1].strip()


def _cut_template_args(text: str) -> str:
    """Drop every balanced `<...>` group, nested ones included. An unclosed `<` drops the rest."""
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def is_harness_kernel(name: str, non_target: list[str]) -> bool:
    """True when `name` is one of the harness kernels (RNG fill, L2 flush, ...) rather than a target.

    Substring, not only equality, so decorated spellings (a mangled name, a `_v2` suffix) still match.
    """
    norm = normalize_kernel_name(name)
    if not norm:
        return False
    for entry in non_target:
        target = normalize_kernel_name(entry)
        if target and target in norm:
            return True
    return False


@dataclass(frozen=True)
class NcuKernel:
    """One profiled launch."""

    name: str  # as ncu printed it (not normalised)
    duration_us: float | None


@dataclass(frozen=True)
class NcuTable:
    kernels: tuple[NcuKernel, ...]  # launch order, one per ncu ID
    reason: str | None = None  # why nothing (or not everything) was read


_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# `1,215,000,000.00`: comma groups of three AND a dot decimal. Without the decimal, `1,215` could be a
# European 1.215, so it stays unparsed.
_GROUPED_NUMBER = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+\.\d+")


def parse_number(text: str) -> float | None:
    """A finite float when the cell is unambiguously a number, else None."""
    cell = text.strip()
    if _PLAIN_NUMBER.fullmatch(cell):
        value = float(cell)
    elif _GROUPED_NUMBER.fullmatch(cell):
        value = float(cell.replace(",", ""))
    else:
        return None
    return value if math.isfinite(value) else None


# ncu prints time units both short (`ns`) and long (`nsecond`), depending on --print-units.
_US_PER_UNIT = {
    "ns": 1e-3,
    "nsecond": 1e-3,
    "us": 1.0,
    "usecond": 1.0,
    "µs": 1.0,
    "ms": 1e3,
    "msecond": 1e3,
    "s": 1e6,
    "second": 1e6,
}
_RAW_DURATION = "gpu__time_duration.sum"  # always ns unless a unit says otherwise


def _to_us(value: str, unit: str) -> float | None:
    number = parse_number(value)
    scale = _US_PER_UNIT.get(unit.strip())
    if number is None or scale is None or number <= 0:
        return None
    return round(number * scale, 6)  # round off binary noise (406240 ns -> 406.24, not 406.24000000000001)


@dataclass
class _Layout:
    """Column positions of one CSV block (a file may hold several, each with its own header)."""

    name: int
    metric: int | None  # details page / --metrics form
    unit: int | None
    value: int | None
    raw_duration: int | None  # raw page: the gpu__time_duration.sum column
    raw_unit: str = "ns"  # raw page: its unit, from the units row
    units_seen: bool = False

    @classmethod
    def of(cls, header: list[str]) -> _Layout | None:
        cols = {cell.strip(): i for i, cell in enumerate(header)}
        if "Kernel Name" not in cols:
            return None
        return cls(
            name=cols["Kernel Name"],
            metric=cols.get("Metric Name"),
            unit=cols.get("Metric Unit"),
            value=cols.get("Metric Value"),
            raw_duration=cols.get(_RAW_DURATION),
        )

    @property
    def is_raw(self) -> bool:
        return self.metric is None or self.value is None

    def duration_us(self, row: list[str]) -> float | None:
        if self.is_raw:
            if self.raw_duration is None:
                return None
            return _to_us(_cell(row, self.raw_duration), self.raw_unit)
        metric = _cell(row, self.metric)
        unit = _cell(row, self.unit)
        if metric == "Duration":
            return _to_us(_cell(row, self.value), unit)
        if metric == _RAW_DURATION:
            return _to_us(_cell(row, self.value), unit or "ns")
        return None


def _cell(row: list[str], index: int | None) -> str:
    # Ragged rows: metric rows stop after Metric Value, so the rule columns are absent, not empty.
    if index is None or index >= len(row):
        return ""
    return row[index].strip()


def _is_header(line: str) -> bool:
    first = line.lstrip("\ufeff").lstrip()
    if not (first.startswith('"ID"') or first.startswith("ID,")):
        return False
    cells = next(csv.reader([first]), [])
    return bool(cells) and cells[0].strip() == "ID"


def _table_start(text: str) -> int | None:
    """Offset of the first header line; what comes before is the ==PROF== preamble and program stdout."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if _is_header(line):
            return offset
        offset += len(line)
    return None


def parse_ncu_csv(text: str) -> NcuTable:
    start = _table_start(text)
    if start is None:
        return NcuTable((), "no ncu CSV header (no line whose first cell is ID)")
    order: list[tuple[int, str]] = []  # (block, ncu ID): IDs restart in each appended block
    names: dict[tuple[int, str], str] = {}
    durations: dict[tuple[int, str], float] = {}
    layout: _Layout | None = None
    block = -1
    reason = None
    unnamed_header = False
    try:
        for row in csv.reader(io.StringIO(text[start:])):
            first = _cell(row, 0).lstrip("\ufeff")
            if first == "ID":
                layout, block = _Layout.of(row), block + 1
                unnamed_header = unnamed_header or layout is None
                continue
            if layout is None:
                continue
            if not first:
                # The raw page's second row carries the units, with the identity cells empty.
                if layout.is_raw and not layout.units_seen and layout.raw_duration is not None:
                    layout.raw_unit = _cell(row, layout.raw_duration) or "ns"
                    layout.units_seen = True
                continue
            name = _cell(row, layout.name)
            if not (first.isascii() and first.isdigit()) or not name:
                continue  # ==PROF== lines or program output after the table
            key = (block, first)
            if key not in names:
                order.append(key)
                names[key] = name
            if key not in durations:
                duration = layout.duration_us(row)
                if duration is not None:
                    durations[key] = duration
    except csv.Error as exc:
        reason = f"CSV unreadable past a point ({exc})"
    kernels = tuple(NcuKernel(names[k], durations.get(k)) for k in order)
    if not kernels and reason is None:
        reason = "ncu CSV header has no Kernel Name column" if unnamed_header else "ncu CSV header but no kernel rows"
    return NcuTable(kernels, reason)
