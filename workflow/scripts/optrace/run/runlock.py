"""Stale Snakemake locks after a killed controller.

A controller killed with SIGKILL leaves `.snakemake/locks/` behind, which names no owner. So each of our
controllers records itself (host, pid, process start time, so a reused pid is not taken for it), and a
new one clears the locks only when every recorded controller ran on this host and none is alive.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from optrace.jsonio import load_or_none, write_json

CONTROLLERS = "optrace-controllers"


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None when it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "unknown"
        return "unknown"  # alive, but no /proc to tell a reused pid from it
    return stat.rsplit(")", 1)[1].split()[19]


def alive(entry: dict, host: str) -> bool:
    if entry.get("host") != host:
        return True  # another host's run: never judged from here
    pid = entry.get("pid")
    if not isinstance(pid, int):
        return False
    now = start_time(pid)
    return now is not None and (now == "unknown" or now == entry.get("start"))


def clear_stale_locks(snakemake_dir: Path, host: str | None = None) -> str | None:
    """Remove the locks of controllers that were killed on this host; returns a note when it did."""
    host = host or socket.gethostname()
    locks, registry = snakemake_dir / "locks", snakemake_dir / CONTROLLERS
    entries = []
    for path in sorted(registry.glob("*.json")) if registry.is_dir() else []:
        doc = load_or_none(path)
        entries.append((path, doc if isinstance(doc, dict) else {}))
    dead = [(path, e) for path, e in entries if not alive(e, host)]
    for path, _ in dead:
        path.unlink(missing_ok=True)
    if not locks.is_dir() or not any(locks.glob("*.lock")):
        return None
    if len(dead) < len(entries) or not dead:
        return None  # a live controller holds the lock, or nothing says who took it
    shutil.rmtree(locks, ignore_errors=True)
    pids = ", ".join(str(e.get("pid")) for _, e in dead)
    return f"removed the lock left by a killed run (controller pid {pids} on {host})"


def register(snakemake_dir: Path, host: str | None = None) -> Path:
    """Record this controller; `unregister` removes it when the run ends."""
    host, pid = host or socket.gethostname(), os.getpid()
    registry = snakemake_dir / CONTROLLERS
    registry.mkdir(parents=True, exist_ok=True)
    path = registry / f"{host}-{pid}.json"
    write_json(path, {"host": host, "pid": pid, "start": start_time(pid)})
    return path


def unregister(path: Path) -> None:
    path.unlink(missing_ok=True)
