"""The staging store as one file and as a tree: stage writes every scored copy into `staging/store.json`
(one object in storage, a declared output), and `optrace store-tree` (rule `store_tree`, run where the
store is read) writes it out as the store's layout, `records/index.json` and `records/<type>/.../<id>.json`,
which `check-store` and `gate match` read."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from optrace.errors import InputError
from optrace.gates.store.store import SAFE_SEGMENT
from optrace.jsonio import dumps_compact, open_regular, parse_untrusted, read_bytes, write_text_atomic

STORE_FORMAT = 1
MAX_STORE_BYTES = 1 << 31  # ~3000 copies of a few KB each per 100 traces; the stage bounds each copy
INDEX = "records/index.json"


def write_store_file(path: Path, files: dict[str, str]) -> None:
    write_text_atomic(path, dumps_compact({"format": STORE_FORMAT, "files": files}))


def is_copy_path(rel: str) -> bool:
    """records/<type>/<vendor>/<arch>/<dsl>/<family>/<id>.json, every part a safe name (what
    gates.store.store.store_path gives)."""
    parts = rel.split("/")
    return (
        len(parts) == 7
        and parts[0] == "records"
        and parts[-1].endswith(".json")
        and all(SAFE_SEGMENT.match(p) for p in parts[1:])
    )


def read_store_file(path: Path) -> dict[str, str]:
    """{store path: copy text} of a store file, or one InputError naming it."""
    with open_regular(path, MAX_STORE_BYTES) as fh:
        doc, error = parse_untrusted(fh.read())
    if error is not None:
        raise InputError(path, f"store file: {error}")
    files = doc.get("files") if isinstance(doc, dict) and doc.get("format") == STORE_FORMAT else None
    if not isinstance(files, dict):
        raise InputError(path, f"is not a store file (format {STORE_FORMAT} with a `files` object)")
    for rel, text in files.items():
        if not is_copy_path(rel):
            raise InputError(path, f"store file names {rel!r}, not a records/<type>/.../<id>.json path")
        if not isinstance(text, str):
            raise InputError(path, f"store file: {rel} is not a text")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(path, f"store file: {rel} holds text that is not UTF-8") from None
    return files


def write_tree(records: Path, index: str, files: dict[str, str]) -> None:
    """records/ as the store holds it: exactly the index and the copies. Whatever else is there (a stale
    copy, a link, a FIFO: the results tree is one anyone can edit) is removed first."""
    if records.is_symlink() or (records.exists() and not records.is_dir()):
        records.unlink()
    elif records.is_dir():
        shutil.rmtree(records)
    for rel, text in files.items():
        write_text_atomic(records.parent / rel, text)
    write_text_atomic(records.parent / INDEX, index)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace store-tree", description=__doc__)
    ap.add_argument("--store", required=True, type=Path, help="staging/store.json, written by optrace stage")
    ap.add_argument("--index", required=True, type=Path, help="the index stage wrote beside it")
    ap.add_argument("--out", required=True, type=Path, help="the records/ folder to write")
    args = ap.parse_args(argv)
    files = read_store_file(args.store)
    index, error = read_bytes(args.index, MAX_STORE_BYTES)
    if index is None:
        raise InputError(args.index, error or "cannot be read")
    if args.out.name != "records":
        raise InputError(args.out, "is not a records/ folder (the store's layout starts there)")
    write_tree(args.out, index.decode("utf-8", "replace"), files)
    print(f"store-tree: {len(files)} copies and the index in {os.fspath(args.out)}")
    return 0
