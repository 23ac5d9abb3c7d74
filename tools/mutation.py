"""Mutation testing of the modules whose mistakes would let a wrong record through (docs/mutation.md).

    python tools/mutation.py                       # every module below, one after the other
    python tools/mutation.py --module ladder --module memory
    python tools/mutation.py --hand-only           # only the hand-made mutants (seconds)
    python tools/mutation.py --module run --repo ../before   # another checkout (a score "before")

Two kinds of mutant, each run against only the module's own fast unit tests
(`pytest -x -q -m "not workflow and not cluster" <files>`):
- mutmut's (operators, comparisons, constants and strings inside functions), and
- HAND_MADE: edits mutmut cannot make (module-level regexes and dataclass defaults) or that a review
  asked for by name (issue #16). Each is one exact text replacement that must occur once.

Every module runs in a staged copy of the repository (the work tree is never touched, and mutmut's
`mutants/` stays out of it). mutmut 3 imports mutated code only from `./`, `src/` or `source/`, so the
staged copy holds the package at `src/optrace` (with `workflow/scripts/optrace` linked to it, and the
top-level schemas copied in). `shared` beside the copy, and beside mutmut's `mutants/` inside it, links
to the real `../shared`, so tests that read the real data do not skip. Runs are `nice -n 19` (the
machine is shared).
Results: a table on stdout, `<out>/summary.json`, and each survivor's diff in `<out>/<module>.survivors.txt`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("workflow/scripts/optrace")
STAGED_PACKAGE = Path("src/optrace")  # where the staged copy holds it: a path mutmut imports from
# -n 0: no xdist workers (the suite's addopts ask for them); mutmut runs its tests in-process.
FAST = ["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not workflow and not cluster"]
# Copied beside the mutated package: what the fast tests read from the repository root.
ALSO_COPY = ["config", "resources", "workflow", "Snakefile", "profiles", "schemas", "benchmarks"]


@dataclass(frozen=True)
class Target:
    files: tuple[str, ...]  # relative to the package
    tests: tuple[str, ...]


TARGETS = {
    "ladder": Target(("mine/ladder.py",), ("tests/mine/test_ladder.py",)),
    "grammar": Target(("ingest/grammar.py",), ("tests/ingest/test_grammar.py",)),
    "gitlog": Target(("ingest/gitlog.py",), ("tests/ingest/test_ingest.py",)),
    "memory": Target(("ingest/memory.py",), ("tests/ingest/test_memory.py",)),
    "anonymize": Target(
        tuple(
            f"scrub/{m}.py"
            for m in ("anonymize", "rules", "versions", "shapes", "spans", "finders", "folding", "encoded", "denylist")
        ),
        ("tests/scrub/test_anonymize.py", "tests/scrub/test_anonymize_hostile.py"),
    ),
    "tracegates.numbers": Target(("gates/trace/numbers.py",), ("tests/gates/test_trace_gates.py",)),
    "tracegates.fabrication": Target(("gates/trace/fabrication.py",), ("tests/gates/test_trace_gates.py",)),
    "storegates": Target(
        ("gates/store/ids.py", "gates/store/self_contained.py", "gates/store/anonymization.py"),
        ("tests/gates/test_store_injection.py", "tests/scrub/test_anonymize_hostile.py"),
    ),
    # how a run is driven (issue #27): the per-trace guard, the run's lifecycle and locks, the summary
    "run": Target(
        ("run/pertrace.py", "run/runlock.py", "run/lifecycle.py"),
        (
            "tests/run/test_run_rules.py",
            "tests/run/test_pertrace.py",
            "tests/run/test_lifecycle.py",
            "tests/robustness/test_runlock.py",
        ),
    ),
    # the rules of #27's survivors that live outside the run modules
    "admit": Target(("admit/proposals.py", "admit/commits.py"), ("tests/admit/test_rules.py",)),
    "gitdir": Target(("ingest/gitdir.py",), ("tests/robustness/test_git_indirection.py",)),
    "tracegates.pool": Target(("gates/trace/pool.py",), ("tests/gates/test_trace_gates.py",)),
    "folding": Target(("scrub/folding.py",), ("tests/scrub/test_folding.py",)),
    "codedigest": Target(("run/codedigest.py",), ("tests/run/test_codedigest.py",)),
    "summary": Target(("run/summary.py",), ("tests/run/test_summary.py", "tests/run/test_run_rules.py")),
    "jsonio": Target(("jsonio.py",), ("tests/test_jsonio.py",)),
    "secret": Target(("secret.py",), ("tests/run/test_run_rules.py", "tests/gates/test_validate.py")),
    "contracts": Target(
        ("contracts.py",),
        ("tests/gates/test_schema_contract.py", "tests/test_contracts.py"),
    ),
}


@dataclass(frozen=True)
class HandMutant:
    module: str  # a TARGETS key
    file: str
    old: str
    new: str
    what: str


HAND_MADE = [
    HandMutant(
        "ladder",
        "mine/ladder.py",
        "if improve >= t.milestone_pct and",
        "if improve > t.milestone_pct and",
        "a version exactly at the milestone threshold claims no milestone",
    ),
    HandMutant(
        "ladder",
        "mine/ladder.py",
        "milestone_pct: float = 1.5",
        "milestone_pct: float = 2.0",
        "the default milestone threshold moves",
    ),
    HandMutant(
        "ladder",
        "mine/ladder.py",
        "mega_pct: float = 20.0",
        "mega_pct: float = 25.0",
        "the default mega threshold moves",
    ),
    HandMutant(
        "ladder",
        "mine/ladder.py",
        "rebaseline_factor: float = 5.0",
        "rebaseline_factor: float = 4.0",
        "the default re-baseline factor moves",
    ),
    HandMutant(
        "ladder",
        "mine/ladder.py",
        "REFERENCE_MOVE = 1.25",
        "REFERENCE_MOVE = 1.5",
        "the reference must move further to count as a re-baseline",
    ),
    HandMutant(
        "gitlog",
        "ingest/gitlog.py",
        "parent=parents.split()[0] if",
        "parent=parents.split()[-1] if",
        "a merge commit's parent is its last parent, not its first",
    ),
    HandMutant(
        "memory",
        "ingest/memory.py",
        'if carried and carried != f"v{n}":',
        "if carried:",
        "a record whose carried_from_version names itself loses its own number",
    ),
    HandMutant(
        "memory",
        "ingest/memory.py",
        'carried_from=carried if carried != f"v{n}" else None',
        "carried_from=carried",
        "a self-reference is reported as carried from itself",
    ),
    HandMutant(
        "memory",
        "ingest/memory.py",
        r'VERSION_FILE_RE = re.compile(r"^v(\d{1,9})\.json$")',
        r'VERSION_FILE_RE = re.compile(r"^v(\d+)\.json$")',
        "a version file name of any length is a version",
    ),
    HandMutant(
        "anonymize",
        "scrub/finders.py",
        r'EMAIL_DOMAIN = re.compile(r"@[\w-]+(?:',
        r'EMAIL_DOMAIN = re.compile(r"@\w+(?:',
        "an e-mail domain's first label cannot hold a hyphen",
    ),
    HandMutant(
        "anonymize",
        "scrub/finders.py",
        r'(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")',
        r'(?:\.\w+)*\.[A-Za-z]{2,}\b")',
        "an e-mail subdomain cannot hold a hyphen",
    ),
    HandMutant(
        "tracegates.numbers",
        "gates/trace/numbers.py",
        r'PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per\s*cent\b|pct\b)"',
        r'PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|pct\b)"',
        "`18 per cent` is no percentage",
    ),
    HandMutant(
        "tracegates.numbers",
        "gates/trace/numbers.py",
        r"[\u00a0\u2007\u2008\u2009\u202f](?=\d)",
        r"[\u00a0\u2007\u2008\u202f](?=\d)",
        "a thin space splits `4 096` into 4 and 96",
    ),
    HandMutant(
        "grammar",
        "ingest/grammar.py",
        r'NUM = r"(\d{1,9})(?!\d)"',
        r'NUM = r"(\d+)"',
        "a version number of any length is a version",
    ),
    HandMutant(
        "grammar",
        "ingest/grammar.py",
        r"|\b(?:blocked|unavailable)[ \t]*$",
        r"|(?:blocked|unavailable)[ \t]*$",
        "a closing `blocked` status matches inside a word (`... was unblocked`)",
    ),
    # the 11 survivors issue #27 named, each pinned by a test named after its rule
    HandMutant(
        "admit",
        "admit/proposals.py",
        'along = [h for h in holders if mine != "unknown" and h[1] == mine]',
        "along = [h for h in holders if h[1] == mine]",
        "two unknown directions are proposed as a confirmation, not for review",
    ),
    HandMutant(
        "admit",
        "admit/commits.py",
        """    if record["id"] == target:
        raise Refused([f"{target!r} cannot confirm itself"])""",
        """    if False:
        raise Refused([f"{target!r} cannot confirm itself"])""",
        "a record confirms itself",
    ),
    HandMutant(
        "admit",
        "admit/commits.py",
        "    if rid in txn.index.entries:",
        "    if False:",
        "insert takes an id the store already holds",
    ),
    HandMutant(
        "secret",
        "secret.py",
        'h.update(len(part).to_bytes(8, "little") + part)',
        "h.update(part)",
        "the MAC has no length prefix: mac(k, b'ab', b'c') == mac(k, b'a', b'bc')",
    ),
    HandMutant(
        "summary",
        "run/summary.py",
        "    if summary.failed_traces or summary.failed_records:\n        return 1",
        "    if summary.failed_traces:\n        return 1",
        "a failing record does not fail a strict run",
    ),
    HandMutant(
        "summary",
        "run/summary.py",
        "return sum(t.failed for t in self.traces)",
        "return len([t for t in self.traces if t.failed])",
        "the summary counts traces with failing records, not failing records",
    ),
    HandMutant(
        "run",
        "run/pertrace.py",
        'failed = None if stage == "ingest" else upstream_failure(args.meta)',
        "failed = upstream_failure(args.meta)",
        "a re-run ingest believes its own old failure placeholder",
    ),
    HandMutant(
        "tracegates.pool",
        "gates/trace/pool.py",
        "            and 1 <= d <= 12\n            and comparable(v)",
        "            and 0 <= d <= 12\n            and comparable(v)",
        "a gain rounded to a whole number passes as the packet's improvement",
    ),
    HandMutant(
        "tracegates.pool",
        "gates/trace/pool.py",
        "exact.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_EVEN) == v",
        "exact.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP) == v",
        "a gain is rounded half-up from the exact improvement",
    ),
    HandMutant(
        "gitdir",
        "ingest/gitdir.py",
        'BORROWING_FILES = ("alternates", "http-alternates")',
        'BORROWING_FILES = ("alternates",)',
        "objects/info/http-alternates is not refused",
    ),
    HandMutant(
        "folding",
        "scrub/folding.py",
        " оo ",
        " ",
        "the Cyrillic о no longer folds to o (a denylisted host spelt with it gets through)",
    ),
]


def staged_copy(dest: Path, source: Path) -> Path:
    """The tracked files of the checkout `source` (as in its work tree: uncommitted tests count) under
    dest/repo, the package moved to src/optrace (its schemas link replaced by a copy of the schemas)."""
    repo = dest / "repo"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = source / rel
        if src.is_file() and not src.is_symlink():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    package = repo / STAGED_PACKAGE
    if not package.is_dir():  # an older checkout (before #27's layout) already has it there
        package.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(repo / PACKAGE, package)
        if (source / "schemas").is_dir():
            shutil.copytree(source / "schemas", package / "schemas", dirs_exist_ok=True)
        (repo / PACKAGE).symlink_to(os.path.relpath(package, (repo / PACKAGE).parent))
    shared = next((b / "shared" for b in (source.parent, ROOT.parent) if (b / "shared").is_dir()), None)
    if shared is not None:
        # the tests find ../shared beside their root: dest/repo (hand-made runs), dest/repo/mutants (mutmut)
        for link in (dest / "shared", repo / "shared"):
            link.symlink_to(shared.resolve())
    return repo


def present(repo: Path, tests: tuple[str, ...]) -> list[str]:
    """The test files of a target that the staged checkout has (an older one may lack the newer ones)."""
    return [t for t in tests if (repo / t).is_file()]


def mutmut_config(target: Target, tests: list[str], basetemp: Path) -> str:
    def toml_list(xs):
        return "[" + ", ".join(json.dumps(x) for x in xs) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {toml_list([f'{STAGED_PACKAGE}/{f}' for f in target.files])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        # a private basetemp: the default one is shared by every pytest on the machine and its cleanup
        # of old runs takes seconds per start
        f"pytest_add_cli_args = {toml_list(FAST + ['--basetemp', str(basetemp)])}\n"
        f"also_copy = {toml_list(ALSO_COPY)}\n"
    )


def run_mutmut(name: str, target: Target, source: Path, work: Path, out: Path, children: int) -> dict:
    repo = staged_copy(work / name, source)
    tests = present(repo, target.tests)
    files = [f for f in target.files if (repo / STAGED_PACKAGE / f).is_file()]  # an older checkout may lack some
    target = Target(tuple(files), target.tests)
    with (repo / "pyproject.toml").open("a") as f:
        f.write(mutmut_config(target, tests, work / name / "basetemp"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    start = time.monotonic()
    run = subprocess.run(
        ["nice", "-n", "19", sys.executable, "-m", "mutmut", "run", "--max-children", str(children)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    listing = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=repo, env=env, capture_output=True, text=True
    ).stdout
    status: dict[str, str] = {}
    for line in listing.splitlines():
        if m := re.match(r"^\s*(\S+): (.+)$", line):
            status[m.group(1)] = m.group(2).strip()
    if not status:
        raise SystemExit(f"mutation: mutmut found no mutants for {name}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    survivors = sorted(m for m, s in status.items() if s in ("survived", "no tests"))
    with (out / f"{name}.survivors.txt").open("w") as f:
        for mutant in survivors:
            shown = subprocess.run(
                [sys.executable, "-m", "mutmut", "show", mutant], cwd=repo, env=env, capture_output=True, text=True
            ).stdout
            f.write(f"## {mutant} ({status[mutant]})\n{shown}\n")
    detected = counts.get("killed", 0) + counts.get("timeout", 0)
    total = sum(counts.values()) - counts.get("skipped", 0)
    return {
        "mutants": total,
        "killed": detected,
        "timeout": counts.get("timeout", 0),
        "survived": counts.get("survived", 0),
        "no_tests": counts.get("no tests", 0),
        "other": {k: v for k, v in counts.items() if k not in ("killed", "timeout", "survived", "no tests")},
        "score": round(detected / total, 3) if total else None,
        "seconds": round(seconds, 1),
        "tests": tests,
    }


def run_hand_made(name: str, target: Target, source: Path, work: Path) -> list[dict]:
    """Each hand-made mutant applied to a fresh staged package, the module's fast tests run against it."""
    results: list[dict] = []
    mutants = [h for h in HAND_MADE if h.module == name]
    if not mutants:
        return results
    repo = staged_copy(work / f"{name}-hand", source)
    package = repo / STAGED_PACKAGE
    pristine = {f: (package / f).read_text() for f in target.files if (package / f).is_file()}
    for mutant in mutants:
        text = pristine[mutant.file]
        if text.count(mutant.old) != 1:
            raise SystemExit(
                f"mutation: hand-made mutant {mutant.what!r}: {mutant.old!r} occurs "
                f"{text.count(mutant.old)} times in {mutant.file} (update HAND_MADE)"
            )
        (package / mutant.file).write_text(text.replace(mutant.old, mutant.new))
        env = {**os.environ, "PYTHONPATH": str(package.parent)}  # before the editable install's path
        res = subprocess.run(
            [
                "nice",
                "-n",
                "19",
                sys.executable,
                "-m",
                "pytest",
                *FAST,
                "--basetemp",
                str(work / f"{name}-hand-bt"),
                *present(repo, target.tests),
            ],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        (package / mutant.file).write_text(text)
        results.append(
            {"what": mutant.what, "file": mutant.file, "killed": res.returncode == 1, "returncode": res.returncode}
        )
        if res.returncode not in (0, 1):
            raise SystemExit(f"mutation: the tests could not run against {mutant.what!r}:\n{res.stdout[-2000:]}")
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--module", action="append", choices=sorted(TARGETS), help="default: all")
    p.add_argument("--hand-only", action="store_true", help="only the hand-made mutants")
    p.add_argument("--children", type=int, default=2, help="parallel mutmut workers (default 2)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "mutation")
    p.add_argument("--repo", type=Path, default=ROOT, help="the checkout to mutate (default: this one)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {}
    with tempfile.TemporaryDirectory(prefix="optrace-mutation-") as tmp:
        for name in args.module or list(TARGETS):
            target = TARGETS[name]
            source = args.repo.resolve()
            row = {} if args.hand_only else run_mutmut(name, target, source, Path(tmp), args.out, args.children)
            hand = run_hand_made(name, target, source, Path(tmp))
            row["hand_made"] = {
                "killed": sum(h["killed"] for h in hand),
                "total": len(hand),
                "survivors": [h["what"] for h in hand if not h["killed"]],
            }
            summary[name] = row
            (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")  # after each module
            mm = (
                f"{row['killed']}/{row['mutants']} killed ({row['score']:.1%}), {row['survived']} survived, "
                f"{row['no_tests']} not reached, {row['timeout']} of the killed by timeout, {row['seconds']} s"
                if "mutants" in row
                else "mutmut not run"
            )
            print(
                f"{name:24s} {mm}; hand-made {row['hand_made']['killed']}/{row['hand_made']['total']} killed",
                flush=True,
            )
            for what in row["hand_made"]["survivors"]:
                print(f"{'':24s} hand-made survivor: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
