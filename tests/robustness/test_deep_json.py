"""JSON nested past the parser's depth, wherever the project reads JSON back: a one-line error naming the
file for what a stage needs, a fresh start for what only saves work (caches, memos, lock records), and
never a RecursionError traceback. Every file here is one anyone with the results tree (or an agent's
output) can write."""

from __future__ import annotations

import pytest

from optrace.errors import InputError
from optrace.jsonio import load_or_none, read_json, read_jsonl

DEEP = "[" * 100_000  # past CPython's recursion limit in the json decoder


def test_files_that_only_save_work_are_a_fresh_start(tmp_path):
    from optrace.gates.tracerun import load_cache
    from optrace.run import codedigest, pertrace, runlock

    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    assert load_or_none(path) is None
    assert load_cache(path).entries == {}  # the validation cache
    assert pertrace.upstream_failure(path) is None  # a meta.json read for its `failed` entry
    codedigest.load_cache(path)  # the code digests' imports cache: parsed anew
    registry = tmp_path / ".snakemake" / runlock.CONTROLLERS
    registry.mkdir(parents=True)
    (registry / "1.json").write_text(DEEP)
    (tmp_path / ".snakemake" / "locks").mkdir()
    (tmp_path / ".snakemake" / "locks" / "0.input.lock").write_text("")
    # a record nobody can read names no owner: the lock stays (as for any unreadable record), no crash
    assert runlock.clear_stale_locks(tmp_path / ".snakemake") is None
    assert (tmp_path / ".snakemake" / "locks" / "0.input.lock").exists()


def test_an_agents_report_line_nested_too_deep_is_no_report():
    from optrace.distill.distill import REPORT_MARK, structured_report

    assert structured_report(f"working\n{REPORT_MARK}{DEEP}\n") is None


def test_validate_trace_with_a_deep_cache_judges_every_record_afresh(tmp_path):
    import json

    from optrace.gates.trace.injection import SLUG, mine_example, workbench
    from optrace.gates.validate import CACHE_NAME, TracePaths, validate_trace

    root = mine_example(tmp_path / "mined")
    for rel, record in workbench(root).records:  # the drafter's records, as distill writes them
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(record))
    (root / "work" / SLUG / CACHE_NAME).write_text(DEEP)
    report, checked = validate_trace(TracePaths.under(root, SLUG), cache=root / "work" / SLUG / CACHE_NAME)
    assert checked == report["counts"]["records"] > 0


# --- the other ways a saved file is not JSON: a too-long integer, bytes that are not UTF-8, a FIFO -------

LONG_INT = "1" * 5000  # past CPython's int-from-string limit: json raises a plain ValueError


@pytest.mark.parametrize(
    "text,why",
    [
        (DEEP.encode(), "nested too deeply"),
        (b'{"a": ' + LONG_INT.encode() + b"}", "an unparseable number"),
        (b'{"a": "\xff\xfe"}', "not UTF-8"),
    ],
    ids=["nested-too-deeply", "long-integer", "not-utf8"],
)
def test_any_unparseable_file_a_stage_needs_is_one_line(tmp_path, text, why):
    doc, rows = tmp_path / "meta.json", tmp_path / "versions.jsonl"
    doc.write_bytes(text)
    rows.write_bytes(b'{"version": "v0"}\n' + text + b"\n")
    with pytest.raises(InputError) as exc:
        read_json(doc)
    assert exc.value.where == str(doc) and exc.value.problem.startswith("not valid JSON") and why in exc.value.problem
    with pytest.raises(InputError) as exc:
        read_jsonl(rows)
    assert exc.value.where == f"{rows}:2" and why in exc.value.problem


def test_a_fifo_or_directory_named_like_a_saved_file_is_never_opened_for_reading(tmp_path):
    """A FIFO where a memo, cache or stage input goes blocked its reader forever."""
    import os
    import signal

    fifo, folder = tmp_path / "memo.json", tmp_path / "dir.json"
    os.mkfifo(fifo)
    folder.mkdir()
    signal.signal(signal.SIGALRM, lambda *a: pytest.fail("a reader blocked on a FIFO"))
    signal.alarm(10)
    try:
        assert load_or_none(fifo) is None and load_or_none(folder) is None
        for path in (fifo, folder):
            for reader in (read_json, read_jsonl):
                with pytest.raises(InputError) as exc:
                    reader(path)
                assert exc.value.where == str(path) and "not a regular file" in exc.value.problem
    finally:
        signal.alarm(0)


def test_a_sparse_file_past_the_size_limit_is_never_read(tmp_path):
    """A 1 TiB sparse file (instant to make) was a MemoryError traceback: read() allocates its size."""
    import os

    path = tmp_path / "memo.json"
    with open(path, "wb") as fh:
        os.truncate(fh.fileno(), 1 << 40)
    assert load_or_none(path) is None
    for reader in (read_json, read_jsonl):
        with pytest.raises(InputError) as exc:
            reader(path)
        assert exc.value.where == str(path) and "over the" in exc.value.problem
