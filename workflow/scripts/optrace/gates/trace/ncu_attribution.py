"""Gate `ncu-attribution`: a profiler claim needs a usable capture of the version the record is about.

A capture is usable for a record when ingest found that it measured the kernel under test (not a
harness kernel such as torch's RNG fill): the packet says so (profiler.ncu_measured_the_kernel_under_test),
one of its capture_dirs is usable in ingest's profiles.jsonl, and profiles.jsonl says that capture is
of one of the record's own versions (the packet's provenance version and occurrences): a capture of
another version does not count -- except that a strategy's bottleneck fields speak of the capture of the
version it builds on (provenance.builds_on.capture_dirs, of that version: the problem the step fixed), and
only of it (its own after-profile diagnoses the next step). This is a trace gate: it judges mined records
only.

Without such a capture a record states nothing a profiler establishes:
- evidence.summary.bottleneck_evidence: basis `bench-only` or `none`, no tool;
- retrieval.signals.bottleneck and evidence.summary.mechanism_metrics are null or absent, and
  retrieval.signals.metrics is empty (its metrics are profiler counters); payload.problem.bottleneck is
  null or whole clauses of the bottleneck the run's commit subject states (`(bottleneck: ...)`) or,
  for a strategy, the bottleneck type or a capture symptom of the version it builds on;
- no string of the record, `goal` and every other (code quoted verbatim aside), names a profiler or a
  profiler metric (unless a strategy has its parent's capture to speak of): ncu, Nsight, nsys, rocprof,
  omniperf, CUPTI, a roofline, "profiler shows" / "(profiler-confirmed)" / "confirmed by profiling" /
  "hardware counters" (also glued to what follows, `NCUreport`, and in full-width or look-alike
  letters), counter names such as `dram__bytes` or `dram_throughput_pct`, "achieved occupancy".
Whatever the capture, basis `microbenchmark` fails (a trace holds no microbenchmark) and so does
`asserted` (an assertion is not evidence).
With the capture, the claims must agree with it: bottleneck_evidence.note is whole consecutive clauses of
the capture's conclusion (whitespace and case aside; a clause ends at . ; : , ! or ?), never a fragment
that says something else ("not hide"), payload.problem.bottleneck whole clauses of that conclusion or of
the bottleneck the commit subject states, and a tool is Nsight Compute's
(`ncu`); the bottleneck label and the metrics are the capture's (the structured-facts gate).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from optrace.gates.store.model import Gate, RecordView, format_loc, obj
from optrace.gates.trace.model import CLAIMS_AT, PacketEvidence, needs_packet

PROFILER_TEXT = re.compile(
    r"\b(?:ncu|nsight|nsys|rocprof|omniperf|cupti|nvprof)|\broofline|\bprofil(?:er|ed|ing)?[\s-]+(?:shows?|showed|says|"
    r"reports?|reported|confirms?|confirmed|reveals?|revealed|indicates?|indicated|verified|data|trace|capture|run|"
    r"counters?|results?|output)\b"
    r"|\b(?:confirmed|verified|measured|shown|seen|found)\s+(?:by|with|in|under|through)\s+(?:the\s+)?profil"
    r"|\b(?:by|when|after|while)\s+profiling\b|\b(?:hardware|performance|pmu)\s+counters?\b"
    r"|\b(?:dram|lts|l1tex|smsp|sm|gpu|gpc|fbpa)__\w+|\b(?:dram|l2|l1|sm|memory)_throughput\w*"
    r"|\bachieved[_ ]occupancy\b|\b(?:warp|stall)_\w*(?:reason|cycles)\b",
    re.I,
)
NO_CAPTURE_BASES = ("bench-only", "none")
NEVER_BASES = ("microbenchmark", "asserted")
PROFILER_TOOLS = ("ncu", "nsight compute")
QUOTED_CODE = (("payload", "implementation", "snippet"), ("payload", "implementation", "dispatch_snippet"))


def record_versions(ev: PacketEvidence) -> set[str]:
    prov = ev.packet.provenance
    versions = {o.get("version") for o in prov.get("occurrences") or [] if isinstance(o, dict)}
    return {v for v in versions | {prov.get("version")} if isinstance(v, str)}


def _usable(profiler: dict, dirs: object, versions: set[str], ev: PacketEvidence) -> bool:
    trace = ev.trace
    return (
        profiler.get("ncu_measured_the_kernel_under_test") is True
        and isinstance(dirs, list)
        and any(
            isinstance(d, str) and d in trace.usable_captures and trace.capture_versions.get(d) in versions
            for d in dirs
        )
    )


def has_own_capture(ev: PacketEvidence) -> bool:
    """A usable capture of one of the record's own versions."""
    packet = ev.packet
    return _usable(obj(packet.agent_facing, "profiler"), packet.provenance.get("capture_dirs"), record_versions(ev), ev)


