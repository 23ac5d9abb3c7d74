"""The ladder plot (recon's ladder.svg): what was kept, reverted and rejected, and the floor, per version.

Two steps: `ladder_plot` decides what is drawn (series of points in data coordinates, the floor's step
line, the dotted stems of reverts, labels, ticks and limits) as plain data a test can read, and
`render_svg` writes it as SVG text. The SVG is written by hand: importing matplotlib cost every recon
job ~0.5 CPU s (most of the job), the plot needs only markers, lines and text on a log axis, and the
text is byte-identical on every run by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optrace.mine.ladder import CLAIMS, Step
from optrace.rows import VersionRow

# outcome -> (marker, colour, label). Kept, reverted and rejected must never look alike.
STYLE = {
    "baseline": ("s", "#1f77b4", "baseline"),
    "milestone": ("o", "#2ca02c", "milestone (kept, labelled with its gain)"),
    "mega": ("*", "#006400", "mega milestone"),
    "floor": ("o", "#9acd32", "took the floor, no claim"),
    "flat": ("o", "#bbbbbb", "no improvement"),
    "rebaseline": ("D", "#8c564b", "re-baseline (the harness changed: the floor moves)"),
    "rejected": ("^", "#ff7f0e", "rejected (incorrect, gate, not kept)"),
}
REVERTED = ("X", "#d62728", "failed attempt, undone (at the floor; dotted: what it measured)")
REVERT_COMMIT = ("<", "#9467bd", "revert commit (back to an earlier version)")
NO_NUMBER = ("v", "#777777", "no number (marked on the axis)")
FLOOR_LINE = ("#555555", "floor (best kept)")
NO_NUMBER_Y = 0.03  # axes fraction: on the version axis, just clear of its line
FLOOR_OUTCOMES = ("baseline", "milestone", "mega", "floor", "rebaseline")
MAX_GAIN_LABELS = 30  # the largest gains are labelled; more would overlap into noise
TICK_SUBS = (
    (1,),
    (1, 2, 5),
    (1, 2, 3, 5, 7),
    (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9),
)
# (name, µs per unit): the axis speaks the unit its middle value reads best in (1 <= value < 1000).
UNITS = (("ns", 1e-3), ("µs", 1.0), ("ms", 1e3), ("s", 1e6))
# A latency outside these bounds is no measurement (a zero, a sign slip, 1e308): it is drawn as a
# missing number, never fed to a logarithm or a tick computation that overflows.
PLOTTABLE_US = (1e-6, 1e12)
# Two groups of latencies this many decades apart (a unit slip, a workload swapped for one 1000x
# larger) get an axis each, with a break between: one axis would squeeze the story into a sliver.
BREAK_DECADES = 1.0
PAD = 1.25  # room above and below the data before rounding out to a tick


def plottable(value: float | None) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and PLOTTABLE_US[0] <= value <= PLOTTABLE_US[1]


@dataclass(frozen=True)
class Series:
    label: str
    marker: str
    colour: str
    points: list[tuple[float, float]]  # (version number, latency µs); y is an axes fraction when on_axis
    hollow: bool = False
    on_axis: bool = False  # y in axes coordinates (0 = the version axis), drawn outside the clip
    in_legend: bool = True


@dataclass(frozen=True)
class Label:
    text: str
    at: tuple[float, float]  # data coordinates
    offset: tuple[float, float]  # points right and up
    colour: str = "#000000"
    size: float = 7
    centred: bool = False


@dataclass
class Plot:
    title: str
    series: list[Series] = field(default_factory=list)
    stems: list[tuple[float, float, float]] = field(default_factory=list)  # (x, floor, measured), dotted
    floor: list[tuple[float, float]] = field(default_factory=list)  # step line, drawn "post"
    labels: list[Label] = field(default_factory=list)
    xlim: tuple[float, float] = (0.0, 1.0)
    # log-scale y ranges in µs, lowest first: one, or two with a break between them
    ybands: list[tuple[float, float]] = field(default_factory=lambda: [(1.0, 10.0)])
    yticks: list[float] = field(default_factory=list)  # µs
    xticks: list[float] = field(default_factory=list)
    unit: tuple[str, float] = UNITS[1]  # the y axis's unit and its size in µs
    width: int = 900  # px: wider for long traces, so every version keeps its label

    @property
    def ylim(self) -> tuple[float, float]:
        return self.ybands[0][0], self.ybands[-1][1]

    def tick_label(self, us: float) -> str:
        return f"{round(us / self.unit[1], 6):g}"

    def version_label(self, x: float) -> str:
        return f"v{x:g}"


def log_ticks(low: float, high: float, want: int = 4) -> list[float]:
    """Round latencies (…, 20, 30, 40, …) spanning [low, high], the coarsest set giving `want` ticks:
    a log axis over 16–42 µs has no power of ten inside it, and 2×10¹-style labels read badly."""
    return _ticks(low, high, want)[0]


def _ticks(low: float, high: float, want: int) -> tuple[list[float], tuple[float, ...]]:
    ticks: list[float] = []
    subs: tuple[float, ...] = TICK_SUBS[0]
    for subs in TICK_SUBS:
        ticks = [
            round(m * 10.0**k, 9)
            for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
            for m in subs
            if low <= m * 10.0**k <= high
        ]
        if len(ticks) >= want:
            break
    return sorted(set(ticks)), subs


def rounded_out(low: float, high: float, subs: tuple[float, ...]) -> tuple[float, float]:
    """[low, high] widened to the nearest round values of `subs` outside it (they become ticks too): the
    data's lowest point is never below the lowest tick."""
    candidates = [
        m * 10.0**k for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2) for m in subs
    ]
    below = max((c for c in candidates if c <= low), default=low)
    above = min((c for c in candidates if c >= high), default=high)
    return below, above


