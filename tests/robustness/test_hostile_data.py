"""Hostile trace data (#28): oversized but legal inputs finish in bounded time, silently wrong results
become visible ones, and names that must not travel do not.

- memory/v4.json with 300 000 shapes (under the read cap) through ingest, partition and packets;
- 20 000 commits: every segment and record id distinct (content ids of six hex digits collide there);
- kernel.py as a Git LFS pointer: reported, never mined as the kernel;
- a profiler folder named with a denylisted term: never read, never cited, its name nowhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from optrace.errors import InputError
from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.mine import partition
from optrace.mine.ladder import Thresholds
from optrace.mine.packetfile import read_packet_file
from tests.robustness.hostile_kit import base_commits, git, ok, warned
from tests.support import tracekit

STAGE_TIMEOUT = 120  # per stage; the 300 000-shape trace took minutes in packets before the fix


def stage(*argv, env=None):
    res = subprocess.run(
        [sys.executable, "-m", "optrace", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=STAGE_TIMEOUT,
        env=env,
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    return res


def mine(trace, tmp_path, env=None):
    """ingest, partition, packets, as the workflow runs them; returns the work folder and packets file."""
    work, packets = tmp_path / "work", tmp_path / "packets.json"
    stage("ingest", trace, "--out-dir", work, env=env)
    stage("partition", "--work-dir", work, "--report", work / "partition.md", env=env)
    stage("packets", trace, "--work-dir", work, "--out", packets, "--slug", "t", env=env)
    return work, packets


# ---- many shapes --------------------------------------------------------------------------------


def test_300000_shapes_in_one_memory_file_are_mined_in_bounded_time(tmp_path):
    rng = __import__("random").Random(7)
    shapes = {str(uuid.UUID(int=rng.getrandbits(128))): round(rng.uniform(5, 80), 4) for _ in range(300_000)}
    doc = json.loads(tracekit.memory(4, 39.8))
    doc["performance"]["latency_us_by_shape"] = shapes
    text = json.dumps(doc)
    assert 12_000_000 < len(text) < 16 * 1024 * 1024  # the 13 MB, under the read cap
    trace = tmp_path / "kernel_opt_100_shapes"
    tracekit.iteration_era(trace, {"memory/v4.json": text})
    work, packets = mine(trace, tmp_path)
    rows = {r["version"]: r for r in map(json.loads, (work / "versions.jsonl").read_text().splitlines())}
    assert len(rows["v4"]["by_shape_us"]) == 300_000
    assert read_packet_file(packets).manifest["count"] >= 1


def test_shape_labels_of_300000_keys_name_shared_prefixes_by_no_label():
    from optrace.scrub.anonymize import ShapeLabels

    keys = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(300_000)]
    keys += ["deadbeef-1111-4000-8000-000000000001", "deadbeef-2222-4000-8000-000000000002"]  # one prefix, twice
    labels = ShapeLabels.from_keys(keys)
    assert len(labels.by_key) == 300_002 and labels.label(keys[5]) == labels.by_prefix[keys[5][:8]]
    assert "deadbeef" not in labels.by_prefix  # a shared prefix names neither shape


# ---- many commits: segment ids ------------------------------------------------------------------


def fast_import_trace(dest, subjects, files0):
    """A real repository of one commit per subject, written by `git fast-import` (seconds, not minutes)."""
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    lines = []
    for i, subject in enumerate(subjects):
        lines += ["commit refs/heads/main", f"committer a <a@example.invalid> {1767300000 + i} +0000"]
        lines += [f"data {len(subject.encode())}", subject]
        for path, data in files0.items() if i == 0 else ():
            lines += [f"M 100644 inline {path}", f"data {len(data.encode())}", data]
        lines.append("")
    git(dest, "fast-import", "--quiet", stdin=("\n".join(lines) + "\n").encode())
    git(dest, "checkout", "-q", "-f", "main")
    return dest


def test_20000_commits_give_20000_distinct_segment_and_record_ids(tmp_path):
    subjects = ["V0: baseline"] + [
        f"v{i}: reverted (tile variant number {i} with split {i % 97}) — dead-end recorded" for i in range(1, 20_000)
    ]
    trace = fast_import_trace(tmp_path / "kernel_opt_101_long", subjects, {"kernel.py": tracekit.kernel(0)})
    work = tmp_path / "work"
    stage("ingest", trace, "--out-dir", work, "--hardware", "H100")
    stage("partition", "--work-dir", work, "--report", work / "partition.md")
    segments = [json.loads(line) for line in (work / "segments.jsonl").read_text().splitlines()]
    assert len(segments) == 19_999
    assert len({s["seg_id"] for s in segments}) == len({s["id"] for s in segments}) == 19_999
    suffixed = [s for s in segments if len(s["seg_id"]) > len("anti-") + 6]
    assert suffixed  # six hex digits do collide at this size: the later of each pair is told apart
    assert all(s["seg_id"][-1] in "ghjkmnpqrstvwxyz" and s["id"].endswith(s["seg_id"][11:]) for s in suffixed)


def _digest(label: str, text: str) -> str:
    ctx = partition.Context(label, "nvidia", "sm_90", "h100", "x", "x")
    key = partition.lever_key(text)
    return partition.seg_identity(ctx, "anti-strategy", "triton", "t", key, text)[0][-6:]


def _colliding_levers(label: str) -> tuple[str, str]:
    seen: dict[str, str] = {}
    for i in range(200_000):
        text = f"prefetch stage depth {i} on the k loop"
        d = _digest(label, text)
        if d in seen:
            return seen[d], text
        seen[d] = text
    raise AssertionError("no collision in 200 000 levers")


def test_two_levers_whose_six_hex_digits_collide_get_distinct_ids_and_the_first_keeps_its_own(tmp_path):
    label = "kernel_opt_102_twins"
    first, second = _colliding_levers(label)
    trace = tmp_path / label
    build_trace(
        trace,
        base_commits()
        + [
            CommitSpec(
                f"dead-end recorded: {first}, {second}. Next: warp specialisation",
                {"memory/v2.json": tracekit.memory(2, 31.0)},
            )
        ],
    )
    work = tmp_path / "work"
    stage("ingest", trace, "--out-dir", work)
    stage("partition", "--work-dir", work, "--report", work / "partition.md")
    by_text = {
        s["lever"]["text"]: s
        for s in map(json.loads, (work / "segments.jsonl").read_text().splitlines())
        if "lever" in s
    }
    a, b = by_text[first], by_text[second]
    digest = _digest(label, first)
    assert a["seg_id"] == f"anti-{digest}" and a["id"].endswith(f"-a{digest}")  # unchanged by its twin
    assert b["seg_id"].startswith(f"anti-{digest}") and b["seg_id"] != a["seg_id"] and b["id"] != a["id"]
    packets = tmp_path / "packets.json"
    stage("packets", trace, "--work-dir", work, "--out", packets, "--slug", "t")
    assert {f"{a['seg_id']}.json", f"{b['seg_id']}.json"} <= set(read_packet_file(packets).files)


def test_two_segments_of_the_same_content_are_a_one_line_error_not_an_assertion():
    seg = {
        "seg_id": "anti-abc123",
        "id": "nvidia.h100.triton.x.t-aabc123",
        "version": "v2",
        "record_type": "anti-strategy",
    }
    with pytest.raises(InputError) as exc:
        partition.unique_ids([dict(seg), dict(seg)], "kernel_opt_103_same")
    assert (
        exc.value.where == "partition of kernel_opt_103_same" and "two segments say the same thing" in exc.value.problem
    )


def test_ids_are_unchanged_where_nothing_collides(tmp_path):
    """The suffix is only for a collision: an ordinary trace's ids are what they always were."""
    trace = tmp_path / "kernel_opt_104_plain"
    tracekit.iteration_era(trace)
    work = tmp_path / "work"
    stage("ingest", trace, "--out-dir", work)
    rows = partition.read_versions(work / "versions.jsonl")
    meta = json.loads((work / "meta.json").read_text())
    segments, _ = partition.build_segments(rows, meta, Thresholds(), lambda s: s)
    assert all(len(s["seg_id"].split("-", 1)[1]) in (5, 6) for s in segments)  # `final` or six hex digits


