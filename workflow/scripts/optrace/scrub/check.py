"""`optrace scrub-check PATH...`: what would still leak in files already scrubbed.

One `PATH: <leak>` line per leak, exit 0 clean, 1 leaks, 2 usage or an unreadable file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optrace.errors import InputError
from optrace.jsonio import open_regular, read_json, read_jsonl
from optrace.scrub.prose_spans import prose_spans, shown_language

USAGE = "usage: optrace scrub-check PATH..."

_FILE_LANGUAGES = {".py": "python", ".cu": "c", ".cuh": "c"}  # diffs: whichever the hunks show


def _read_text(path: Path) -> str:
    """The file's text, or the stage's one-line InputError (a FIFO or a device is refused, never waited on)."""
    with open_regular(path) as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None


def json_strings(obj: Any) -> list[str]:
    """Every string in a JSON document in document order, keys included (a table keyed by a uuid
    leaks it); iterative, since packets are walked by the thousand and records may nest deep."""
    out, stack = [], [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed([part for pair in value.items() for part in pair]))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return out


def prose_of_file(path: Path) -> Iterator[str]:
    """The parts of a file an agent reads as prose: JSON strings, code comments and strings, or all text."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        yield from json_strings(read_json(path))
    elif suffix == ".jsonl":
        yield from json_strings(read_jsonl(path))
    elif suffix in _FILE_LANGUAGES or suffix in (".diff", ".patch"):
        text = _read_text(path)
        yield from (text[a:b] for a, b in prose_spans(text, _FILE_LANGUAGES.get(suffix) or shown_language(text)))
    else:
        yield _read_text(path)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE + "\n\n" + __doc__.split("\n\n")[1])
        return 0
    if not argv:
        print(f"error: {USAGE}", file=sys.stderr)
        return 2
    from optrace.scrub.anonymize import Scrubber  # here: anonymize takes json_strings from this module

    scrubber = Scrubber.from_env()
    # Read every file before printing, so an unreadable one ends the run with its error alone.
    report = [
        f"{path}: {leak}" for path in argv for chunk in prose_of_file(Path(path)) for leak in scrubber.leaks(chunk)
    ]
    for line in report:
        print(line)
    return 1 if report else 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