def choose_unit(values: list[float]) -> tuple[str, float]:
    """The unit whose reading of the geometric middle of the values lies in [1, 1000)."""
    middle = math.sqrt(min(values) * max(values))
    for name, size in reversed(UNITS):
        if middle / size >= 1:
            return name, size
    return UNITS[0]


def bands(values: list[float]) -> list[list[float]]:
    """The values as one group, or two when a gap of BREAK_DECADES or more (and at least as wide as
    what the two groups span) separates them."""
    ordered = sorted(set(values))
    logs = [math.log10(v) for v in ordered]
    if len(logs) < 2:
        return [ordered]
    gaps = [(logs[i + 1] - logs[i], i) for i in range(len(logs) - 1)]
    widest, at = max(gaps)
    if widest >= BREAK_DECADES and widest >= (logs[-1] - logs[0] - widest):
        return [ordered[: at + 1], ordered[at + 1 :]]
    return [ordered]


def version_ticks(low: float, high: float, most: int = 10) -> list[float]:
    """Whole version numbers in [low, high], 1/2/5 × 10^k apart, at most `most` of them."""
    step = 1
    while (high - low) / step > most:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2  # 1, 2, 5, 10, 20, 50, ...
    first = math.ceil(low / step) * step
    return [float(v) for v in range(int(first), math.floor(high) + 1, step)]


def floor_at(steps: list[Step]) -> dict[int, float]:
    """Version number -> the floor (best kept latency) the kernel stood at after that version."""
    floor, out = None, {}
    for s in steps:
        if s.outcome in FLOOR_OUTCOMES and plottable(s.geomean_us):
            floor = s.geomean_us
        if floor is not None:
            out[s.n] = floor
    return out


def measured(steps: list[Step]) -> list[tuple[float, float]]:
    """(version number, geomean) of the steps that have a plottable number."""
    return [(s.n, s.geomean_us) for s in steps if s.geomean_us is not None and plottable(s.geomean_us)]


