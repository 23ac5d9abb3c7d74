"""`optrace gate`: admit staged records into a live store, never weaker than the store's own checker.

    optrace gate match (--input REC | --all DIR) [--store ROOT] [--out FILE]
        validation first, then same-scope candidates, exact episode_key matches and a proposed action
        (JSON; optrace.admit.proposals); exit 1 if a record fails
    optrace gate commit insert   --input REC [--store ROOT]
    optrace gate commit confirm  --input REC --target ID [--store ROOT]
    optrace gate commit conflict --input REC --target ID [--reason TEXT [--force]] [--store ROOT]
    optrace gate commit-all --proposals match.json [--store ROOT] [--out FILE]
        each proposal in its own transaction; a refused one does not stop the others; exit 1 if any refused.
        A reviewer may edit a proposal's `action` and `target` (and add `conflict_reason`, `force`) first;
        a record file that changed since `match` is refused (its sha256 is in the proposal)
    optrace gate recover [--store ROOT]
        finish or undo what a killed commit left (every commit does this first anyway)

The store root defaults to `live_store` in config/config.yaml. What is admissible is
optrace.admit.admissibility; what each commit does, optrace.admit.commits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from optrace.admit.commits import commit_all, commit_one, writing
from optrace.admit.live_store import GateStore
from optrace.admit.proposals import MAX_CANDIDATES, match_files, read_input, staged_files
from optrace.errors import InputError
from optrace.jsonio import write_text_atomic
from optrace.scrub.leak_patterns import denylist_pattern, read_denylist

DEFAULT_CONFIG = Path("config/config.yaml")


def store_root(arg: str | None, config: Path) -> Path:
    if arg:
        return Path(arg)
    if config.is_file():
        import yaml

        try:
            live = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("live_store")
        except yaml.YAMLError as exc:
            raise InputError(config, f"not valid YAML ({exc})") from None
        if live:
            return Path(live)
    raise InputError(config, "no live store: give --store ROOT or set live_store in the config")


def emit(obj_: Any, out: Path | None) -> None:
    text = json.dumps(obj_, ensure_ascii=False, indent=1) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(out, text)


STORE_CHANGES = ("inserted", "confirmed", "conflict-filed")


def outcome_lines(report: dict, out: Path | None) -> list[str]:
    """What commit-all did, for a person: the counts, where the outcomes are, every refusal and skip."""
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items()) or "no proposal"
    lines = [f"commit-all: {counts}" + (f" (every outcome in {out})" if out else "")]
    for o in report["outcomes"]:
        if o["outcome"] in ("refused", "skipped"):
            lines.append(f"  {o['outcome']} {o.get('id') or o.get('input')}: {(o.get('messages') or ['?'])[0]}")
    if any(o["outcome"] in STORE_CHANGES for o in report["outcomes"]):
        lines.append(
            "the live store changed: the staging README's novelty and confirmation columns are stale; "
            "run `snakemake staging` to rewrite it"
        )
    return lines


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="optrace gate", description=(__doc__ or "").split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", help="live store root (holds records/index.json); default: config live_store")
    common.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="config file read for live_store")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("match", parents=[common], help="propose insert / confirm / conflict")
    which = m.add_mutually_exclusive_group(required=True)
    which.add_argument("--input", type=Path, help="one record")
    which.add_argument("--all", type=Path, metavar="DIR", help="every record of a staging area (or below DIR)")
    m.add_argument("--out", type=Path, help="write the JSON here (paths inside are relative to it)")
    m.add_argument("--max-candidates", type=int, default=MAX_CANDIDATES, help="listed per record; 0 = all")
    c = sub.add_parser("commit", parents=[common], help="insert, confirm or conflict one record")
    c.add_argument(
        "action",
        choices=("insert", "confirm", "conflict"),
        help="insert a new record, confirm --target, or file a conflict with --target",
    )
    c.add_argument("--input", type=Path, required=True, help="the record to commit (never rewritten)")
    c.add_argument("--target", help="the store record confirmed or contradicted")
    c.add_argument("--reason", help="conflict_reason (default: the two directions)")
    c.add_argument(
        "--force",
        action="store_true",
        help="conflict: file it although the two records point the same way or are of different episodes "
        "(needs --reason, which the conflict file records)",
    )
    a = sub.add_parser("commit-all", parents=[common], help="execute a reviewed proposal file")
    a.add_argument("--proposals", type=Path, required=True, help="a match.json (from `gate match --all`), reviewed")
    a.add_argument("--out", type=Path, help="write the outcomes here instead of stdout (a summary is printed)")
    sub.add_parser("recover", parents=[common], help="finish or undo a killed commit")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    store = GateStore(store_root(args.store, args.config))
    if args.command == "match":
        paths = [args.input] if args.input is not None else staged_files(args.all)
        base = args.out.parent.resolve() if args.out else None
        shown = (lambda p: os.path.relpath(p.resolve(), base)) if base else (lambda p: str(p.resolve()))
        report = match_files(store, paths, args.max_candidates, shown)
        emit(report if args.all is not None else report["proposals"][0], args.out)
        return 1 if report["counts"].get("refuse") else 0
    if args.command == "commit":
        data, error = read_input(args.input)
        if data is None:
            raise InputError(args.input, str(error))
        denylist = denylist_pattern(read_denylist())
        with writing(store) as txn:
            outcome = commit_one(txn, args.action, data, args.target, denylist, args.reason, args.force)
        print(json.dumps(outcome, ensure_ascii=False))
        if outcome["outcome"] == "refused":
            print(f"REFUSED: {args.input}: {outcome['messages'][0]}", file=sys.stderr)
            return 1
        return 0
    if args.command == "commit-all":
        report = commit_all(store, args.proposals)
        emit(report, args.out)
        print("\n".join(outcome_lines(report, args.out)), file=sys.stderr if args.out is None else sys.stdout)
        return 1 if report["counts"].get("refused") else 0
    with writing(store) as txn:
        print("\n".join(f"recover: {d}" for d in txn.done) or "recover: nothing to do")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
