"""Commit messages in the encoding they were written in.

`git log` re-encodes a message whose commit declares its encoding (an `encoding` header) to UTF-8, and
passes any other message through as bytes: a Latin-1 body from an editor in a European locale then
decodes to "r\ufffdsum\ufffd". Such a message is read again from its commit object and decoded by its
declared encoding, else by the encoding its bytes show (UTF-8, Windows-1252, Latin-1, in that order,
the first that decodes to printable text); a message none of them decodes is left out, with a warning.
"""

from __future__ import annotations

import codecs
import unicodedata
from dataclasses import dataclass

DETECTED = ("utf-8", "cp1252", "latin-1")
REPLACEMENT = "\ufffd"
MAX_MESSAGE_BYTES = 1 << 20  # a commit object's message is text a person wrote; larger is not one


@dataclass(frozen=True)
class Message:
    subject: str
    body: str
    encoding: str | None  # what decoded it; None: nothing did (the text is left out)


def printable(text: str) -> bool:
    """Text a person wrote: no control characters but line ends and tabs (C1 controls are what a
    Latin-1 reading of UTF-8 or of binary bytes yields)."""
    return all(c in "\n\r\t" or unicodedata.category(c) != "Cc" for c in text)


def decode(raw: bytes, declared: str | None = None) -> tuple[str, str] | None:
    """(text, encoding) of `raw` by its declared encoding, else the first of DETECTED that gives
    printable text; None when none does."""
    candidates = ([declared] if declared else []) + [e for e in DETECTED if e != declared]
    for name in candidates:
        try:
            codecs.lookup(name)
            text = raw.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
        if printable(text):
            return text, codecs.lookup(name).name
    return None


def split_commit(raw: bytes) -> tuple[bytes, str | None]:
    """(message bytes, declared encoding) of a raw commit object: headers up to the first blank line,
    then the message."""
    head, sep, message = raw.partition(b"\n\n")
    if not sep:
        return b"", None
    declared = None
    for line in head.split(b"\n"):
        if line.startswith(b"encoding "):
            declared = line[len(b"encoding ") :].decode("ascii", "replace").strip() or None
    return message, declared


def commit_message(raw: bytes) -> Message:
    """Subject and body as `git log`'s %s and %b give them (the subject is the first paragraph, its lines
    joined by spaces), decoded; an undecodable message is left out."""
    message, declared = split_commit(raw)
    found = decode(message[:MAX_MESSAGE_BYTES], declared)
    if found is None:
        return Message("", "", None)
    text, encoding = found
    first, _, rest = text.replace("\r\n", "\n").strip("\n").partition("\n\n")
    return Message(" ".join(line.strip() for line in first.split("\n")).strip(), rest.strip(), encoding)


def garbled(text: str) -> bool:
    """True when `text` holds what a lossy UTF-8 reading leaves where bytes did not decode."""
    return REPLACEMENT in text
