"""The packets of one trace in one file, `packets/<slug>.json`: the manifest's fields and, under `files`,
the text of each packet (`<seg_id>.json`) and of its code (`<seg_id>.diff` or `.py`).

One file, not a folder: it travels through object storage as one object. The S3 storage plugin decides
once, before any job ran, whether a key is a folder, so a folder output written by a job that shares no
file system with the controller is reported missing (#30).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from optrace.errors import InputError
from optrace.jsonio import dumps_compact, open_regular, parse_untrusted, write_json, write_text_atomic

FILES = "files"
MAX_FILE_BYTES = 4 * 1024 * 1024  # a packet quotes a diff of up to 60 000 characters and per-shape tables


@dataclass(frozen=True)
class PacketFile:
    path: Path
    manifest: dict  # slug, head_sha, count, packets, skipped (`files` left out)
    files: Mapping[str, str]
    sha256: str  # of the file's bytes, as read

    def where(self, name: str) -> str:
        """How messages name one file of the bundle."""
        return f"{self.path} ({name})"

    def data(self, name: str) -> bytes:
        text = self.files.get(name)
        if not isinstance(text, str):
            raise InputError(self.where(name), "is not in the packets file")
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise InputError(self.where(name), f"{len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit; not read")
        return data

    def unpack(self, folder: Path) -> Path:
        """Write the bundle out as a folder (manifest.json and each file) for a reader that needs paths:
        the agent command is given a packet file."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            write_text_atomic(folder / safe_name(self.path, name), text)
        write_json(folder / "manifest.json", self.manifest)
        return folder


def safe_name(path: Path, name: str) -> str:
    """A file name of the bundle as one plain name (never a path out of the folder it is unpacked in)."""
    if not name or name in (".", "..", "manifest.json") or os.sep in name or "/" in name or "\0" in name:
        raise InputError(path, f"names a file {name!r} that is not a plain packet file name")
    return name


def _utf8(path: Path, text: str, what: str) -> None:
    """JSON escapes can spell lone surrogates, which no UTF-8 file holds: refused where they are read."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(path, f"{what} holds text that is not UTF-8 (a lone surrogate escape)") from None


def _check_names(path: Path, doc: dict, files: dict) -> None:
    """Every name a reader turns into a path is one plain name: the files, the slug, and each manifest
    entry's seg_id and code file (distill opens `<seg_id>.json` in the folder it unpacks)."""
    for name, text in files.items():
        _utf8(path, name, "a file name")
        safe_name(path, name)
        _utf8(path, text, f"file {name!r}")
    if "slug" in doc:
        if not isinstance(doc["slug"], str):
            raise InputError(path, "the slug is not a text")
        _utf8(path, doc["slug"], "the slug")
        safe_name(path, doc["slug"])
    entries = doc.get("packets")
    for entry in entries if isinstance(entries, list) else ():
        for key in ("seg_id", "code_file"):
            value = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(value, str):
                _utf8(path, value, f"a packet's {key}")
                safe_name(path, value)


def read_packet_file(path: Path) -> PacketFile:
    try:
        with open_regular(path) as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})") from None
    doc, error = parse_untrusted(data)
    if error is not None:
        raise InputError(path, f"packets file: {error}")
    files = doc.pop(FILES, None) if isinstance(doc, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise InputError(path, f"packets file has no `{FILES}` object of texts")
    _check_names(path, doc, files)
    return PacketFile(path, doc, files, hashlib.sha256(data).hexdigest())


def judged_inputs(packets: PacketFile, versions: bytes) -> str:
    """A digest of what a trace's verdicts rest on besides the records: its packets file and its versions.
    Validation reports it and stage stages a trace's records only under the same one, so a packet or a
    measurement edited after validation cannot change what is staged (or its score)."""
    h = hashlib.sha256(bytes.fromhex(packets.sha256))
    h.update(hashlib.sha256(versions).digest())
    return h.hexdigest()


def write_packet_file(path: Path, manifest: dict, files: Mapping[str, str]) -> None:
    write_text_atomic(path, dumps_compact({**manifest, FILES: dict(sorted(files.items()))}))
