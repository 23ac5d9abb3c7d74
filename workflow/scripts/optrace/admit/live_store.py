"""A live store opened for admission: one writer at a time, and a crash never leaves it invalid.

    with GateStore(root).transaction() as txn:   # flock on <root>/.gate.lock, then recovery
        txn.index.entries / txn.index.path_of(id)
        txn.begin("insert", id, relpath)         # journal the step before anything else
        txn.write_record(relpath, text)          # temp file + rename
        txn.stage_entry(entry)                   # in memory
    # leaving the block commits: one index write (temp file + rename) for every staged step

Commit protocol. Each step is journaled in `<root>/.gate-intent.json` (the list of pending steps:
op, id, record path) before its record file is written; the index write is the commit point, and the
journal goes after it. An insert whose id is not in the index never happened. Whoever takes the lock
next finishes or undoes what a killed writer left: an insert absent from the index is removed, a
confirm (whose record file is the new truth) has its index entry re-derived from the file, and the
temp files of the journal, the records, the index and conflicts are deleted. A body that raises has
its staged steps undone the same way at once. So after SIGKILL at any point, the next transaction
(or `optrace gate recover`) leaves a store `optrace check-store` passes.

Speed. The index keeps one line of compact JSON per entry and caches every entry's text, so a commit
serialises only the entries it changed; a long-lived process (commit-all) reuses the cache until
another process replaces the file (inode, size and mtime change) and commits a group of records
with one index write. The shipped indent=1 index reads the same; the first write turns it into one
line per entry.

Durability. Files are replaced by rename, which is atomic against a killed process; there is no
fsync (1000 inserts would each wait for the disk), so a power loss may lose the last commits but, on
a journalling file system that orders data before the rename, not tear a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from optrace.errors import InputError
from optrace.gates.store.index import index_entries
from optrace.gates.store.store import INDEX_RELPATH, MAX_INDEX_BYTES, read_json_file
from optrace.jsonio import write_text_atomic

LOCK_NAME = ".gate.lock"
INTENT_NAME = ".gate-intent.json"
CONFLICTS_DIR = "conflicts"
# Test hook: with this variable set to MARKER[:N], the process creates the file MARKER once it has
# written its N-th record file (default 1) and then sleeps before the index is written, so a test
# can SIGKILL it inside the crash window.
PAUSE_ENV = "OPTRACE_GATE_TEST_PAUSE_AFTER_RECORD"
PAUSE_SECONDS = 120
_written = [0]  # record files this process wrote (for the hook)


def entry_line(entry: dict) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


@dataclass
class IndexState:
    """records/index.json in memory: header fields, entries by id, and each entry's serialised line."""

    header: dict
    entries: dict[str, dict]
    lines: dict[str, str] = field(default_factory=dict)  # id -> serialised entry, filled lazily
    stamp: tuple = ()
    _episodes: dict | None = None  # episode_key -> ids

    def path_of(self, rid: str) -> str | None:
        path = self.entries.get(rid, {}).get("path")
        return path if isinstance(path, str) else None

    def put(self, entry: dict) -> None:
        old = self.entries.get(entry["id"])
        self.entries[entry["id"]] = entry
        self.lines[entry["id"]] = entry_line(entry)
        if self._episodes is not None:
            if old is not None and old.get("episode_key") in self._episodes:
                self._episodes[old["episode_key"]].discard(entry["id"])
            self._episodes.setdefault(entry.get("episode_key"), set()).add(entry["id"])

    def holders(self, episode_key: str) -> list[str]:
        """Ids of the entries with this episode_key (an index by episode, built on first use)."""
        if self._episodes is None:
            self._episodes = {}
            for rid, e in self.entries.items():
                self._episodes.setdefault(e.get("episode_key"), set()).add(rid)
        return sorted(self._episodes.get(episode_key, ()))

    def text(self) -> str:
        header = {k: v for k, v in self.header.items() if k not in ("count", "records")}
        header["count"] = len(self.entries)
        head = json.dumps(header, ensure_ascii=False, indent=1)[:-2]  # drop the closing "\n}"
        lines = self.lines
        for rid in self.entries.keys() - lines.keys():  # serialised once, on the first write (match never pays)
            lines[rid] = entry_line(self.entries[rid])
        body = ",\n".join(lines[rid] for rid in sorted(self.entries))
        return f'{head},\n "records": [\n{body}\n ]\n}}\n'


def refreshed_entry(entry: dict, record: dict) -> dict:
    """An index entry after its record was rescored: the fields a confirm changes, the rest kept."""
    rank = record.get("worth", {}).get("rank", {})
    gain = record.get("worth", {}).get("gain", {})
    return {**entry, "worth_score": rank.get("score"), "tier": rank.get("tier"), "gain_pct": gain.get("pct")}


def file_stamp(path: Path) -> tuple:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_index(path: Path) -> IndexState:
    data, error = read_json_file(str(path), MAX_INDEX_BYTES)
    if error is not None:
        raise InputError(path, f"store index {error}")
    entries, problems = index_entries(data)
    if problems and not entries and not (isinstance(data, dict) and data.get("records") == []):
        raise InputError(path, "; ".join(problems))
    by_id = {}
    for i, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str)):
            raise InputError(path, f"entry #{i} is not an object with a string id; run optrace check-store")
        by_id[entry["id"]] = entry
    return IndexState({k: v for k, v in data.items() if k != "records"}, by_id)


