"""Where the private denylist comes from: the file a variable names (never a committed list)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from optrace.errors import InputError

DENYLIST_ENV = "ATREX_WIKI_DENYLIST"
# The value by which a user states there is no denylist (a run without one says so otherwise).
STATED_NONE = "none"


def denylist_notice(environ: Mapping[str, str] = os.environ, variable: str = DENYLIST_ENV) -> str | None:
    """The one line a run without a denylist prints first, or None (a file named, or none stated)."""
    if environ.get(variable or DENYLIST_ENV):
        return None
    name = variable or DENYLIST_ENV
    return (
        f"warning: no denylist: ${name} is unset, so no private term is scrubbed from packets, records or "
        f"READMEs; set it to your denylist file, or to {STATED_NONE!r} to state there is none"
    )


def add_denylist_argument(parser: argparse.ArgumentParser) -> None:
    """`--denylist-env`, the same option with the same default in every stage that scrubs or checks."""
    parser.add_argument("--denylist-env", default=DENYLIST_ENV, help="variable naming the private denylist file")


def read_denylist(environ: Mapping[str, str] = os.environ, variable: str = DENYLIST_ENV) -> tuple[str, ...]:
    """Terms from the file named by $variable (never a committed list); () when unset."""
    path = environ.get(variable or DENYLIST_ENV)
    if not path or path == STATED_NONE:
        return ()
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise InputError(path, f"denylist from ${variable or DENYLIST_ENV} cannot be read ({exc.strerror})") from None
    return tuple(t for t in (line.strip() for line in lines) if t and not t.startswith("#"))
