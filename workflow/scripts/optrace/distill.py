"""Distill: one trace's packets -> records under `<results>/distilled/<slug>/<id>.json`, and a report.

    optrace distill --packets DIR --out RESULTS --report FILE --mode draft|agent|none
                    [--command TEMPLATE] [--batch-size N] [--jobs N]

`--out` is the results root: each packet names its record's path relative to it (`target.output`).
Modes: `draft` runs the deterministic drafter (optrace.drafter); `agent` runs the user's command
template once per packet, with `{brief}`, `{packet}` and `{out}` replaced by shell-quoted absolute
paths, in batches of `--batch-size` packets (up to `--jobs` batches at once); `none` drafts nothing.

A record that exists is never rewritten (an agent's work is never clobbered, and validation is not
re-triggered forever): its packet is reported `skipped-exists` and no agent is started for it. The
report lists one outcome per packet: drafted | skipped-exists | skipped-thin (why; for an agent that
exits 0 without writing, its own report) | agent-wrote | agent-failed (exit code and the tail of
stderr). A failing agent call fails only its packet; what the agent printed is kept as `agent_report`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .drafter import draft_record, read_code
from .errors import InputError
from .jsonio import read_json, write_json, write_text_atomic

BRIEF = Path(__file__).with_name("brief.md")
MODES = ("draft", "agent", "none")
PLACEHOLDER = re.compile(r"\{(brief|packet|out)\}")
REQUIRED_PLACEHOLDERS = ("packet", "out")
TAIL_LINES = 20  # of an agent's stderr (on failure) and of its report on stdout
TAIL_CHARS = 2000


def dumps_record(record: dict) -> str:
    """The store's on-disk format: one-space indent, non-ASCII kept, trailing newline."""
    return json.dumps(record, ensure_ascii=False, indent=1) + "\n"


def write_new(path: Path, text: str) -> bool:
    """Write `path` atomically unless it exists; False when it already does (someone else wrote it).

    The text goes to a hidden temp file that is then hard-linked into place: a link never replaces an
    existing file, so a record an agent writes at the same moment is never clobbered.
    """
    staging = path.with_name(f".{path.name}.{os.getpid()}.draft")
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


def outcome(packet: dict, out_root: Path, path: Path, status: str, **detail) -> dict:
    return {"seg_id": packet["seg_id"], "id": packet["target"]["id"], "record_type": packet["record_type"],
            "output": path.relative_to(out_root).as_posix(), "outcome": status, **detail}


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
    done = subprocess.run(render_command(template, BRIEF, packet_path, path), shell=True, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace")
    said = {"agent_report": tail(done.stdout)} if done.stdout.strip() else {}  # the brief asks for one on stdout
    wrote = path.exists()
    if done.returncode != 0:
        return outcome(packet, out_root, path, "agent-failed", exit_code=done.returncode, stderr_tail=tail(done.stderr),
                       reason="the agent failed after writing the record; validation decides" if wrote
                       else "the agent failed", **said)
    if not wrote:  # the brief's answer to a packet too thin for a record: its report says why
        return outcome(packet, out_root, path, "skipped-thin", reason="the agent wrote no record", **said)
    return outcome(packet, out_root, path, "agent-wrote", **said)


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def run_agents(template: str, packets: list[tuple[Path, dict]], out_root: Path, batch_size: int, jobs: int) -> list[dict]:
    """Each batch runs its packets one after another; up to `jobs` batches run at once."""
    def run_batch(batch):
        return [run_agent(template, path, packet, out_root) for path, packet in batch]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return [o for done in pool.map(run_batch, batches(packets, batch_size)) for o in done]


# ---- the stage ----------------------------------------------------------------------------------

def distill(packets_dir: Path, out_root: Path, mode: str, command: str = "", batch_size: int = 8,
            jobs: int = 1) -> dict:
    if mode == "agent":
        check_template(command)
    slug, packets = load_packets(packets_dir)
    if mode == "draft":
        outcomes = [draft_one(path, packet, out_root) for path, packet in packets]
    elif mode == "agent":
        outcomes = run_agents(command, packets, out_root, batch_size, jobs)
    else:
        outcomes = []
    return {"slug": slug, "mode": mode, "counts": dict(sorted(Counter(o["outcome"] for o in outcomes).items())),
            "packets": outcomes}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace distill", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", required=True, type=Path, help="one trace's packets directory (holds manifest.json)")
    ap.add_argument("--out", required=True, type=Path, help="the results root; records go to <out>/<target.output>")
    ap.add_argument("--report", required=True, type=Path, help="distill.json to write")
    ap.add_argument("--mode", required=True, choices=MODES, help="draft: the deterministic drafter; agent: run --command; none: write nothing")
    ap.add_argument("--command", default="", help="agent mode: command template with {brief}, {packet}, {out}")
    ap.add_argument("--batch-size", type=int, default=8, help="agent mode: packets per batch")
    ap.add_argument("--jobs", type=int, default=1, help="agent mode: batches run at once")
    args = ap.parse_args(argv)
    if args.batch_size < 1 or args.jobs < 1:
        raise InputError("--batch-size/--jobs", "must be at least 1")
    report = distill(args.packets, args.out, args.mode, args.command, args.batch_size, args.jobs)
    write_json(args.report, report)
    for o in report["packets"]:
        detail = f" (exit {o['exit_code']})" if "exit_code" in o else ""
        print(f"  {o['seg_id']}: {o['outcome']}{detail}" + (f": {o['reason']}" if o.get("reason") else ""))
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items()) or "nothing distilled"
    print(f"distill: {report['slug']}: mode {args.mode}: {counts}")
    return 0


if __name__ == "__main__":
    from .cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