def has_parent_capture(ev: PacketEvidence) -> bool:
    """A strategy's usable capture of the version it builds on (what the step attacked)."""
    packet = ev.packet
    if packet.data.get("record_type") != "strategy":
        return False
    base = obj(packet.provenance, "builds_on")
    version = base.get("version")
    profiler = obj(packet.agent_facing, "builds_on", "parent_profiler")
    return isinstance(version, str) and _usable(profiler, base.get("capture_dirs"), {version}, ev)


def has_usable_capture(ev: PacketEvidence) -> bool:
    """Any capture the record may speak of: its own version's, or a strategy's parent's."""
    return has_own_capture(ev) or has_parent_capture(ev)


def entitled_conclusion(ev: PacketEvidence) -> str | None:
    """The conclusion a record's bottleneck fields may quote: a strategy's parent capture's (the problem
    it fixed; its own after-profile diagnoses the next step), any other record's own capture's; None
    when it has no such capture."""
    if ev.packet.data.get("record_type") == "strategy":
        if not has_parent_capture(ev):
            return None
        said = obj(ev.packet.agent_facing, "builds_on", "parent_profiler").get("conclusion")
    else:
        if not has_own_capture(ev):
            return None
        said = obj(ev.packet.agent_facing, "profiler").get("conclusion")
    return said if isinstance(said, str) else ""


def stated_bottlenecks(ev: PacketEvidence) -> list[str]:
    """The bottlenecks the run itself states, as evidence items: its commit subject's (`(bottleneck: ...)`)
    and, for a strategy, what the step record or capture of the version it builds on names (the problem the
    step fixed; never the step's own after-state)."""
    kinds = {"stated-bottleneck"}
    if ev.packet.data.get("record_type") == "strategy":
        kinds |= {"parent-bottleneck-type", "parent-symptom"}
    items = ev.packet.agent_facing.get("evidence")
    return [
        i["text"]
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and i.get("kind") in kinds and isinstance(i.get("text"), str)
    ]


# Latin letters written with Cyrillic/Greek look-alikes ("Nѕight"), read as the Latin ones
LOOKALIKE_LETTERS = str.maketrans(
    "аеорсухіѕјԁӏАВЕНКМОРСТХІЅЈαοϲνρτΑΒΕΗΙΚΜΝΟΡΤΧ", "aeopcyxisjdlABEHKMOPCTXISJaocvptABEHIKMNOPTX"
)


def folded(text: str) -> str:
    """text as a reader sees it: NFKC (full-width), look-alike letters Latin, invisible characters gone."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text).translate(LOOKALIKE_LETTERS)
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Mn", "Me"))


def collapsed(text: str) -> str:
    return " ".join(text.split()).casefold()


def strings(value: object, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, string) for every string and key of a JSON value, iteratively (depth is capped upstream);
    a record's claims block is left out: it repeats the record's own strings (the claims gate binds it)."""
    stack = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                yield where, key
                if where + (key,) != CLAIMS_AT:
                    stack.append((where + (key,), item))
        elif isinstance(node, list):
            stack.extend((where + (i,), item) for i, item in enumerate(node))
        elif isinstance(node, str) and where not in QUOTED_CODE:
            yield where, node


def record_strings(view: RecordView) -> list[tuple[tuple, str]]:
    """strings(view.record), read off the walk of the record the gates share (RecordView.leaves)."""
    return [(w, v) for w, v, key in view.leaves if key or (isinstance(v, str) and w not in QUOTED_CODE)]


# every match of PROFILER_TEXT holds one of these (lower-cased): a text with none of them has no hit,
# which one substring scan each tells faster than the pattern's alternation
PROFILER_MARKS = (
    "ncu", "nsight", "nsys", "rocprof", "omniperf", "cupti", "nvprof", "roofline", "profil", "__", "throughput",
    "occupancy", "counter", "warp_", "stall_",
)  # fmt: skip


def profiler_hit(text: str) -> re.Match | None:
    """PROFILER_TEXT in the text as written, else as a reader sees it (folded: the same text when ASCII,
    which then needs no second scan)."""
    seen = folded(text)
    lowered = seen.lower()
    if not any(mark in lowered for mark in PROFILER_MARKS):
        return None
    m = PROFILER_TEXT.search(text)
    if m is None and seen is not text:
        m = PROFILER_TEXT.search(seen)
    return m