def ladder_plot(rows: list[VersionRow], steps: list[Step], title: str) -> Plot:
    """What the ladder plot shows, in data coordinates."""
    plot = Plot(title)
    failed = {r["version"] for r in rows if r["verdict"] == "reverted" and not r.get("reverts")}
    revert_commits = {r["version"] for r in rows if r.get("reverts")}
    floors = floor_at(steps)
    groups: dict[str, list[Step]] = {}
    for s in steps:
        if s.version in revert_commits:
            groups.setdefault("revert-commit", []).append(s)
        elif s.version in failed:
            groups.setdefault("reverted", []).append(s)
        elif plottable(s.geomean_us):
            groups.setdefault(s.outcome, []).append(s)
    for key, (marker, colour, label) in STYLE.items():
        if pts := groups.get(key):
            plot.series.append(Series(label, marker, colour, measured(pts)))
    # A failed attempt leaves the kernel at the floor: drawn there, what it measured only dotted. Before
    # any floor exists there is nothing to go back to, so it stands at its own number.
    back = [s for s in groups.get("reverted", []) if s.n in floors or plottable(s.geomean_us)]
    if back:
        marker, colour, label = REVERTED
        at: list[tuple[float, float]] = [(s.n, y) for s in back if (y := floors.get(s.n, s.geomean_us)) is not None]
        plot.series.append(Series(label, marker, colour, at))
        stems = [s for s in back if s.n in floors and plottable(s.geomean_us)]
        plot.stems = [(s.n, floors[s.n], y) for s in stems if (y := s.geomean_us) is not None]
        if stems:
            plot.series.append(
                Series("measured by a failed attempt", "o", colour, measured(stems), hollow=True, in_legend=False)
            )
    # A revert commit measures the version it restores: drawn at its own number (or the floor without one).
    if restored := [(float(s.n), y) for s in groups.get("revert-commit", []) if (y := _own_or_floor(s, floors))]:
        plot.series.append(Series(REVERT_COMMIT[2], REVERT_COMMIT[0], REVERT_COMMIT[1], restored))
    floor = measured([s for s in steps if s.outcome in FLOOR_OUTCOMES])
    if floor:
        plot.floor = floor + [(max(s.n for s in steps), floor[-1][1])]
    if missing := [s for s in steps if not plottable(s.geomean_us)]:
        marker, colour, label = NO_NUMBER
        plot.series.append(
            Series(label, marker, colour, [(s.n, NO_NUMBER_Y) for s in missing], hollow=True, on_axis=True)
        )
    claims = sorted(
        (
            (s, gain, y)
            for s in steps
            if s.outcome in CLAIMS and (gain := s.improve_pct) is not None and plottable(y := s.geomean_us)
        ),
        key=lambda c: -c[1],
    )[:MAX_GAIN_LABELS]
    plot.labels = [
        Label(f"{s.version} +{gain:.1f}%", (s.n, y), (4, 5), STYLE[s.outcome][1]) for s, gain, y in claims if y
    ]
    values = [y for series in plot.series if not series.on_axis for _, y in series.points] + list(floors.values())
    if values:
        plot.unit = choose_unit(values)
        size = plot.unit[1]
        plot.ybands, plot.yticks = [], []
        groups_of_values = bands(values)
        for i, group in enumerate(groups_of_values):
            ticks, _ = _ticks(min(group) / size / PAD, max(group) * PAD / size, 4 if i == 0 else 2)
            lo, hi = rounded_out(min(group) / size / PAD, max(group) * PAD / size, TICK_SUBS[-2])
            plot.ybands.append((lo * size, hi * size))
            plot.yticks += [t * size for t in sorted({*ticks, lo, hi})]
    plot.labels += [
        Label(f"final: {y / plot.unit[1]:.3g} {plot.unit[0]}", (s.n, y), (0, -14), size=8, centred=True)
        for s in steps
        if s.final and plottable(y := s.geomean_us) and y
    ]
    if steps:  # room on the right for the last gain label
        first, last = min(s.n for s in steps), max(s.n for s in steps)
        plot.xlim = (first - 0.5, last + max(1.2, 0.08 * (last - first)))
        plot.width = max(900, min(1800, 120 + 34 * (last - first + 2)))
    # as many version labels as fit, each at least ~34 px apart (every version up to ~50 versions)
    last_version = max((s.n for s in steps), default=plot.xlim[1])
    plot.xticks = version_ticks(plot.xlim[0], last_version, most=max(10, int(0.9 * plot.width / 34)))
    return plot


