"""Packets: scrubbed agent layer, provenance, code against the previous kept milestone, leak refusal."""

import json
import os
import subprocess
import sys

import pytest

from optrace.example.embedded import build_example, example_name
from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.mine.packetfile import read_packet_file
from optrace.mine.packets import build_packets, report_conclusion
from optrace.scrub.anonymize import Scrubber
from tests.support import tracekit
from tests.support.schemas import assert_valid


def run_cli(*args, env=None):
    res = subprocess.run([sys.executable, "-m", "optrace", *map(str, args)], capture_output=True, text=True, env=env)
    return res


def mine(trace, tmp_path, env=None, slug="t"):
    """(work folder, the packets file unpacked into a folder, the packets run)."""
    work, out = tmp_path / "work", tmp_path / "packets" / f"{slug}.json"
    for args in (
        ("ingest", trace, "--out-dir", work),
        ("partition", "--work-dir", work, "--report", tmp_path / "partition.md"),
    ):
        res = run_cli(*args, env=env)
        assert res.returncode == 0, res.stderr
    res = run_cli("packets", trace, "--work-dir", work, "--out", out, "--slug", slug, env=env)
    folder = read_packet_file(out).unpack(tmp_path / "packets" / slug) if out.exists() else tmp_path / "packets" / slug
    return work, folder, res


def load_packets(out):
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json") if p.name != "manifest.json"}


def strategy_of(packets, version):
    """The strategy packet of one version (seg ids carry no version: they name files the agent sees)."""
    return next(p for p in packets.values() if p["record_type"] == "strategy" and p["provenance"]["version"] == version)


def test_example_packets(tmp_path):
    trace = tmp_path / example_name()
    build_example(trace)
    work, out, res = mine(trace, tmp_path)
    assert res.returncode == 0, res.stderr
    packets = load_packets(out)
    assert_valid(list(packets.values()), "packet.schema.json")
    manifest = json.loads((out / "manifest.json").read_text())
    segs = [json.loads(ln) for ln in (work / "segments.jsonl").read_text().splitlines()]
    assert sorted(p["seg_id"] for p in manifest["packets"]) == sorted(s["seg_id"] for s in segs) == sorted(packets)
    v2 = strategy_of(packets, "v2")
    # the only usable REPORT.md reaches v2; the RNG capture's misleading REPORT.md reaches nothing
    assert v2["agent_facing"]["profiler"]["conclusion"]
    everything = "".join(p.read_text() for p in out.iterdir())
    assert "64-bit index arithmetic" not in everything and "integer and FMA pipes" not in everything
    # shape labels: the table and the prose use the same shape-N for one uuid
    v9 = next(p for p in packets.values() if any(o["version"] == "v9" for o in p["provenance"]["occurrences"]))
    gate = v9["agent_facing"]["what_the_run_said"]["gate_verdict"] or ""
    labels = {r["shape"] for r in strategy_of(packets, "v13")["agent_facing"]["measurements"]["per_shape_latency"]}
    assert "e4f80b39" not in gate and any(label in gate for label in labels)
    assert (out / "refk-final.py").read_text().startswith(("import", "from", '"""', "#"))
    assert (out / v2["agent_facing"]["code_file"]).read_text().startswith("--- a/kernel.py\n+++ b/kernel.py\n")


def test_rerun_after_deleting_results_is_byte_identical(tmp_path):
    trace = tmp_path / example_name()
    build_example(trace)
    _, out1, _ = mine(trace, tmp_path / "a")
    _, out2, _ = mine(trace, tmp_path / "b")
    files1 = {p.name: p.read_bytes() for p in out1.iterdir()}
    assert files1 == {p.name: p.read_bytes() for p in out2.iterdir()}


