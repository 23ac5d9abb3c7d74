"""Distill: one trace's packets -> records under `<results>/distilled/<slug>/<id>.json`, and a report.

    optrace distill --packets FILE --out RESULTS --report FILE --mode draft|agent|none
                    [--command TEMPLATE] [--batch-size N] [--jobs N]

`--packets` is the packets stage's file (optrace.mine.packetfile), unpacked for the job into a folder
beside the report (an agent is given a packet file). `--out` is the results root: each packet names its
record's path relative to it (`target.output`).
Modes: `draft` runs the deterministic drafter (optrace.distill.drafter); `agent` runs the user's command
template once per packet, with `{brief}`, `{packet}` and `{out}` replaced by shell-quoted absolute
paths, in batches of `--batch-size` packets (up to `--jobs` batches at once); `none` drafts nothing.

A record that exists is never rewritten (an agent's work is never clobbered, and validation is not
re-triggered forever): its packet is reported `skipped-exists` and no agent is started for it. The
report lists one outcome per packet: drafted | skipped-exists | skipped-thin (why; for an agent that
exits 0 without writing, its own report) | agent-wrote | agent-failed (exit code and the tail of
stderr). A failing agent call fails only its packet; what the agent printed is kept as `agent_report`.

Agent batches never mix record types (the brief's advice: one type per batch, one worked example).
An agent ends its output with one `AGENT_REPORT {json}` line (the brief says how): the fields it found
too thin, the gates that blocked it and free text; it is merged into the packet's outcome as
`agent_structured`, and a batch in which no packet reported any difficulty is marked
`no_difficulty_reported` (a report without difficulties is suspect). Every packet finished prints one
flushed progress line (`12/40 anti-8da597: drafted`), so `tail -f` on the job's log shows progress.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from optrace.distill.drafter import draft_record, read_code
from optrace.distill.records import WROTE, drafts_json
from optrace.errors import InputError
from optrace.jsonio import MAX_JSON_BYTES, parse_untrusted, read_bytes, read_json, write_json, write_text_atomic
from optrace.mine.packetfile import read_packet_file

BRIEF = Path(__file__).with_name("brief.md")
MODES = ("draft", "agent", "none")
PLACEHOLDER = re.compile(r"\{(brief|packet|out)\}")
REQUIRED_PLACEHOLDERS = ("packet", "out")
TAIL_LINES = 20  # of an agent's stderr (on failure) and of its report on stdout
TAIL_CHARS = 2000
TYPE_ORDER = ("strategy", "anti-strategy", "reference-kernel")
REPORT_MARK = "AGENT_REPORT "
REPORT_LISTS = ("too_thin", "blocked_by")
MAX_NOTES_CHARS = 2000


class Progress:
    """One flushed line per finished packet, `<done>/<total> <seg_id>: <outcome>[: reason]`, from any thread."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total, self.done, self.stream = total, 0, stream or sys.stdout
        self._lock = threading.Lock()

    def __call__(self, o: dict) -> dict:
        with self._lock:
            self.done += 1
            detail = f" (exit {o['exit_code']})" if "exit_code" in o else ""
            reason = f": {o['reason']}" if o.get("reason") else ""
            print(
                f"{self.done}/{self.total} {o['seg_id']}: {o['outcome']}{detail}{reason}", file=self.stream, flush=True
            )
        return o


def structured_report(stdout: str) -> dict | None:
    """The agent's last `AGENT_REPORT {...}` line as {too_thin, blocked_by, notes}; None when there is none
    or it is not that shape (the raw tail is kept either way)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(REPORT_MARK):
            try:
                data = json.loads(line[len(REPORT_MARK) :])
            except (ValueError, RecursionError):  # an agent's line, nested past the parser's depth too
                return None
            if not isinstance(data, dict):
                return None
            lists = {k: data.get(k) or [] for k in REPORT_LISTS}
            if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()):
                return None
            notes = data.get("notes")
            return {
                **{k: [x[:200] for x in v][:20] for k, v in lists.items()},
                "notes": notes[:MAX_NOTES_CHARS] if isinstance(notes, str) else "",
            }
    return None


def reported_difficulty(o: dict) -> bool:
    rep = o.get("agent_structured")
    return bool(rep and (rep["too_thin"] or rep["blocked_by"])) or o["outcome"] in ("agent-failed", "skipped-thin")


def dumps_record(record: dict) -> str:
    """The store's on-disk format: one-space indent, non-ASCII kept, trailing newline."""
    return json.dumps(record, ensure_ascii=False, indent=1) + "\n"