def _own_or_floor(s: Step, floors: dict[int, float]) -> float | None:
    return s.geomean_us if plottable(s.geomean_us) else floors.get(s.n)


# --- SVG ---------------------------------------------------------------------------------------

HEIGHT = 450  # px; 1 pt of an offset or font size is drawn as 1.25 px
PT = 1.25
MARGINS = (72.0, 36.0, 18.0, 54.0)  # px around the axes: left, top, right, bottom
BREAK_GAP = 14.0  # px between the two bands of a broken axis
MARKERS = {  # centred on 0,0; filled from the enclosing group's fill and stroke
    "o": '<circle r="3.75"/>',
    "s": '<rect x="-3.4" y="-3.4" width="6.8" height="6.8"/>',
    "*": '<path d="M0,-7 L1.6,-2.2 L6.7,-2.2 L2.6,0.8 L4.1,5.7 L0,2.7 L-4.1,5.7 L-2.6,0.8 L-6.7,-2.2 L-1.6,-2.2 Z"/>',
    "D": '<path d="M0,-4.6 L4.6,0 L0,4.6 L-4.6,0 Z"/>',
    "^": '<path d="M0,-4.6 L4.2,3 L-4.2,3 Z"/>',
    "v": '<path d="M0,4.6 L4.2,-3 L-4.2,-3 Z"/>',
    "X": '<path d="M-4.4,-2.6 L-2.6,-4.4 L0,-1.8 L2.6,-4.4 L4.4,-2.6 L1.8,0 L4.4,2.6 L2.6,4.4 L0,1.8 L-2.6,4.4 '
    'L-4.4,2.6 L-1.8,0 Z"/>',
    "<": '<path d="M-4.8,0 L3.6,-4.6 L3.6,4.6 Z"/>',
}
MARKER_IDS = "os*D^vX<"


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _n(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


class _Axes:
    """Data (linear x, log y over one or two bands) and axes-fraction coordinates -> px."""

    def __init__(self, plot: Plot):
        self.box = (MARGINS[0], MARGINS[1], plot.width - MARGINS[2], HEIGHT - MARGINS[3])
        (self.x0, self.x1) = plot.xlim
        _, top, _, bottom = self.box
        logs = [(math.log10(lo), math.log10(hi)) for lo, hi in plot.ybands]
        usable = bottom - top - BREAK_GAP * (len(logs) - 1)
        spans = [hi - lo for lo, hi in logs]
        # each band as tall as its span, but never under a third of the plot: both groups stay readable
        shares = [max(1 / 3, sp / sum(spans)) for sp in spans] if len(spans) > 1 else [1.0]
        shares = [sh / sum(shares) for sh in shares]
        self.bands: list[tuple[float, float, float, float]] = []  # (log lo, log hi, px bottom, px top)
        y = bottom
        for (lo, hi), share in zip(logs, shares):
            self.bands.append((lo, hi, y, y - share * usable))
            y -= share * usable + BREAK_GAP

    def x(self, v: float) -> float:
        left, _, right, _ = self.box
        return left + (v - self.x0) / (self.x1 - self.x0) * (right - left)

    def y(self, v: float) -> float:
        lv = math.log10(v)
        for i, (lo, hi, py0, py1) in enumerate(self.bands):
            if lv <= hi or i == len(self.bands) - 1:
                if i > 0 and lv < lo:  # inside the break: between the two bands
                    below = self.bands[i - 1]
                    t = (lv - below[1]) / (lo - below[1])
                    return below[3] + t * (py0 - below[3])
                return py0 - (lv - lo) / (hi - lo) * (py0 - py1)
        raise AssertionError("unreachable")

    def y_frac(self, f: float) -> float:
        _, top, _, bottom = self.box
        return bottom - f * (bottom - top)


def label_position(lab: Label, ax: _Axes) -> tuple[float, float]:
    """Where a label's text starts, px. One meant below its point that would reach the version axis
    goes above it instead, clear of a gain label there."""
    x, y = ax.x(lab.at[0]) + lab.offset[0] * PT, ax.y(lab.at[1]) - lab.offset[1] * PT
    if lab.offset[1] < 0 and y > ax.box[3] - 3:
        y = ax.y(lab.at[1]) - (16 + lab.size) * PT
    return x, y


def _text(x: float, y: float, text: str, size: float, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size * PT)}" text-anchor="{anchor}"{extra}>{_esc(text)}</text>'
    )


