"""Profiler captures under `profiles/`: which kernel each one measured, and whether that makes it usable.

Two layouts exist (trace-format.md §5): the iteration era's `profiles/v<N>[_-<variant>]/` and the
long-horizon era's `profiles/episode_<E>/[shape-<i>/]`. Everything is read through `TraceFiles`, so a
symlink out of the trace is never followed and every read is size-capped. A malformed or undecodable
file counts as absent: one bad capture never stops ingest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from optrace.ingest.ncu import NcuKernel, NcuTable, is_harness_kernel, normalize_kernel_name, parse_ncu_csv
from optrace.ingest.trace_files import TraceFiles
from optrace.jsonio import parse_untrusted
from optrace.run.sheet import neutral_label
from optrace.scrub.leak_patterns import Denylist

PROFILES = "profiles"
VERSION_DIR = re.compile(r"^[vV](\d{1,9})(?:[_-](.+))?$")  # numbers of at most 9 digits (grammar.NUM)
EPISODE_DIR = re.compile(r"^episode_(\d{1,9})$")
SHAPE_DIR = re.compile(r"^shape-(\d{1,9})$")
# `[ \t]*`, not `\s*`: an empty `Kernel:` line must not borrow the next line as the name.
KERNEL_LINE = re.compile(r"^Kernel:[ \t]*(.*\S)", re.MULTILINE)
NCU_EXPORT_SUFFIXES = (".csv", ".log")
REPORT = "REPORT.md"


@dataclass(frozen=True)
class CaptureDir:
    dir: str  # trace-relative, e.g. profiles/v12_b or profiles/episode_4/shape-1
    version: str | None = None  # `v<N>` without leading zeros (v03 and v3 are the same version)
    variant: str | None = None
    episode: int | None = None
    shape: int | None = None


@dataclass(frozen=True)
class ProfileCapture:
    dir: str
    version: str | None
    variant: str | None
    episode: int | None
    shape: int | None
    kernel: str | None  # as the capture spells it
    kernel_normalized: str | None
    kernel_source: str | None  # capture-relative file that named the kernel
    unusable_reason: str | None
    report: str | None  # trace-relative path of REPORT.md
    duration_us: float | None  # the kernel's measured time, from an ncu CSV export

    @property
    def usable(self) -> bool:
        return self.unusable_reason is None

    def to_row(self) -> dict:
        return {
            "dir": self.dir,
            "version": self.version,
            "variant": self.variant,
            "episode": self.episode,
            "shape": self.shape,
            "kernel": self.kernel,
            "kernel_normalized": self.kernel_normalized,
            "kernel_source": self.kernel_source,
            "usable": self.usable,
            "unusable_reason": self.unusable_reason,
            "report": self.report,
            "duration_us": self.duration_us,
        }


def scan_profiles(files: TraceFiles, non_target: list[str], denied: Denylist | None = None) -> list[ProfileCapture]:
    """Every capture directory of the trace, sorted by dir. One whose name holds a denylisted term is
    never read nor cited: it is unusable, under a neutral name, so the term reaches no output."""
    dirs, _ = _classify(files)
    return sorted(
        (_denied_capture(d) if _is_denied(d.dir, denied) else _read_capture(files, d, non_target) for d in dirs),
        key=lambda c: c.dir,
    )


def ignored_profile_dirs(files: TraceFiles, denied: Denylist | None = None) -> list[str]:
    """Subdirectories of profiles/ that follow neither layout (e.g. `latest`), for ingest's warnings;
    a name holding a denylisted term is given as a neutral one."""
    return [_neutral(d) if _is_denied(d, denied) else d for d in _classify(files)[1]]


DENIED_REASON = "the capture directory's name holds a denylisted term: not read and not cited (rename it to use it)"


def _is_denied(path: str, denied: Denylist | None) -> bool:
    return denied is not None and denied.contains(path)


def _neutral(path: str) -> str:
    return f"{PROFILES}/{neutral_label(path, 'capture')}"


def _denied_capture(where: CaptureDir) -> ProfileCapture:
    return ProfileCapture(
        _neutral(where.dir),
        where.version,
        None,
        where.episode,
        where.shape,
        None,
        None,
        None,
        DENIED_REASON,
        None,
        None,
    )


def _classify(files: TraceFiles) -> tuple[list[CaptureDir], list[str]]:
    dirs: list[CaptureDir] = []
    ignored: list[str] = []
    for entry in files.list_dir(PROFILES):
        if not entry.is_dir:
            continue
        path = f"{PROFILES}/{entry.name}"
        if m := VERSION_DIR.match(entry.name):
            dirs.append(CaptureDir(path, version=f"v{int(m.group(1))}", variant=m.group(2)))
        elif m := EPISODE_DIR.match(entry.name):
            dirs.extend(_episode_dirs(files, path, int(m.group(1))))
        else:
            ignored.append(path)
    return dirs, ignored


def _episode_dirs(files: TraceFiles, path: str, episode: int) -> list[CaptureDir]:
    shapes = []
    own_files = False  # an episode dir holding only shape-<i>/ dirs is a container, not a capture
    for entry in files.list_dir(path):
        m = SHAPE_DIR.match(entry.name) if entry.is_dir else None
        if m:
            shapes.append(CaptureDir(f"{path}/{entry.name}", episode=episode, shape=int(m.group(1))))
        elif not entry.is_dir or next(iter(files.walk(f"{path}/{entry.name}")), None) is not None:
            own_files = True
    return ([CaptureDir(path, episode=episode)] if own_files else []) + shapes


@dataclass(frozen=True)
class _Named:
    kernel: str
    source: str  # capture-relative


def _read_capture(files: TraceFiles, where: CaptureDir, non_target: list[str]) -> ProfileCapture:
    exports = _ncu_exports(files, where.dir)
    named = (
        _kernel_line(files, where.dir, "summary.txt")
        or _metrics_json_kernel(files, where.dir)
        or _kernel_line(files, where.dir, "analysis/metrics_key_run.txt")
        or _export_kernel(exports, non_target)
    )
    kernel = normalized = source = duration = None
    reason: str | None = "no kernel name found"
    if named is not None:
        kernel, source = named.kernel, named.source
        normalized = normalize_kernel_name(kernel)
        if is_harness_kernel(kernel, non_target):
            reason = f"captured harness kernel {normalized}"
        else:
            reason = None
            # Only a usable capture gets a time: a harness kernel's time is not the kernel's.
            duration = _duration_of(exports, normalized)
    return ProfileCapture(
        dir=where.dir,
        version=where.version,
        variant=where.variant,
        episode=where.episode,
        shape=where.shape,
        kernel=kernel,
        kernel_normalized=normalized,
        kernel_source=source,
        unusable_reason=reason,
        report=_report(files, where.dir),
        duration_us=duration,
    )


def _text(files: TraceFiles, rel: str, lenient: bool = False) -> str | None:
    data = files.read_bytes(rel)
    if data is None:
        return None
    try:
        return data.decode("utf-8-sig", errors="replace" if lenient else "strict")
    except UnicodeDecodeError:
        return None


def _kernel_line(files: TraceFiles, capture: str, name: str) -> _Named | None:
    text = _text(files, f"{capture}/{name}")
    m = KERNEL_LINE.search(text) if text else None
    return _named(m.group(1), name) if m else None


def _metrics_json_kernel(files: TraceFiles, capture: str) -> _Named | None:
    name = "analysis/metrics_key_run.json"
    data = files.read_bytes(f"{capture}/{name}")
    if data is None:
        return None
    doc, _ = parse_untrusted(data)  # malformed, undecodable or absurdly nested: treat as absent
    kernel = doc.get("__kernel_name__") if isinstance(doc, dict) else None
    return _named(kernel, name) if isinstance(kernel, str) else None


def _named(kernel: str, source: str) -> _Named | None:
    # A name that normalises to nothing names no kernel; let the next source speak.
    kernel = kernel.strip()
    return _Named(kernel, source) if normalize_kernel_name(kernel) else None


def _ncu_exports(files: TraceFiles, capture: str) -> list[tuple[str, NcuTable]]:
    """Raw `ncu --csv` exports directly in the capture or in its harness/ (where agents' scripts write)."""
    tables = []
    for sub in ("", "harness/"):
        for entry in files.list_dir(f"{capture}/{sub}".rstrip("/")):
            if entry.is_dir or not entry.name.lower().endswith(NCU_EXPORT_SUFFIXES):
                continue
            # Lenient decoding: the preamble is the profiled program's own stdout, in any encoding.
            text = _text(files, f"{capture}/{sub}{entry.name}", lenient=True)
            table = parse_ncu_csv(text) if text else None
            if table and table.kernels:
                tables.append((f"{sub}{entry.name}", table))
    return tables


def _export_kernel(exports: list[tuple[str, NcuTable]], non_target: list[str]) -> _Named | None:
    """The first non-harness launch across the exports (a capture often holds the RNG fill first);
    failing that, the first launch at all, so the capture is reported as a harness capture."""
    first = None
    for source, table in exports:
        for launch in table.kernels:
            named = _named(launch.name, source)
            if named is None:
                continue
            if not is_harness_kernel(launch.name, non_target):
                return named
            first = first or named
    return first


def _duration_of(exports: list[tuple[str, NcuTable]], normalized: str) -> float | None:
    launches: list[NcuKernel] = [k for _, table in exports for k in table.kernels]
    for launch in launches:
        if launch.duration_us is not None and normalize_kernel_name(launch.name) == normalized:
            return launch.duration_us
    return None


def _report(files: TraceFiles, capture: str) -> str | None:
    path = f"{capture}/{REPORT}"
    return path if _text(files, path) is not None else None