def write_new(path: Path, text: str) -> bool:
    """Write `path` atomically unless it exists; False when it already does (someone else wrote it).

    The text goes to a temp file that is then hard-linked into place: a link never replaces an
    existing file, so a record an agent writes at the same moment is never clobbered. The temp file
    lives outside distilled/ (in the trace's work dir, same file system), so a job killed mid-write
    leaves nothing in distilled/ for validation or a user to trip over; `distill` clears it on start.
    """
    tmp_dir = draft_tmp_dir(path)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = tmp_dir / f"{path.name}.{os.getpid()}.draft"
    write_text_atomic(staging, text)
    try:
        os.link(staging, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: rename, having checked just before
        if path.exists():
            return False
        os.replace(staging, path)
        return True
    finally:
        staging.unlink(missing_ok=True)


def draft_tmp_dir(record: Path) -> Path:
    """<results>/work/<slug>/distill-tmp for a record at <results>/distilled/<slug>/<id>.json."""
    return record.parents[2] / "work" / record.parent.name / "distill-tmp"


class Journal:
    """Outcomes this trace's job finished, one JSON line each, in <results>/work/<slug>/distill-tmp/.

    A job killed mid-way leaves it behind; the resumed job replays every journaled outcome whose record
    is still there (a record is never rewritten, so re-drafting it would say `skipped-exists`), which
    makes its report equal a clean run's. A packet is journaled as started before its work runs: one
    started with no record there and never finished may have written its record without its outcome
    (the kill came between the two), so that record is moved aside to `distill-tmp/interrupted/` (kept, never deleted) and the
    packet is worked again. A completed job removes the journal. Only one job per trace runs at a time,
    so the job also clears its predecessor's temp files on start.
    """

    REPLAYED = ("drafted", "agent-wrote", "skipped-thin")

    def __init__(self, out_root: Path, slug: str):
        self.tmp_dir = out_root / "work" / slug / "distill-tmp"
        self.path = self.tmp_dir / "journal.jsonl"
        self.out_root = out_root
        self._lock = threading.Lock()
        self.done: dict[str, dict] = {}
        self.started: set[str] = set()  # begun with no record there yet, and never journaled as done
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                entry, problem = parse_untrusted(line)  # the last line may be torn by the kill
                if problem is None and isinstance(entry, dict) and isinstance(entry.get("seg_id"), str):
                    if entry.get("started") is True and entry.get("existed") is False:
                        self.started.add(entry["seg_id"])
                    elif isinstance(entry.get("outcome"), str):
                        self.done[entry["seg_id"]] = entry
        for folder, pattern in ((self.tmp_dir, "*.draft"), (out_root / "distilled" / slug, ".*.draft*")):
            for leftover in folder.glob(pattern) if folder.is_dir() else []:
                if leftover.is_file():
                    leftover.unlink(missing_ok=True)

    def run(self, packet_path: Path, packet: dict, work: Callable[[Path, dict], dict]) -> dict:
        """The journaled outcome of this packet when it still holds, else `work()`'s, journaled."""
        seg: Any = packet.get("seg_id")  # as the packet states it
        old = self.done.get(seg)
        if old is not None and (old["outcome"] == "skipped-thin" or (self.out_root / old["output"]).exists()):
            return old
        if old is None and seg in self.started:
            self._set_aside(packet_path, packet)
        existed = record_path(self.out_root, packet, packet_path).exists()  # a record from before: never set aside
        self._append({"seg_id": seg, "started": True, "existed": existed})
        result = work(packet_path, packet)
        if result["outcome"] in self.REPLAYED:
            self._append(result)
        return result

    def _set_aside(self, packet_path: Path, packet: dict) -> None:
        """The record an interrupted run may have written without its outcome: kept, out of the way."""
        written = record_path(self.out_root, packet, packet_path)
        if written.is_file():
            aside = self.tmp_dir / "interrupted" / written.name
            aside.parent.mkdir(parents=True, exist_ok=True)
            os.replace(written, aside)

    def _append(self, entry: dict) -> None:
        with self._lock:
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    def complete(self) -> None:
        self.path.unlink(missing_ok=True)


def record_path(out_root: Path, packet: dict, where: Path) -> Path:
    """Where a packet's record goes; refuses a target that would leave `<out>/distilled/`."""
    rel = packet.get("target", {}).get("output")
    if not isinstance(rel, str) or not rel.endswith(".json"):
        raise InputError(where, "target.output is missing or not a .json path")
    parts = Path(rel).parts
    if len(parts) != 3 or parts[0] != "distilled" or ".." in parts:
        raise InputError(where, f"target.output {rel!r} is not distilled/<slug>/<id>.json")
    return out_root / rel


def load_packets(packets_dir: Path) -> tuple[str, list[tuple[Path, dict]]]:
    """(slug, [(packet path, packet)]) in manifest order."""
    manifest = read_json(packets_dir / "manifest.json")
    entries = manifest.get("packets") if isinstance(manifest, dict) else None
    if not isinstance(entries, list):
        raise InputError(packets_dir / "manifest.json", "no packets list")
    packets = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("seg_id"), str):
            raise InputError(packets_dir / "manifest.json", f"a packet entry without a seg_id: {entry!r}")
        path = packets_dir / f"{entry['seg_id']}.json"
        packet = read_json(path)
        if not isinstance(packet, dict):
            raise InputError(path, "not a JSON object")
        packets.append((path, packet))
    return manifest.get("slug", packets_dir.name), packets