def _marker_group(s: Series, ax: _Axes) -> str:
    paint = f'fill="none" stroke="{s.colour}" stroke-width="1.2"' if s.hollow else f'fill="{s.colour}" stroke="none"'
    clip = "" if s.on_axis else ' clip-path="url(#axes)"'
    uses = "".join(
        f'<use xlink:href="#m{MARKER_IDS.index(s.marker)}" x="{_n(ax.x(x))}" '
        f'y="{_n(ax.y_frac(y) if s.on_axis else ax.y(y))}"/>'
        for x, y in s.points
    )
    return f"<g {paint}{clip}><title>{_esc(s.label)}</title>{uses}</g>"


def _legend(plot: Plot, ax: _Axes) -> list[str]:
    entries = [(s.marker, s.colour, s.hollow, s.label) for s in plot.series if s.in_legend]
    if plot.floor:
        entries.append(("-", *FLOOR_LINE[:1], False, FLOOR_LINE[1]))
    if not entries:
        return []
    row, size = 7 * PT * 1.6, 7 * PT
    width = 34 + max(len(e[3]) for e in entries) * size * 0.55
    left, top = ax.box[2] - 6 - width, ax.box[1] + 6
    out = [
        f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(width)}" height="{_n(row * len(entries) + 8)}" '
        'fill="#ffffff" fill-opacity="0.8" stroke="#cccccc" rx="3"/>'
    ]
    for i, (marker, colour, hollow, label) in enumerate(entries):
        cy = top + 4 + row * (i + 0.5)
        if marker == "-":
            out.append(
                f'<line x1="{_n(left + 6)}" y1="{_n(cy)}" x2="{_n(left + 26)}" y2="{_n(cy)}" stroke="{colour}" '
                'stroke-width="1.25"/>'
            )
        else:
            paint = f'fill="none" stroke="{colour}" stroke-width="1.2"' if hollow else f'fill="{colour}"'
            out.append(f'<use xlink:href="#m{MARKER_IDS.index(marker)}" x="{_n(left + 16)}" y="{_n(cy)}" {paint}/>')
        out.append(_text(left + 32, cy + size * 0.35, label, 7))
    return out


def _break_marks(ax: _Axes) -> list[str]:
    """A white band with two slashes on each vertical axis line, between the bands of a broken axis."""
    out = []
    left, _, right, _ = ax.box
    for below, above in zip(ax.bands, ax.bands[1:]):
        y0, y1 = below[3], above[2]  # px: top of the lower band, bottom of the upper one
        out.append(
            f'<rect x="{_n(left - 6)}" y="{_n(y1)}" width="{_n(right - left + 12)}" height="{_n(y0 - y1)}" '
            'fill="#ffffff"/>'
        )
        for x in (left, right):
            out += [
                f'<line x1="{_n(x - 5)}" y1="{_n(y + 3)}" x2="{_n(x + 5)}" y2="{_n(y - 3)}" stroke="#000000"/>'
                for y in (y0, y1)
            ]
    return out


