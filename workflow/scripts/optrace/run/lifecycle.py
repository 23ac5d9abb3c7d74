"""A run's lifecycle, in two pieces the workflow calls.

`Controller` keeps the lock record: at parse time a killed run's locks are cleared (runlock), at
`onstart` this controller records itself, at `onsuccess`/`onerror` it forgets itself and stops the
scheduler's pending timers. `optrace summary` is the run summary a target rule prints from the files
it declares, with the exit status the target asks for (its log: `log_text`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path

from optrace.run import runlock, snakemake_shim
from optrace.run.summary import Places, StageFiles, collect, exit_status, render
from optrace.scrub.denylist_file import add_denylist_argument, denylist_notice


@dataclass
class Controller:
    snakemake_dir: Path = Path(".snakemake")
    entry: Path | None = None

    def clear_stale_locks(self) -> str | None:
        """Any process may call it: a lock is cleared only when every controller that recorded itself
        here ran on this host and is dead, so a live run (or a job step beside it) keeps its lock."""
        return runlock.clear_stale_locks(self.snakemake_dir)

    def started(self) -> None:
        """onstart: only the controller of a real run gets there (no dry run, no job step)."""
        self.entry = runlock.register(self.snakemake_dir)

    def ended(self) -> None:
        """onsuccess/onerror: forget this controller; no pending scheduler timer delays the exit."""
        if self.entry is not None:
            runlock.unregister(self.entry)
            self.entry = None
        snakemake_shim.cancel_rescheduling_timers()


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="optrace summary",
        description="the run summary of a target: per trace and in total, what was staged, what failed and why",
    )
    ap.add_argument("--slugs", nargs="*", default=[], help="the run's traces")
    ap.add_argument(
        "--stage",
        nargs="+",
        action="append",
        default=[],
        metavar="NAME LOG OUTPUT",
        help="a per-trace stage: its name, its log and the outputs of it the target declares (patterns over {slug})",
    )
    ap.add_argument("--reports", help="per-trace validation report (a pattern over {slug})")
    ap.add_argument("--validation-summary", help="the run's validation-summary.json, if the target declares it")
    ap.add_argument("--staged", help="staging's staged.json, if the target declares it")
    ap.add_argument("--staging-readme", help="the staging README, if the target declares it")
    ap.add_argument("--dataset", help="the dataset README, if the target declares it")
    ap.add_argument("--exits-because", default="", help="why a failing record exits 1 (empty: it does not)")
    ap.add_argument("--need-records", action="store_true", help="having no record at all exits 1 too")
    ap.add_argument("--strict", action="store_true", help="strict: true (a run without a denylist exits 1 too)")
    add_denylist_argument(ap)
    ap.add_argument("--log", type=Path, help="the target's log: the summary, or only why the run exits 1")
    ap.add_argument(
        "--stored",
        metavar="COPY=URL",
        help="results in storage: the job's copies below COPY are named by their URL below URL",
    )
    args = ap.parse_args(argv)
    stages = [StageFiles(name, log, tuple(outputs)) for name, log, *outputs in args.stage if outputs]
    places = Places(
        validation_summary=_path(args.validation_summary),
        staged=_path(args.staged),
        staging_readme=_path(args.staging_readme),
        dataset=_path(args.dataset),
        trace_report=args.reports,
    )
    notice = denylist_notice(os.environ, args.denylist_env) or ""
    result = replace(collect(args.slugs, stages, places), no_denylist=notice.removeprefix("warning: "))
    text = render(result, args.exits_because, need_records=args.need_records, strict=args.strict)
    if args.stored:
        text = as_stored(text, *args.stored.split("=", 1))
    status = exit_status(result, args.exits_because, need_records=args.need_records, strict=args.strict)
    print(text, flush=True)
    if args.log:
        args.log.write_text(log_text(text, status))
    return status


def as_stored(text: str, copy: str, url: str) -> str:
    """`text` with every path below `copy` (where a job keeps its copies of storage objects) named by
    its URL below `url`: the user looks for them there, and the copies are gone when the run ends."""
    return text.replace(copy, url)


def log_text(summary: str, status: int) -> str:
    """A target's log: Snakemake prints a failed job's log again after its error, so when the run exits 1
    the log holds only the lines that say why, and the terminal shows the summary once."""
    if status == 0:
        return summary
    why = [line.strip() for line in summary.splitlines() if "exits 1" in line]
    return "\n".join([*why, "(the run summary is printed above)"]) + "\n"