def kept_records(report: dict, out_root: Path) -> dict[str, bytes]:
    """File name -> bytes of every record the report says exists (read as validation reads one; its size
    is validation's to judge)."""
    kept, own = {}, f"distilled/{report['slug']}/"
    for o in report["packets"]:
        if o["outcome"] in WROTE and o["output"].startswith(own):  # another trace's area is not this one's
            data, _ = read_bytes(out_root / o["output"], MAX_JSON_BYTES)
            if data is not None:  # a link or a FIFO is validation's to name, in the area
                kept[Path(o["output"]).name] = data
    return kept


def outcome(packet: dict, out_root: Path, path: Path, status: str, **detail: Any) -> dict:
    return {
        "seg_id": packet["seg_id"],
        "id": packet["target"]["id"],
        "record_type": packet["record_type"],
        "output": path.relative_to(out_root).as_posix(),
        "outcome": status,
        **detail,
    }


# ---- draft mode ---------------------------------------------------------------------------------


def draft_one(packet_path: Path, packet: dict, out_root: Path) -> dict:
    path = record_path(out_root, packet, packet_path)
    if path.exists():
        return outcome(packet, out_root, path, "skipped-exists")
    record, reason = draft_record(packet, read_code(packet_path, packet))
    if record is None:
        return outcome(packet, out_root, path, "skipped-thin", reason=reason)
    if not write_new(path, dumps_record(record)):
        return outcome(packet, out_root, path, "skipped-exists")
    thin = reason.partition("; ")[2]  # "drafted; too thin for: ..." names the fields left empty
    return outcome(packet, out_root, path, "drafted", **({"reason": thin} if thin else {}))


# ---- agent mode ---------------------------------------------------------------------------------


def check_template(template: str) -> None:
    if not template.strip():
        raise InputError("distill.command", "agent mode needs a command template (with {packet} and {out})")
    missing = [p for p in REQUIRED_PLACEHOLDERS if f"{{{p}}}" not in template]
    if missing:
        raise InputError("distill.command", f"the template has no {', '.join('{' + m + '}' for m in missing)}")


def render_command(template: str, brief: Path, packet: Path, out: Path) -> str:
    """Only the three placeholders are replaced (a user's own braces, `${HOME}` or awk, stay as written)."""
    values = {"brief": brief, "packet": packet, "out": out}
    return PLACEHOLDER.sub(lambda m: shlex.quote(str(values[m.group(1)].resolve())), template)


def tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-TAIL_LINES:])[-TAIL_CHARS:]


