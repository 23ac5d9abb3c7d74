"""A trace's first-parent history as commits: `git log -z --raw --no-abbrev` output parsed in one pass.

One `git log --first-parent --raw` gives every commit with the files it changed and their new blob ids,
so "did kernel.py change" and "which kernel blob is at this commit" need no process per commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KERNEL_FILE = "kernel.py"
LOG_FORMAT = "%x1e%H%x1f%P%x1f%aI%x1f%s%x1f%b%x1f"
LOG_ARGS = (
    "--first-parent",
    "--no-renames",
    "--raw",
    "--no-abbrev",
    "--no-show-signature",
    "--no-ext-diff",
    "--no-textconv",
    "--no-mailmap",
    "-z",
    f"--format={LOG_FORMAT}",
)
REGULAR_MODES = ("100644", "100755")  # a symlink (120000) or gitlink (160000) kernel.py is not source


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # A, M, D, T (renames are disabled)
    blob: str  # new blob id; all zeros for a deletion
    mode: str = "100644"  # new mode; 120000 symlink, 160000 gitlink


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str | None  # first parent
    date: str
    subject: str
    body: str
    changes: tuple[FileChange, ...] = field(default=())
    kernel_blob: str | None = (
        None  # kernel.py blob at this commit (carried along first parents); None if not a regular file
    )
    kernel_mode: str | None = None  # kernel.py's mode at this commit

    @property
    def kernel_changed(self) -> bool:
        return any(c.path == KERNEL_FILE for c in self.changes)

    def added(self, path_prefix: str) -> list[str]:
        return [c.path for c in self.changes if c.status == "A" and c.path.startswith(path_prefix)]


def parse_log(raw: bytes, newest_first: bool = True) -> list[Commit]:
    """Parse `git log` output made with LOG_ARGS; returns oldest first."""
    commits: list[Commit] = []
    kernel_blob: str | None = None
    kernel_mode: str | None = None
    chunks = raw.split(b"\x1e")[1:]
    if not newest_first:
        chunks.reverse()
    while chunks:  # popped, so each commit's text is freed as soon as it is parsed
        chunk = chunks.pop()
        head, _, raw_part = chunk.rpartition(b"\x1f")
        sha, parents, date, subject, body = head.decode("utf-8", errors="replace").split("\x1f", 4)
        changes = _parse_raw(raw_part)
        for ch in changes:
            if ch.path == KERNEL_FILE:
                kernel_mode = None if ch.status == "D" else ch.mode
                kernel_blob = ch.blob if kernel_mode in REGULAR_MODES else None
        commits.append(
            Commit(
                sha=sha,
                parent=parents.split()[0] if parents.strip() else None,
                date=date,
                subject=subject.strip(),
                body=body.strip(),
                changes=tuple(changes),
                kernel_blob=kernel_blob,
                kernel_mode=kernel_mode,
            )
        )
    return commits


def _parse_raw(part: bytes) -> list[FileChange]:
    # `:<mode> <mode> <blob> <blob> <status>\0<path>\0` repeated, after a "\0\n" separator
    fields = [f for f in part.split(b"\x00") if f.strip(b"\n")]
    out = []
    for meta, path in zip(fields[0::2], fields[1::2]):
        meta_s = meta.decode("ascii", errors="replace").strip()
        bits = meta_s.split()
        if len(bits) < 5 or not meta_s.startswith(":"):
            continue
        out.append(FileChange(path.decode("utf-8", errors="replace"), bits[4][0], bits[3], bits[1]))
    return out
