"""`optrace validate record FILE [--results R --slug S]`: an agent's self-check of the one record it wrote.

All 19 gates on that record alone, against its packet and the trace's facts, while the workflow runs:
no Snakemake, no lock, no cache written, nothing of the trace's other records read (relations and
store-overlap judge it next to nothing but the live store). `--results` and `--slug` default to what
the record's path says (`<results>/distilled/<slug>/<id>.json`, the `{out}` an agent is given).

Exit 0 when every gate passes, 1 when one fails (each failing gate and its messages are printed), 2 on
unusable input (no packet targets the record, missing ingest files).
"""

from __future__ import annotations

from pathlib import Path

from optrace.errors import InputError
from optrace.gates.store.store import MAX_RECORD_BYTES, parse_json_bytes
from optrace.gates.trace.runner import finish, judge
from optrace.gates.trace.store_overlap import LiveStore, load_live_store
from optrace.gates.tracerun import TracePaths, TraceRun
from optrace.jsonio import read_bytes


def locate(record: Path, results: Path | None, slug: str | None) -> TracePaths:
    """The trace paths of a record file; results and slug from its path when not given."""
    record = record.resolve()
    if results is None or slug is None:
        if record.parent.parent.name != "distilled":
            raise InputError(record, "is not under <results>/distilled/<slug>/: give --results and --slug")
        results = results or record.parent.parent.parent
        slug = slug or record.parent.name
    return TracePaths.under(results, slug)


def check_record_file(
    record: Path, paths: TracePaths, profile: Path, live_index: Path | None, denylist_terms: tuple[str, ...]
) -> dict[str, tuple[str, list[str]]]:
    """{gate: (PASS|FAIL|SKIP, messages)} of the 19 gates on one record file."""
    run = TraceRun(paths, profile, load_live_store(live_index) if live_index else LiveStore(), denylist_terms)
    name = record.name
    target = run.targets.get(name[: -len(".json")] if name.endswith(".json") else name)
    if target is None:
        raise InputError(
            record,
            f"no packet of trace {paths.slug} targets this record (its file name must be the packet's target id)",
        )
    data, error = read_bytes(record, MAX_RECORD_BYTES)
    parsed = None
    if data is not None:
        parsed, error = parse_json_bytes(data)
    packet = run.parse_packet(target, *run.packet_files(*target))
    judged = judge(paths.relpath(name), parsed, error, packet, run.trace, run.denylist)
    return finish([judged], run.live)[0].gates


def format_gates(record: Path, gates: dict[str, tuple[str, list[str]]]) -> str:
    failed = [g for g, (status, _) in gates.items() if status == "FAIL"]
    lines = [f"{record.name}: " + ("PASS (all gates)" if not failed else f"FAIL ({', '.join(failed)})")]
    for g in failed:
        lines += [f"  {g}: {m}" for m in gates[g][1][:6]]
    return "\n".join(lines)