def test_strategy_diff_is_against_the_previous_kept_milestone(tmp_path):
    k1 = tracekit.kernel(1)
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 100.0), **tracekit.meta_files()},
            ),
            CommitSpec("v1: committed (+10%)", {"kernel.py": k1, "memory/v1.json": tracekit.memory(1, 90.0)}),
            CommitSpec(
                "v2: reverted (slower) — dead-end recorded",
                {"kernel.py": k1 + "ATTEMPT_ONLY = 1\n", "memory/v2.json": tracekit.memory(2, 95.0)},
            ),
            CommitSpec("chore(1): tidy", {"kernel.py": k1 + "ATTEMPT_ONLY = 1\nCHORE_ONLY = 2\n"}),
            CommitSpec(
                "v3: committed (+5%)",
                {"kernel.py": k1 + "NEW_CHANGE = 3\n", "memory/v3.json": tracekit.memory(3, 85.0)},
            ),
        ],
    )
    _, out, res = mine(tmp_path / "t", tmp_path)
    assert res.returncode == 0, res.stderr
    diff = (out / strategy_of(load_packets(out), "v3")["agent_facing"]["code_file"]).read_text()
    assert "+NEW_CHANGE = 3" in diff
    assert "ATTEMPT_ONLY" not in diff and "CHORE_ONLY" not in diff


def test_denylisted_host_and_home_path_never_reach_packets_ids_or_paths(tmp_path):
    host = "gpu-host-7.corp.internal"
    deny = tmp_path / "denylist.txt"
    deny.write_text(f"# private\n{host}\n")
    memory = json.loads(tracekit.memory(1, 90.0))
    memory["optimization"]["action_description"] = f"vectorised loads tuned on {host}, see /home/alice/notes"
    memory["pitfalls_and_fixes"] = [f"{host} ran out of smem at BLOCK=8192"]
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 100.0), **tracekit.meta_files()},
            ),
            CommitSpec(
                "v1: committed (+10%)",
                {"kernel.py": tracekit.kernel(1) + f"# profiled on {host}\n", "memory/v1.json": json.dumps(memory)},
                body=f"Measured on {host.upper()} from /home/alice/runs/v1.",
            ),
            CommitSpec(
                f"v2: reverted (spills on {host}) — dead-end recorded", {"memory/v2.json": tracekit.memory(2, 95.0)}
            ),
        ],
        untracked={
            "profiles/v1/summary.txt": "Kernel: _softmax_kernel\n",
            "profiles/v1/REPORT.md": f"**Root cause**: memory-bound on {host}; traces in /home/alice/prof/v1 are long\n",
        },
    )
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(deny)}
    work, out, res = mine(tmp_path / "t", tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    texts = [p.read_text() for p in out.iterdir()] + [(work / "segments.jsonl").read_text()]
    names = [p.name for p in out.iterdir()]
    for needle in (host, host.upper(), "gpu-host-7", "/home/alice"):
        assert not any(needle.lower() in t.lower() for t in texts + names), needle
    assert any("a private identifier" in t for t in texts)
    # the provenance layer is human-only, but it carries no trace prose either
    assert strategy_of(load_packets(out), "v1")["agent_facing"]["profiler"]["conclusion"]


class _NoScrub(Scrubber):
    """Injection: a scrubber that forgets to scrub prose must make the packet gate fire."""

    def text(self, s, shapes=None):
        return s


def test_a_packet_that_still_leaks_is_refused_and_named(tmp_path):
    memory = json.loads(tracekit.memory(1, 90.0))
    memory["optimization"]["action_description"] = "tuned from /home/alice/scratch"
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {"kernel.py": tracekit.kernel(0), "memory/v0.json": tracekit.memory(0, 100.0), **tracekit.meta_files()},
            ),
            CommitSpec("v1: committed (+10%)", {"kernel.py": tracekit.kernel(1), "memory/v1.json": json.dumps(memory)}),
        ],
    )
    work, _, res = mine(tmp_path / "t", tmp_path)
    assert res.returncode == 0
    out = tmp_path / "refused.json"
    _count, failures = build_packets(out, str(tmp_path / "t"), work, "t", _NoScrub())
    leaked = [
        json.loads(ln)["seg_id"]
        for ln in (work / "segments.jsonl").read_text().splitlines()
        if json.loads(ln)["version"] == "v1" and json.loads(ln)["record_type"] == "strategy"
    ]
    assert failures and any(f"({leaked[0]}.json): still leaks" in f and "/home/alice" in f for f in failures)
    assert not out.exists()  # no packets file with the others: the job fails


