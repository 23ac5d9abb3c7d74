"""A mined trace's files under a results root, as the stages lay them out (packets/<slug>.json, work/<slug>/)."""

from __future__ import annotations

import shutil
from pathlib import Path

from optrace.gates.trace.injection import mine_example, workbench
from optrace.gates.trace.workbench import Workbench
from optrace.mine.packetfile import PacketFile, read_packet_file


def packets_path(root: Path, slug: str) -> Path:
    return root / "packets" / f"{slug}.json"


def packet_file(root: Path, slug: str) -> PacketFile:
    return read_packet_file(packets_path(root, slug))


def copy_mined(src: Path, dst: Path, slug: str) -> None:
    """Copy one trace's packets file and work folder from results root `src` to `dst`."""
    packets_path(dst, slug).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(packets_path(src, slug), packets_path(dst, slug))
    shutil.copytree(src / "work" / slug, dst / "work" / slug)


def mined_example(root: Path) -> tuple[Path, Workbench]:
    """The example trace mined under `root`, and its packets, facts and drafted records."""
    mine_example(root)
    return root, workbench(root)