def without_capture(view: RecordView, stated: list[str], any_capture: bool) -> list[str]:
    record = view.record
    summary, signals = obj(record, "evidence", "summary"), obj(record, "retrieval", "signals")
    be = obj(summary, "bottleneck_evidence")
    out = []
    if be.get("basis") not in NO_CAPTURE_BASES + NEVER_BASES and "basis" in be:
        out.append(
            f"evidence.summary.bottleneck_evidence.basis: {be.get('basis')!r}, but the packet has no usable "
            "capture of this version"
        )
    if be.get("note") is not None:
        out.append(
            "evidence.summary.bottleneck_evidence.note: a bottleneck finding without a usable capture of this version"
        )
    if be.get("tool") is not None:
        out.append(
            f"evidence.summary.bottleneck_evidence.tool: {be.get('tool')!r} without a usable capture of this version"
        )
    bottleneck = obj(record, "payload", "problem").get("bottleneck")
    if bottleneck is not None and not (
        isinstance(bottleneck, str) and any(is_clauses_of(collapsed(bottleneck), collapsed(s)) for s in stated)
    ):
        out.append(
            "payload.problem.bottleneck: set without a usable capture of this version (and not the bottleneck "
            "its commit subject states)"
        )
    if signals.get("bottleneck") is not None:
        out.append("retrieval.signals.bottleneck: set without a usable capture of this version")
    if signals.get("metrics"):
        out.append("retrieval.signals.metrics: profiler metrics without a usable capture of this version")
    metrics = summary.get("mechanism_metrics")
    if metrics is not None and not (isinstance(metrics, dict) and all(v is None for v in metrics.values())):
        out.append("evidence.summary.mechanism_metrics: set without a usable capture of this version")
    if any_capture:  # a strategy's parent capture: profiler words may speak of it, the fields above may not
        return out
    judged = [(path, text) for path, text in record_strings(view) if path[:3] != ("evidence", "raw", "git_commit")]
    joined = "\0".join(text for _, text in judged)  # NUL is a boundary no part of PROFILER_TEXT matches
    if not profiler_hit(joined):
        judged = []  # one scan says no string has a hit; only a hit needs the per-string scan that says where
    for path, text in judged:
        m = profiler_hit(text)
        if m:
            out.append(
                f"{format_loc(path) or '<top>'}: {m.group(0)!r} is a profiler claim without a usable capture "
                "of this version"
            )
    return out


CLAUSE_END = re.compile(r"[.;:,!?]+(?:\s|$)|$")


def is_clauses_of(value: str, said: str) -> bool:
    """value is one or more whole consecutive clauses of said: it starts where a clause starts and ends
    where one ends (a fragment such as "not hide" or "is" turns the conclusion into another claim)."""
    value = value.rstrip(".;:,!? ")
    if not value:
        return False
    starts = {0} | {m.end() for m in CLAUSE_END.finditer(said)}
    ends = {m.start() for m in CLAUSE_END.finditer(said)}
    at = said.find(value)
    while at != -1:
        if at in starts and at + len(value) in ends:
            return True
        at = said.find(value, at + 1)
    return False


def with_capture(record: dict, conclusion: str, stated: list[str]) -> list[str]:
    be = obj(record, "evidence", "summary", "bottleneck_evidence")
    said = [collapsed(conclusion)]
    out = []
    for where, value, sources in (
        ("payload.problem.bottleneck", obj(record, "payload", "problem").get("bottleneck"), said + stated),
        ("evidence.summary.bottleneck_evidence.note", be.get("note"), said),
    ):
        if value is not None and not (
            isinstance(value, str) and any(is_clauses_of(collapsed(value), s) for s in sources)
        ):
            out.append(f"{where}: not what the capture's conclusion (or the commit subject's bottleneck) says")
    tool = be.get("tool")
    if tool is not None and not (isinstance(tool, str) and tool.strip().casefold() in PROFILER_TOOLS):
        out.append(f"evidence.summary.bottleneck_evidence.tool: {tool!r}, but the capture is Nsight Compute's (ncu)")
    return out


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    record = view.record
    basis = obj(record, "evidence", "summary", "bottleneck_evidence").get("basis")
    out = (
        [
            f"evidence.summary.bottleneck_evidence.basis: {basis!r}: a trace holds no microbenchmark, and an "
            "assertion is not evidence"
        ]
        if basis in NEVER_BASES
        else []
    )
    conclusion = entitled_conclusion(ev)
    if conclusion is not None:
        out += with_capture(record, conclusion, [collapsed(s) for s in stated_bottlenecks(ev)])
    else:
        out += without_capture(view, stated_bottlenecks(ev), has_usable_capture(ev))
    return [f"{view.relpath}: {m}" for m in out]


GATE = Gate(
    "ncu-attribution",
    "profiler fields and phrases only with a usable capture of this version, and consistent with it",
    check=check,
)