class GateStore:
    """A store root. Reading (`index()`) takes no lock: the index is only ever replaced whole."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        if not (self.root / "records").is_dir():
            raise InputError(self.root, "not a store: it has no records/ directory")
        self.index_path = self.root / INDEX_RELPATH
        self._index: IndexState | None = None

    def index(self) -> IndexState:
        """The current index, re-read only when another writer replaced the file."""
        stamp = file_stamp(self.index_path)
        if not stamp:
            raise InputError(self.index_path, "store index missing")
        if self._index is None or self._index.stamp != stamp:
            self._index = read_index(self.index_path)
            self._index.stamp = stamp
        return self._index

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Hold the lock, recover, run the body, then commit what it staged (one index write).

        If the body raises, what it staged is undone at once (the store stays valid) and the error
        propagates; a refusal should therefore be handled inside the body, per record."""
        try:
            fd = os.open(self.root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise InputError(self.root / LOCK_NAME, f"cannot take the store lock ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            txn = Transaction(self)
            txn.done = txn.recover()
            try:
                yield txn
            except BaseException:
                if txn.pending:
                    self._index = None  # the cache holds staged entries the file does not
                    txn.recover()
                raise
            txn.commit()
        finally:
            os.close(fd)  # closing releases the lock; the lock file stays (deleting it would race)


def _remove_temps(directory: Path, prefix: str) -> list[str]:
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        if name.startswith(prefix):
            (directory / name).unlink(missing_ok=True)
            removed.append(name)
    return removed


class Transaction:
    def __init__(self, store: GateStore):
        self.store = store
        self.root = store.root
        self.done: list[str] = []  # what recovery did when the transaction began
        self.pending: list[dict] = []  # journaled steps not yet in the index

    @property
    def index(self) -> IndexState:
        return self.store.index()

    def read_intent(self) -> list[dict]:
        path = self.root / INTENT_NAME
        if not path.exists():
            return []
        data, error = read_json_file(str(path), 1 << 24)
        steps = data.get("pending") if isinstance(data, dict) else None
        if not (
            isinstance(steps, list)
            and all(
                isinstance(st, dict) and isinstance(st.get("path"), str) and st.get("op") in ("insert", "confirm")
                for st in steps
            )
        ):
            raise InputError(
                path,
                f"unreadable commit intent ({error or 'wrong shape'}); inspect it, fix the store by hand and delete it",
            )
        return steps

    def recover(self) -> list[str]:
        """Finish or undo what a killed writer left; returns what was done (empty: nothing to do)."""
        done = [
            f"removed temp file {n}"
            for n in _remove_temps(self.root, f"{INTENT_NAME}.")
            + _remove_temps(self.root / "records", ".index.json.")
            + _remove_temps(self.root / CONFLICTS_DIR, ".")
        ]
        steps = self.read_intent()
        confirmed = {}
        for step in steps:
            relpath, rid = step["path"], step.get("id")
            target = self.root / relpath
            done += [f"removed temp file {n}" for n in _remove_temps(target.parent, f".{target.name}.")]
            if step["op"] == "insert" and rid not in self.index.entries:
                target.unlink(missing_ok=True)
                done.append(f"undid the unfinished insert of {relpath}")
            elif step["op"] == "confirm" and rid in self.index.entries:
                data, error = read_json_file(str(target), 1 << 26)
                if error is None and isinstance(data, dict) and data.get("id") == rid:
                    confirmed[rid] = refreshed_entry(self.index.entries[rid], data)
                    done.append(f"finished the confirm of {relpath} (index entry re-derived from the record)")
        for entry in confirmed.values():
            self.index.put(entry)
        if confirmed:
            self.write_index()
        (self.root / INTENT_NAME).unlink(missing_ok=True)
        self.pending = []
        return done

    def begin(self, op: str, rid: str, relpath: str) -> None:
        """Journal a step before its record file is written (the whole pending list, rewritten atomically)."""
        self.pending.append({"op": op, "id": rid, "path": relpath})
        write_text_atomic(self.root / INTENT_NAME, json.dumps({"pending": self.pending}) + "\n")

    def write_record(self, relpath: str, text: str) -> None:
        write_text_atomic(self.root / relpath, text)
        hook = os.environ.get(PAUSE_ENV)
        if hook:
            marker, _, nth = hook.partition(":")
            _written[0] += 1
            if _written[0] == int(nth or 1):
                Path(marker).write_text(relpath + "\n")
                time.sleep(PAUSE_SECONDS)

    def stage_entry(self, entry: dict) -> None:
        """Add or replace one entry in memory; commit() writes them all."""
        self.index.put(entry)

    def write_index(self) -> None:
        state = self.index
        try:
            write_text_atomic(self.store.index_path, state.text())
        except BaseException:
            self.store._index = None  # the cache may hold entries the file does not: read the file again
            raise
        state.stamp = file_stamp(self.store.index_path)

    def commit(self) -> None:
        """The commit point: one index write for every staged step, then the intent goes."""
        if not self.pending:
            return
        self.write_index()
        (self.root / INTENT_NAME).unlink(missing_ok=True)
        self.pending = []

    def write_exclusive(self, directory: Path, stem: str, text: str) -> Path:
        """A new file `<stem>.json` (or `<stem>-<n>.json`) that no earlier call took: link() never replaces."""
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{stem}.{os.getpid()}.tmp"
        tmp.write_text(text, encoding="utf-8")
        try:
            for n in range(10_000):
                final = directory / (f"{stem}.json" if n == 0 else f"{stem}-{n}.json")
                try:
                    os.link(tmp, final)
                    return final
                except FileExistsError:
                    continue
            raise InputError(directory, f"no free file name for {stem}")
        finally:
            tmp.unlink(missing_ok=True)
