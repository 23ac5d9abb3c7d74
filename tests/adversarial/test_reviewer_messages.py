"""What the reviewer reads when a record fails (#29): every message of a failing record, and for a file
that is no JSON at all the way out (delete it and re-run: distill writes it again from its packet)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from optrace.gates.validate import format_summary
from tests.support.mined import copy_mined


def test_check_prints_every_message_of_a_failing_record():
    messages = [f"distilled/t/x.json: problem {i}" for i in range(7)]
    summary = {
        "records": 1,
        "passed": 0,
        "failed": 1,
        "traces": [{"slug": "t", "records": 1, "passed": 0, "failed": 1, "packets_without_record": 0}],
        "by_record": [{"path": "distilled/t/x.json", "status": "FAIL", "failed": ["schema"], "messages": messages}],
        "shared_episodes": [],
    }
    out = format_summary(summary)
    assert all(f"    {m}" in out.splitlines() for m in messages)


def test_an_unparseable_record_says_delete_it_and_re_run(benches, mined_roots, tmp_path):
    bench = benches["example"]
    root = tmp_path / "results"
    copy_mined(mined_roots["example"], root, bench.slug)
    rel, record = bench.records[0]
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(json.dumps(record)[:-1], encoding="utf-8")  # an agent cut off mid-write
    (root / rel).with_name("stray.json").write_text("{", encoding="utf-8")  # no packet: nothing re-drafts it
    env = {**os.environ, "OPTRACE_CACHE_KEY": str(tmp_path / "key")}
    cmd = [sys.executable, "-m", "optrace", "validate", "trace", "--results", str(root), "--slug", bench.slug]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads((root / "staging" / "reports" / bench.slug / "validation.json").read_text(encoding="utf-8"))
    rows = {r["path"].rsplit("/", 1)[-1]: r["gates"]["schema"]["messages"] for r in report["records"]}
    cut = rows[rel.rsplit("/", 1)[-1]]
    assert (
        len(cut) == 1
        and "not valid JSON" in cut[0]
        and cut[0].endswith("delete it and re-run (distill writes it again from its packet)")
    )
    assert "not valid JSON" in rows["stray.json"][0] and "re-run" not in rows["stray.json"][0]