# ---- kernel.py as a Git LFS pointer ------------------------------------------------------------------


def lfs_pointer(n: int) -> str:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{n:064x}\nsize {1000 + n}\n"


def test_kernel_py_as_a_git_lfs_pointer_is_reported_and_not_mined(tmp_path):
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {"kernel.py": lfs_pointer(0), "memory/v0.json": tracekit.memory(0, 40.0), **tracekit.meta_files()},
            ),
            CommitSpec(
                "v1: committed (+25.0%)", {"kernel.py": lfs_pointer(1), "memory/v1.json": tracekit.memory(1, 30.0)}
            ),
            CommitSpec(
                "v2: committed (+5.0%)", {"kernel.py": tracekit.kernel(2), "memory/v2.json": tracekit.memory(2, 28.0)}
            ),
        ],
    )
    rows, meta, out = ok(tmp_path / "t", tmp_path)
    assert rows["v0"]["kernel_blob"] is None and rows["v1"]["kernel_blob"] is None and rows["v2"]["kernel_blob"]
    warned(meta, "kernel.py of v0, v1 is a Git LFS pointer, not the kernel (the trace was cloned without git-lfs")
    assert "1 warnings" in out or "warning: kernel.py of v0, v1 is a Git LFS pointer" in out


def test_a_kernel_that_merely_mentions_lfs_is_source(tmp_path):
    text = "# stored once as: version https://git-lfs.github.com/spec/v1\n" + tracekit.kernel(0)
    build_trace(tmp_path / "t", [CommitSpec("V0: baseline", {"kernel.py": text, **tracekit.meta_files()})])
    rows, meta, _ = ok(tmp_path / "t", tmp_path)
    assert rows["v0"]["kernel_blob"] and not any("LFS" in w for w in meta["warnings"])


