"""A git bundle's header, read without git: each way a bundle can be unusable gets its own one-line
cause before git unpacks it (optrace.ingest.git_history).

A bundle is `# v2 git bundle` or `# v3 git bundle`, v3 capability lines (`@object-format=`, `@filter=`),
prerequisite lines (`-<oid> ...`), ref lines (`<oid> <refname>`), a blank line, then a pack (`PACK`).
Which ref is the trace is never guessed: HEAD if the bundle lists it, else `main` or `master`, else its
only ref; a bundle of several branches and none of those is refused, naming them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from optrace.errors import InputError
from optrace.ingest.gitdir import MAX_NAMED_REFS, SHA_RE
from optrace.ingest.trace_files import read_small_file

BUNDLE_HEADERS = (b"# v2 git bundle\n", b"# v3 git bundle\n")
MAX_HEADER_BYTES = 64 * 1024 * 1024  # as packed-refs: 50 000 refs are ~3 MB
PACK_SIGNATURE = b"PACK"
KNOWN_CAPABILITIES = {"object-format", "filter"}  # gitformat-bundle(5): git refuses any other
PREFERRED_REFS = ("HEAD", "refs/heads/main", "refs/heads/master")
FIX = "re-create it with `git bundle create <file>.bundle HEAD --branches` in the trace"


@dataclass(frozen=True)
class BundleHeader:
    version: int
    capabilities: dict[str, str]
    prerequisites: list[str]
    refs: dict[str, str]  # refname -> oid, in the bundle's order


def _head_bytes(path: Path) -> tuple[bytes, int]:
    """(the file's first bytes up to and including its header's blank line and 4 more, its size): read
    in growing steps, never more than MAX_HEADER_BYTES, never with a blocking open."""
    want = 64 * 1024
    while True:
        data, problem = read_small_file(path, MAX_HEADER_BYTES, head=want)
        if problem is not None:
            raise InputError(path, f"is {problem}; a trace file must be a git bundle")
        assert data is not None
        size = os.stat(path).st_size
        if data.find(b"\n\n") >= 0 or len(data) < want or want >= MAX_HEADER_BYTES:
            return data, size
        want = min(want * 8, MAX_HEADER_BYTES)


def read_header(path: Path) -> BundleHeader:
    """The bundle's header, or a one-line InputError naming what is wrong with the file."""
    data, size = _head_bytes(path)
    first = data[: len(BUNDLE_HEADERS[0])]
    if first not in BUNDLE_HEADERS and data[: len(first) + 1].replace(b"\r\n", b"\n") in BUNDLE_HEADERS:
        raise InputError(
            path,
            "is a git bundle whose line ends were converted to CR LF (copied as text); copy it again as "
            "binary, or re-create it",
        )
    if first not in BUNDLE_HEADERS:
        raise InputError(
            path, "not a readable git bundle (it does not start with '# v2 git bundle' or '# v3 git bundle')"
        )
    end = data.find(b"\n\n", len(first) - 1)
    version = 3 if first == BUNDLE_HEADERS[1] else 2
    # the complete lines are judged first: garbage in them is garbage, not a truncation
    body = data[len(first) : end] if end >= 0 else data[len(first) : data.rfind(b"\n") + 1].rstrip(b"\n")
    caps, prereqs, refs = _header_lines(path, version, body)
    if end < 0:
        if len(data) >= MAX_HEADER_BYTES:
            raise InputError(path, f"is a git bundle whose header is over {MAX_HEADER_BYTES} bytes; not read")
        raise InputError(path, "is a truncated git bundle: its header ends before the blank line that closes it")
    if data[end + 2 : end + 2 + len(PACK_SIGNATURE)] != PACK_SIGNATURE:
        rest = size - (end + 2)
        what = "nothing" if rest <= 0 else f"{rest} bytes that are not a pack (no `PACK` signature)"
        raise InputError(path, f"is not a readable git bundle: its header is followed by {what}")
    return BundleHeader(version, caps, prereqs, refs)


def _header_lines(path: Path, version: int, body: bytes) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """(capabilities, prerequisites, refs) of the header lines after the signature."""
    caps: dict[str, str] = {}
    prereqs: list[str] = []
    refs: dict[str, str] = {}
    for n, raw in enumerate(body.split(b"\n") if body else [], 2):
        line = raw.decode("utf-8", "replace")
        if version == 3 and line.startswith("@"):
            key, _, value = line[1:].partition("=")
            caps[key] = value
            continue
        oid, _, rest = line.removeprefix("-").partition(" ")
        if not SHA_RE.match(oid) or (not line.startswith("-") and not rest):
            raise InputError(path, f"is not a readable git bundle: header line {n} is neither a ref nor a prerequisite")
        if line.startswith("-"):
            prereqs.append(oid)
        elif refs.setdefault(rest.strip(), oid) != oid:  # which of the two is the trace: not guessed either
            raise InputError(path, f"is a git bundle that lists {rest.strip()} twice, for two commits; {FIX}")
    return caps, prereqs, refs


def check_header(path: Path, header: BundleHeader) -> None:
    """Refuse a bundle optrace cannot mine whole, each with its own cause."""
    fmt = header.capabilities.get("object-format", "sha1")
    if fmt != "sha1":
        raise InputError(
            path,
            f"is a {fmt} git bundle (@object-format={fmt}); optrace reads sha1 repositories "
            "(its outputs hold 40-digit commit ids): convert the trace to sha1, or bundle a sha1 clone",
        )
    unknown = sorted(set(header.capabilities) - KNOWN_CAPABILITIES)
    if unknown:
        raise InputError(path, f"is a git bundle with a capability git does not know (@{unknown[0]}); {FIX}")
    if "filter" in header.capabilities:
        raise InputError(
            path,
            f"is a partial git bundle (@filter={header.capabilities['filter']}): it lacks the files a trace "
            "needs; bundle a full clone",
        )
    if header.prerequisites:
        raise InputError(
            path,
            f"is an incremental git bundle: it needs {len(header.prerequisites)} prerequisite commit(s) it "
            "does not hold; give a full bundle (`git bundle create <file>.bundle --all`)",
        )
    if not header.refs:
        raise InputError(path, "is a git bundle that lists no refs; nothing to mine")


def choose_ref(path: Path, header: BundleHeader) -> str:
    """The commit the trace is: HEAD, main or master if listed, else the only ref; several, refused."""
    for ref in PREFERRED_REFS:
        if ref in header.refs:
            return header.refs[ref]
    if len(header.refs) == 1:
        return next(iter(header.refs.values()))
    names = list(header.refs)
    shown = ", ".join(names[:MAX_NAMED_REFS]) + (
        f" and {len(names) - MAX_NAMED_REFS} more" if len(names) > MAX_NAMED_REFS else ""
    )
    raise InputError(
        path,
        f"is a git bundle of {len(names)} refs ({shown}) and no HEAD, main or master: which one is the trace "
        f"is not guessed; {FIX}",
    )


def bundle_head(path: Path) -> str:
    """The commit a bundle's trace is, from its checked header; a one-line InputError otherwise."""
    header = read_header(path)
    check_header(path, header)
    return choose_ref(path, header)