def render_svg(plot: Plot) -> str:
    """The plot as a standalone SVG document (the same text for the same plot)."""
    ax = _Axes(plot)
    left, top, right, bottom = ax.box
    width = plot.width
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" font-family="DejaVu Sans, sans-serif">',
        "<defs>"
        + "".join(f'<g id="m{i}">{MARKERS[m]}</g>' for i, m in enumerate(MARKER_IDS))
        + f'<clipPath id="axes"><rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" '
        f'height="{_n(bottom - top)}"/></clipPath></defs>',
        f'<rect width="{width}" height="{HEIGHT}" fill="#ffffff"/>',
    ]
    for v in plot.yticks:  # grid, tick marks and labels
        y = ax.y(v)
        out.append(
            f'<line x1="{_n(left)}" y1="{_n(y)}" x2="{_n(right)}" y2="{_n(y)}" stroke="#b0b0b0" '
            'stroke-opacity="0.3" stroke-width="0.8"/>'
        )
        out.append(f'<line x1="{_n(left - 4)}" y1="{_n(y)}" x2="{_n(left)}" y2="{_n(y)}" stroke="#000000"/>')
        out.append(_text(left - 7, y + 4, plot.tick_label(v), 10, "end"))
    for v in plot.xticks:
        x = ax.x(v)
        out.append(
            f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(bottom)}" stroke="#b0b0b0" '
            'stroke-opacity="0.3" stroke-width="0.8"/>'
        )
        out.append(f'<line x1="{_n(x)}" y1="{_n(bottom)}" x2="{_n(x)}" y2="{_n(bottom + 4)}" stroke="#000000"/>')
        out.append(_text(x, bottom + 18, plot.version_label(v), 10, "middle"))
    if plot.stems:
        out.append(
            '<path clip-path="url(#axes)" fill="none" stroke="{}" stroke-width="1.25" stroke-dasharray="1.25,2" '
            'd="{}"/>'.format(
                REVERTED[1], " ".join(f"M{_n(ax.x(x))},{_n(ax.y(a))}V{_n(ax.y(b))}" for x, a, b in plot.stems)
            )
        )
    if plot.floor:
        (x0, y0), rest = plot.floor[0], plot.floor[1:]
        # "post": level until the next point's version, then up or down to its latency
        d = f"M{_n(ax.x(x0))},{_n(ax.y(y0))}" + "".join(f"H{_n(ax.x(x))}V{_n(ax.y(y))}" for x, y in rest)
        out.append(
            f'<path clip-path="url(#axes)" fill="none" stroke="{FLOOR_LINE[0]}" stroke-width="1.25" d="{d}">'
            f"<title>{_esc(FLOOR_LINE[1])}</title></path>"
        )
    out += [_marker_group(s, ax) for s in plot.series]
    for lab in plot.labels:
        x, y = label_position(lab, ax)
        out.append(
            _text(
                x,
                y,
                lab.text,
                lab.size,
                "middle" if lab.centred else "start",
                f' fill="{lab.colour}"' if lab.colour != "#000000" else "",
            )
        )
    out.append(
        f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" height="{_n(bottom - top)}" '
        'fill="none" stroke="#000000" stroke-width="1"/>'
    )
    out += _break_marks(ax)
    out += _legend(plot, ax)
    out.append(_text((left + right) / 2, bottom + 36, "version", 10, "middle"))
    axis = f"geomean latency ({plot.unit[0]}, log scale{', broken' if len(plot.ybands) > 1 else ''})"
    out.append(
        _text(18, (top + bottom) / 2, axis, 10, "middle", f' transform="rotate(-90 18 {_n((top + bottom) / 2)})"')
    )
    out.append(_text((left + right) / 2, top - 10, plot.title, 12, "middle"))
    out.append("</svg>")
    return "\n".join(out) + "\n"