# ---- a capture folder named with a denylisted term ------------------------------------------------------

TERM = "acmecorp"


def test_a_profiler_folder_named_with_a_denylisted_term_reaches_no_output(tmp_path):
    trace = tmp_path / "kernel_opt_105_caps"
    summary = "Kernel: triton_rmsnorm\nDuration 12.5 us\nMemory Throughput 80 %\n"
    tracekit.iteration_era(
        trace,
        {
            f"profiles/v1_{TERM}_run/summary.txt": summary,
            f"profiles/v1_{TERM}_run/REPORT.md": "## Conclusion\nmemory bound\n",
            f"profiles/latest_{TERM}/summary.txt": summary,
            "profiles/v5/summary.txt": summary,
        },
    )
    (tmp_path / "deny.txt").write_text(TERM.upper() + "\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(tmp_path / "deny.txt")}
    work, packets = mine(trace, tmp_path, env=env)
    profiles = [json.loads(line) for line in (work / "profiles.jsonl").read_text().splitlines()]
    hidden = [p for p in profiles if p["version"] == "v1"]
    assert len(hidden) == 1 and not hidden[0]["usable"] and "denylisted term" in hidden[0]["unusable_reason"]
    assert hidden[0]["dir"].startswith("profiles/capture-") and hidden[0]["report"] is None
    assert any(p["dir"] == "profiles/v5" for p in profiles)  # the other capture is read as before
    for folder in (work, packets):
        for path in folder.rglob("*"):
            assert TERM not in path.name.lower()
            if path.is_file():
                assert TERM not in path.read_text(errors="replace").lower(), path
