"""`optrace bundle`: a trace and its untracked profiles/ and memory/ in one `.bundle` file.

    optrace bundle TRACE --out NAME.bundle

A git bundle carries committed history only, but a trace's profiler captures (and some memory files)
are untracked. This writes HEAD's history as `refs/heads/main` plus one parentless commit on
`refs/optrace/untracked` whose tree holds exactly the untracked regular files under profiles/ and
memory/ (HEAD's tracked files are never copied). Ingest reads that ref beside HEAD's tree. The trace
is read as hostile input: its git runs in the private shadow directory ingest uses, its files through
the same size-capped reader that never follows a symlink out; the objects are written by this module
into the shadow, never into the trace.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import zlib
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.git_history import CARRIED_PREFIXES, UNTRACKED_REF, open_trace
from optrace.ingest.gitcmd import run_git
from optrace.ingest.gitlog import Commit
from optrace.ingest.trace_files import MAX_READ_BYTES, TraceFiles, WorkTreeFiles

CARRIED_DIRS = tuple(p.rstrip("/") for p in CARRIED_PREFIXES)
# A fixed identity and date: the same files give the same bundle commit.
AUTHOR = "optrace bundle <optrace@invalid> 0 +0000"


_NAMED_PATH = re.compile(r"(?<![\w/.-])((?:profiles|memory)/[\w./-]*[\w])")


def missing_carried_files(commits: list[Commit], files: TraceFiles) -> list[str]:
    """Paths under profiles/ or memory/ the history names (in a commit message, or a file a commit
    touched) that the trace does not hold: what a plain `git bundle` leaves behind."""
    named: dict[str, None] = {}
    for c in commits:
        for text in (c.subject, c.body):
            named.update(dict.fromkeys(m.group(1) for m in _NAMED_PATH.finditer(text)))
        named.update(dict.fromkeys(ch.path for ch in c.changes if ch.path.startswith(CARRIED_PREFIXES)))
    held = {f for top in CARRIED_DIRS for f in files.walk(top)}
    dirs = {f.rsplit("/", i)[0] for f in held for i in range(1, f.count("/") + 1)}
    return [p for p in named if p not in held and p.rstrip("/") not in dirs]


def bundle_warning(commits: list[Commit], files: TraceFiles) -> list[str]:
    """One warning for a bundle that lacks files under profiles/ or memory/ its history names."""
    missing = missing_carried_files(commits, files)
    if not missing:
        return []
    return [
        f"the bundle lacks {len(missing)} path(s) under profiles/ or memory/ its history names (first: "
        f"{missing[0]}); a plain git bundle leaves untracked files behind: make it with `optrace bundle`"
    ]


def untracked_files(files: WorkTreeFiles, tracked: set[str]) -> dict[str, bytes]:
    """Untracked regular files under CARRIED_DIRS, path -> bytes (a file over the read cap is skipped)."""
    out: dict[str, bytes] = {}
    for top in CARRIED_DIRS:
        for rel in files.walk(top):
            if rel not in tracked and (data := files.read_bytes(rel, MAX_READ_BYTES)) is not None:
                out[rel] = data
    return out


class ObjectWriter:
    """Loose git objects written into one objects directory."""

    def __init__(self, objects: Path, object_format: str):
        self.objects, self.algo = objects, object_format

    def write(self, kind: str, body: bytes) -> str:
        raw = f"{kind} {len(body)}".encode("ascii") + b"\x00" + body
        oid = hashlib.new(self.algo, raw).hexdigest()
        path = self.objects / oid[:2] / oid[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(zlib.compress(raw))
        return oid

    def tree(self, files: dict[str, bytes]) -> str:
        """The tree of `files` (POSIX paths), subtrees first built recursively."""
        blobs: dict[str, str] = {}
        subdirs: dict[str, dict[str, bytes]] = {}
        for path, data in files.items():
            head, sep, rest = path.partition("/")
            if sep:
                subdirs.setdefault(head, {})[rest] = data
            else:
                blobs[head] = self.write("blob", data)
        entries = [(name, b"100644", oid) for name, oid in blobs.items()]
        entries += [(name, b"40000", self.tree(sub)) for name, sub in subdirs.items()]
        # git orders a tree's entries by name, a directory's name compared as if it ended in "/"
        entries.sort(key=lambda e: e[0].encode("utf-8") + (b"/" if e[1] == b"40000" else b""))
        body = b"".join(
            mode + b" " + name.encode("utf-8") + b"\x00" + bytes.fromhex(oid) for name, mode, oid in entries
        )
        return self.write("tree", body)

    def commit(self, tree: str, message: str) -> str:
        body = f"tree {tree}\nauthor {AUTHOR}\ncommitter {AUTHOR}\n\n{message}\n"
        return self.write("commit", body.encode("utf-8"))


def bundle(trace: Path, out: Path) -> tuple[int, int]:
    """Write the bundle; (untracked files carried, their bytes)."""
    if out.suffix != ".bundle":
        raise InputError(out, "a trace bundle's name must end in .bundle (ingest reads only those)")
    if Path(trace).is_file():
        raise InputError(trace, "is a file already; give the trace's git work tree")
    with open_trace(trace) as opened:
        history = opened.history
        if history.head is None:
            raise InputError(trace, "has no commits to bundle")
        if not isinstance(opened.files, WorkTreeFiles):
            raise InputError(trace, "is not a git work tree")
        carried = untracked_files(opened.files, set(history.head_tree()))
        shadow = history.shadow
        (shadow / "refs" / "heads").mkdir(parents=True, exist_ok=True)
        (shadow / "refs" / "heads" / "main").write_text(history.head + "\n")
        refs = ["refs/heads/main"]
        if carried:
            fmt = "sha256" if len(history.head) == 64 else "sha1"
            writer = ObjectWriter(shadow / "objects", fmt)
            message = f"untracked files of {opened.name} under {', '.join(CARRIED_DIRS)}/ (optrace bundle)"
            commit = writer.commit(writer.tree(carried), message)
            (shadow / "refs" / "optrace").mkdir(parents=True, exist_ok=True)
            (shadow / "refs" / "optrace" / "untracked").write_text(commit + "\n")
            refs.append(UNTRACKED_REF)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        run_git(trace, history.git, "bundle", "create", "--quiet", str(tmp.resolve()), *refs, what="git bundle failed")
        tmp.replace(out)
    return len(carried), sum(len(d) for d in carried.values())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace bundle", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("trace", type=Path, help="the trace's git work tree")
    ap.add_argument("--out", required=True, type=Path, help="the bundle to write (NAME.bundle)")
    args = ap.parse_args(argv)
    n, size = bundle(args.trace, args.out)
    what = (
        f"{n} untracked file(s) under profiles/ and memory/ ({size} bytes) on {UNTRACKED_REF}"
        if n
        else ("no untracked files under profiles/ or memory/")
    )
    print(f"bundle: {args.out}: HEAD's history and {what}")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
