"""Tokens that may spell a term in base64 (standard or URL-safe), base32 or hex, and what they spell."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

# Tokens that may be a term in base64, base32 or hex.
ENCODED_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{6,}={0,2}")
_HEX = frozenset("0123456789abcdefABCDEF")


def may_encode(token: str) -> bool:
    """Base64 of text mixes cases, base32 is upper case and digits, hex is hex: a lower-case word or
    snake_case name is none of them and is not decoded."""
    body = token.rstrip("=")
    return (not body.islower() and not body.isupper()) or body.isupper() or all(c in _HEX for c in body)


def decodings(token: str) -> Iterator[str]:
    """What a token spells in base64 (standard or URL-safe), base32 or hex, when it decodes to text."""
    body = token.rstrip("=")
    attempts = []
    if len(body) % 4 != 1:
        pad = body + "=" * (-len(body) % 4)
        attempts += [lambda: base64.b64decode(pad, validate=True), lambda: base64.urlsafe_b64decode(pad)]
    if body.isupper() or body.isdigit():
        attempts.append(lambda: base64.b32decode(body + "=" * (-len(body) % 8)))
    if len(body) % 2 == 0 and all(c in _HEX for c in body):
        attempts.append(lambda: bytes.fromhex(body))
    for attempt in attempts:
        try:
            raw = attempt()
        except (ValueError, binascii.Error):
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