def run_agent(template: str, packet_path: Path, packet: dict, out_root: Path) -> dict:
    path = record_path(out_root, packet, packet_path)
    if path.exists():
        return outcome(packet, out_root, path, "skipped-exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    # shell=True because the user wrote this command line; only our quoted paths are substituted into it
    done = subprocess.run(
        render_command(template, BRIEF, packet_path, path),
        shell=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
    )
    said: dict[str, Any] = (
        {"agent_report": tail(done.stdout)} if done.stdout.strip() else {}
    )  # the brief asks for one on stdout
    if (structured := structured_report(done.stdout)) is not None:
        said["agent_structured"] = structured
    wrote = path.exists()
    if done.returncode != 0:
        return outcome(
            packet,
            out_root,
            path,
            "agent-failed",
            exit_code=done.returncode,
            stderr_tail=tail(done.stderr),
            reason="the agent failed after writing the record; validation decides" if wrote else "the agent failed",
            **said,
        )
    if not wrote:  # the brief's answer to a packet too thin for a record: its report says why
        return outcome(packet, out_root, path, "skipped-thin", reason="the agent wrote no record", **said)
    return outcome(packet, out_root, path, "agent-wrote", **said)


def batches(items: list, size: int) -> list[list]:
    """Batches of at most `size` packets of one record type each, types in TYPE_ORDER."""

    def rank(item: tuple[Path, dict]) -> int:
        rtype = item[1].get("record_type")
        return TYPE_ORDER.index(rtype) if rtype in TYPE_ORDER else len(TYPE_ORDER)

    out: list[list] = []
    for rtype in sorted({rank(i) for i in items}):
        same = [i for i in items if rank(i) == rtype]
        out += [same[i : i + size] for i in range(0, len(same), size)]
    return out


def run_agents(
    template: str,
    packets: list[tuple[Path, dict]],
    out_root: Path,
    batch_size: int,
    jobs: int,
    journal: Journal,
    progress: Callable[[dict], dict] | None = None,
) -> tuple[list[dict], list[dict]]:
    """(outcomes, batches): each batch runs its packets one after another; up to `jobs` batches run at once."""
    progress = progress or (lambda o: o)

    def run_batch(batch: list[tuple[Path, dict]]) -> list[dict]:
        return [
            progress(journal.run(path, packet, lambda p, k: run_agent(template, p, k, out_root)))
            for path, packet in batch
        ]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = list(pool.map(run_batch, batches(packets, batch_size)))
    summary = [
        {
            "record_type": group[0]["record_type"],
            "packets": [o["seg_id"] for o in group],
            "no_difficulty_reported": not any(
                reported_difficulty(o) for o in group if o["outcome"] != "skipped-exists"
            ),
        }
        for group in done
        if group
    ]
    return [o for group in done for o in group], summary


# ---- the stage ----------------------------------------------------------------------------------


def distill(
    packets_dir: Path,
    out_root: Path,
    mode: str,
    command: str = "",
    batch_size: int = 8,
    jobs: int = 1,
    stream: TextIO | None = None,
) -> dict:
    if mode == "agent":
        check_template(command)
    slug, packets = load_packets(packets_dir)
    progress = Progress(len(packets) if mode != "none" else 0, stream)
    extra = {}
    journal = Journal(out_root, slug)
    if mode == "draft":
        outcomes = [
            progress(journal.run(path, packet, lambda p, k: draft_one(p, k, out_root))) for path, packet in packets
        ]
    elif mode == "agent":
        outcomes, extra["batches"] = run_agents(command, packets, out_root, batch_size, jobs, journal, progress)
    else:
        outcomes = []
    journal.complete()
    return {
        "slug": slug,
        "mode": mode,
        "counts": dict(sorted(Counter(o["outcome"] for o in outcomes).items())),
        "packets": outcomes,
        **extra,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="optrace distill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--packets", required=True, type=Path, help="one trace's packets file (packets/<slug>.json)")
    ap.add_argument("--out", required=True, type=Path, help="the results root; records go to <out>/<target.output>")
    ap.add_argument("--report", required=True, type=Path, help="distill.json to write")
    ap.add_argument(
        "--drafts",
        type=Path,
        help="drafts.json to write: copies of the records the packets have (optrace.distill.records)",
    )
    ap.add_argument(
        "--mode",
        required=True,
        choices=MODES,
        help="draft: the deterministic drafter; agent: run --command; none: write nothing",
    )
    ap.add_argument("--command", default="", help="agent mode: command template with {brief}, {packet}, {out}")
    ap.add_argument("--batch-size", type=int, default=8, help="agent mode: packets per batch")
    ap.add_argument("--jobs", type=int, default=1, help="agent mode: batches run at once")
    args = ap.parse_args(argv)
    if args.batch_size < 1 or args.jobs < 1:
        raise InputError("--batch-size/--jobs", "must be at least 1")
    packets = read_packet_file(args.packets)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".packets-", dir=args.report.parent) as tmp:
        folder = packets.unpack(Path(tmp))
        report = distill(folder, args.out, args.mode, args.command, args.batch_size, args.jobs)
    write_json(args.report, report)
    if args.drafts:
        write_text_atomic(args.drafts, drafts_json(report["slug"], kept_records(report, args.out)))
    quiet = [b for b in report.get("batches", []) if b["no_difficulty_reported"]]
    if quiet:
        print(
            f"note: {len(quiet)} batch(es) reported no difficulty at all (suspect): "
            + "; ".join(", ".join(b["packets"]) for b in quiet)
        )
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items()) or "nothing distilled"
    print(f"distill: {report['slug']}: mode {args.mode}: {counts}")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
