"""Build trace repositories deterministically (example trace, tests, benchmarks).

One `git fast-import` stream per trace: fixed identities and dates give identical commit shas on every
build, and thousands of versions build in about a second instead of one `git commit` each.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

IDENTITY = "Trace Agent <agent@example.invalid>"
EPOCH = 1767225600  # 2026-01-01T00:00:00Z
STEP_SECONDS = 3600


@dataclass
class CommitSpec:
    subject: str
    files: dict[str, str | bytes | None] = field(default_factory=dict)  # None deletes the path
    body: str | bytes = ""  # bytes: written as given (a body in a legacy encoding, as some editors leave it)
    branch: str = "main"
    merge: str | None = None  # branch whose tip becomes the second parent


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def fast_import_stream(commits: list[CommitSpec]) -> bytes:
    out: list[bytes] = []
    tips: dict[str, int] = {}
    for i, spec in enumerate(commits, 1):
        when = f"{EPOCH + i * STEP_SECONDS} +0000"
        body = spec.body if isinstance(spec.body, bytes) else spec.body.encode()
        message = spec.subject.encode() + (b"\n\n" + body if body else b"") + b"\n"
        out.append(f"commit refs/heads/{spec.branch}\nmark :{i}\n".encode())
        out.append(f"author {IDENTITY} {when}\ncommitter {IDENTITY} {when}\n".encode())
        out.append(_data(message))
        parent = tips.get(spec.branch, tips.get("main"))
        if parent is not None:
            out.append(f"from :{parent}\n".encode())
        if spec.merge:
            out.append(f"merge :{tips[spec.merge]}\n".encode())
        for path, content in sorted(spec.files.items()):
            if content is None:
                out.append(f"D {path}\n".encode())
            else:
                blob = content.encode() if isinstance(content, str) else content
                out.append(f"M 100644 inline {path}\n".encode() + _data(blob))
        tips[spec.branch] = i
        out.append(b"\n")
    return b"".join(out)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    res = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, env=env, check=True)
    return res.stdout.decode().strip()


def build_trace(dest: str | Path, commits: list[CommitSpec], untracked: dict[str, str | bytes] | None = None) -> str:
    """Create `dest` as a git work tree holding `commits` (main checked out) plus untracked files.
    Returns HEAD's sha."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=False)
    _git(dest, "init", "-q", "-b", "main")
    if commits:
        _git(dest, "fast-import", "--quiet", "--done", stdin=fast_import_stream(commits) + b"done\n")
        _git(dest, "reset", "-q", "--hard", "main")
    for rel, content in (untracked or {}).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return _git(dest, "rev-parse", "HEAD") if commits else ""


def make_bundle(repo: str | Path, bundle: str | Path) -> Path:
    bundle = Path(bundle).resolve()
    _git(Path(repo), "bundle", "create", "-q", str(bundle), "--all")
    return bundle
