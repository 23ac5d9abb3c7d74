"""Gate `ids`: each id is well-formed and unique, and names its file.

The union of the store's rule (unique, file = <id>.json, at least 5 dot-segments) and what admission
needs to never write a bad file: the id's character set, no empty segment, and a length that still
fits a file name.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import PurePosixPath

from optrace.gates.store.model import Gate, GateContext, RecordView
from optrace.gates.store.store import Store

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MIN_SEGMENTS = 5
MAX_ID_BYTES = 250  # "<id>.json" must fit the usual 255-byte file-name limit


def check(view: RecordView, ctx: GateContext) -> list[str]:
    rid, rel = view.record.get("id"), view.relpath
    if not isinstance(rid, str) or not rid:
        return [f"{rel}: id: missing or not a string"]
    out = []
    if PurePosixPath(rel).name != f"{rid}.json":
        out.append(f"{rel}: id: file is not named <id>.json for id {rid!r}")
    if not ID_PATTERN.match(rid):
        out.append(f"{rel}: id: {rid!r} has characters outside [a-z0-9._-] or starts with one of ._-")
    segments = rid.split(".")
    if len(segments) < MIN_SEGMENTS:
        out.append(f"{rel}: id: {rid!r} has {len(segments)} dot-separated segments, at least {MIN_SEGMENTS} required")
    if "" in segments:
        out.append(f"{rel}: id: {rid!r} has an empty segment")
    if len(rid.encode()) > MAX_ID_BYTES:
        out.append(f"{rel}: id: {len(rid.encode())} bytes long, at most {MAX_ID_BYTES}")
    return out


def check_store(store: Store, views: list[RecordView]) -> list[str]:
    if not store.files:
        return ["records/: no record files"]
    paths = defaultdict(list)
    for view in views:
        rid = view.record.get("id")
        if isinstance(rid, str):
            paths[rid].append(view.relpath)
    return [
        f"{rel}: id: duplicate id {rid!r} (also in {', '.join(p for p in rels if p != rel)})"
        for rid, rels in paths.items()
        if len(rels) > 1
        for rel in rels
    ]


GATE = Gate("ids", "ids unique, at least 5 dot-segments, file named <id>.json", check=check, check_store=check_store)