def test_a_segment_that_no_longer_exists_leaves_no_packet(tmp_path):
    tracekit.iteration_era(tmp_path / "t")
    work, folder, _ = mine(tmp_path / "t", tmp_path)
    gone = json.loads((folder / "manifest.json").read_text())["packets"][0]["seg_id"]
    segments = (work / "segments.jsonl").read_text().splitlines()
    kept = [line for line in segments if json.loads(line)["seg_id"] != gone]
    assert len(kept) == len(segments) - 1
    (work / "segments.jsonl").write_text("".join(f"{line}\n" for line in kept))
    out = tmp_path / "again.json"
    assert run_cli("packets", tmp_path / "t", "--work-dir", work, "--out", out, "--slug", "t").returncode == 0
    packets = read_packet_file(out)
    assert not any(name.startswith(gone) for name in packets.files)
    assert gone not in {e["seg_id"] for e in packets.manifest["packets"]} and packets.files


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "# Report\n\n**Root cause**: two passes over the row re-read the residual sum from global memory.\n\nMore.",
            "two passes over the row re-read the residual sum from global memory.",
        ),
        (
            "## Key Finding\nThe kernel is latency bound on the reduction tree.\n## Next\nx",
            "The kernel is latency bound on the reduction tree.",
        ),
        ("line one\nline two", "line one\nline two"),
    ],
)
def test_report_conclusion_anchors(text, expected):
    assert report_conclusion(text) == expected


def _kernel_body(name: str, lines: int) -> str:
    """A kernel of `lines` lines that share no line with a kernel of another name."""
    body = "\n".join(f"    {name}_acc_{i} = tl.load(ptr + {i} * {name.upper()}_STRIDE)" for i in range(lines))
    return f"import triton\nimport triton.language as tl\n\n@triton.jit\ndef {name}_kernel(ptr):\n{body}\n"


def test_a_snapshot_repeating_a_neighbour_makes_no_reference_kernel_and_a_distinct_one_does(tmp_path):
    """Reference kernels: the final one, and a mega-milestone snapshot only where it is materially different
    from both its neighbours in the store (the kernel its step edited or the previous snapshot, and the next
    snapshot or the final kernel); a skipped snapshot is named in the manifest with the side it repeats."""
    tiled, warp = _kernel_body("tiled", 30), _kernel_body("warp", 30)
    final = warp.replace("warp_acc_29 =", "warp_acc_29 = 2 *")  # one line of thirty changed
    build_trace(
        tmp_path / "t",
        [
            CommitSpec(
                "V0: baseline",
                {
                    "kernel.py": _kernel_body("naive", 30),
                    "memory/v0.json": tracekit.memory(0, 100.0),
                    **tracekit.meta_files(),
                },
            ),
            CommitSpec("v1: committed (+40%)", {"kernel.py": tiled, "memory/v1.json": tracekit.memory(1, 60.0)}),
            CommitSpec("v2: committed (+30%)", {"kernel.py": warp, "memory/v2.json": tracekit.memory(2, 42.0)}),
            CommitSpec("v3: committed (+5%)", {"kernel.py": final, "memory/v3.json": tracekit.memory(3, 40.0)}),
        ],
    )
    work, out, res = mine(tmp_path / "t", tmp_path)
    assert res.returncode == 0, res.stderr
    segs = [json.loads(ln) for ln in (work / "segments.jsonl").read_text().splitlines()]
    snaps = {s["version"]: s["seg_id"] for s in segs if s["seg_kind"] == "mega-snapshot"}
    assert sorted(snaps) == ["v1", "v2"]  # both steps gained >= 20 %: both are snapshot candidates
    packets = load_packets(out)
    refs = {p["provenance"]["version"]: p for p in packets.values() if p["record_type"] == "reference-kernel"}
    # v1 shares no line with v0 (the kernel it edited) nor with v2 (the next snapshot): kept, said what it is
    # v2 is the final kernel but one line: skipped, so the store holds that code once
    assert sorted(refs) == ["v1", "v3"]
    assert (
        "kept after a large measured gain and superseded by later steps"
        in refs["v1"]["agent_facing"]["what_this_record_is"]
    )
    skipped = json.loads((out / "manifest.json").read_text())["skipped"]
    assert [s["seg_id"] for s in skipped] == [snaps["v2"]]
    assert skipped[0]["why"].endswith("of its lines are the kernel after it in the store: not materially different")
