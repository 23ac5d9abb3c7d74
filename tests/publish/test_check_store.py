"""`optrace check-store`: the 9 store gates, their fixed rules, and a FAIL (never a traceback) on bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from optrace.gates.store.model import GATES, GateContext
from optrace.gates.store.runner import check_record, run_gates, run_store_gates
from optrace.gates.store.specimens import anti_strategy, index_for, reference_kernel, specimen_records, strategy
from optrace.gates.store.store import load_store
from optrace.publish import check_store
from optrace.scrub.leak_patterns import DENYLIST_ENV, denylist_pattern
from tests.support.paths import SHARED_DATA

STORE = SHARED_DATA / "upstream-store"
STRATEGY_PATH = specimen_records()[0][0]


def write_store(root: Path, records: list[tuple[str, object]], index: object | None = None) -> Path:
    for rel, record in records:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(record if isinstance(record, str) else json.dumps(record, indent=1), encoding="utf-8")
    if index is not None:
        (root / "records").mkdir(exist_ok=True)
        (root / "records/index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return root


def specimen_store(root: Path, edit=None) -> Path:
    """The specimen store on disk, after `edit(records)` changed the records (index left as built before)."""
    records = specimen_records()
    index = index_for(records)
    if edit is not None:
        records = [(rel, copy.deepcopy(rec)) for rel, rec in records]
        edit(records)
    return write_store(root, records, index)


def results_of(root: Path, terms=()) -> dict:
    return {r.gate: r for r in run_store_gates(root, terms)}


def failing(root: Path, terms=()) -> dict[str, tuple[str, ...]]:
    return {g: r.messages for g, r in results_of(root, terms).items() if r.status == "FAIL"}


def edit_strategy(change):
    def edit(records):
        change(records[0][1])

    return edit


# --- the real store and the specimens pass ---------------------------------------------------------


@pytest.mark.skipif(not STORE.is_dir(), reason="../shared/data/upstream-store is absent")
def test_real_store_passes_every_gate(capsys):
    assert check_store.main([str(STORE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[:9]] == list(GATES)
    assert all(line.split()[0] in ("PASS", "SKIP") for line in lines[:9])
    assert lines[-1] == "all 9 gates passed"


def test_specimen_store_passes_every_gate_and_links_resolve(tmp_path):
    results = results_of(specimen_store(tmp_path))
    assert {g: r.status for g, r in results.items()} == dict.fromkeys(GATES, "PASS")


def test_output_has_one_line_per_gate_and_exit_1_on_a_fail(tmp_path, capsys):
    root = specimen_store(tmp_path, edit_strategy(lambda r: r["payload"].update(goal=" ")))
    assert check_store.main([str(root)]) == 1
    out = capsys.readouterr().out
    assert "FAIL self-contained" in out and f"    {STRATEGY_PATH}: payload.goal: blank" in out
    assert out.rstrip().endswith("1 of 9 gates failed")


def test_missing_records_directory_is_an_input_error(tmp_path):
    from optrace.errors import InputError

    with pytest.raises(InputError, match="no records/ directory"):
        check_store.main([str(tmp_path)])


def test_empty_store_fails(tmp_path):
    (tmp_path / "records").mkdir()
    assert "ids" in failing(write_store(tmp_path, [], index_for([])))


# --- malformed records: a FAIL naming the file, never a traceback ------------------------------------


def test_invalid_json_is_a_schema_fail_naming_the_file(tmp_path):
    rel = "records/strategy/broken.json"
    root = specimen_store(tmp_path)
    write_store(root, [(rel, '{"schema": "clean-1.3", ')])
    found = failing(root)
    assert any(m.startswith(f"{rel}: not valid JSON") for m in found["schema"])


WRONG = (None, 1, "x", [], {}, True)
BLOCKS = [
    (),
    ("retrieval",),
    ("retrieval", "scope"),
    ("retrieval", "signals"),
    ("retrieval", "links"),
    ("payload",),
    ("payload", "problem"),
    ("payload", "trace"),
    ("payload", "implementation"),
    ("evidence",),
    ("evidence", "summary"),
    ("evidence", "raw"),
    ("worth",),
    ("worth", "rank"),
    ("worth", "gain"),
    ("worth", "gain", "metrics"),
    ("payload", "established_fact"),
    ("payload", "established_fact", "condition"),
]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: ".".join(b) or "record")
def test_a_block_of_any_wrong_type_fails_without_crashing(block):
    ctx = GateContext(known_ids=frozenset({strategy()["id"]}))
    schema_fails = 0
    for base in (strategy(), anti_strategy()):
        if "established_fact" in block and base["type"] != "anti-strategy":
            continue
        for value in WRONG:
            record = copy.deepcopy(base)
            if block:
                node = record
                for key in block[:-1]:
                    node = node[key]
                node[block[-1]] = value
            else:
                record = value
            verdicts = check_record(record, "records/x.json", ctx)
            messages = [m for found in verdicts.values() for m in found]
            schema_fails += bool(verdicts["schema"])
            assert all(m.startswith("records/x.json: ") for m in messages)
            assert not any("could not read this record" in m for m in messages), messages
    assert schema_fails >= len(WRONG) - 2  # most replacements are schema errors ({} or [] may be legal)


@pytest.mark.parametrize("block", ["retrieval", "payload", "evidence", "worth", "id"])
def test_a_missing_block_fails_without_crashing(tmp_path, block):
    root = specimen_store(tmp_path, edit_strategy(lambda r: r.pop(block)))
    found = failing(root)
    assert any(m.startswith(STRATEGY_PATH) for m in found["schema"])
    assert not any("could not read" in m for ms in found.values() for m in ms)


# --- ids -----------------------------------------------------------------------------------------


def test_duplicate_ids_fail_naming_both_files(tmp_path):
    def dup(records):
        rel, rec = records[0]
        records.append((rel.replace("fused-softmax-h4096/", "copy/"), copy.deepcopy(rec)))

    found = failing(specimen_store(tmp_path, dup))["ids"]
    assert sum("duplicate id" in m for m in found) == 2


@pytest.mark.parametrize(
    "new_id, problem",
    [
        ("nvidia.hopper.triton.softmax", "at least 5 required"),
        ("nvidia.hopper..triton.softmax.x", "empty segment"),
        ("nvidia.hopper.triton.softmax." + "x" * 250, "bytes long"),
    ],
)
def test_bad_id_fails_the_ids_gate(new_id, problem):
    record = strategy()
    record["id"] = new_id
    found = check_record(record, f"records/s/{new_id}.json", GateContext())["ids"]
    assert any(problem in m for m in found)


# --- anonymization ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind",
    [
        ("logs in /home/alice/run", "local path"),
        ("ask bob.smith@corp.example.com", "e-mail address"),
        ("see tuning-notes.md", "markdown page"),
        ("since v12 the kernel", "version id"),
        ("the V7: step", "version id"),
        ("a v3_rerun showed", "version id"),
        ("commit a65a3a4 fixed it", "hash"),
        ("sha 0123456789abcdef0123456789abcdef01234567", "hash"),
        ("shape 0b6f2c1e-4a7d-4e2b-9c11-5d3e2f1a0b9c", "uuid"),
    ],
)
def test_leaks_in_a_trace_record_fail_anonymization(text, kind):
    record = strategy()
    record["payload"]["mechanism"] = text
    found = check_record(record, STRATEGY_PATH, GateContext())["anonymization"]
    assert any(f"payload.mechanism: {kind}" in m for m in found), found


def test_leaks_in_code_comments_and_strings_fail_but_code_does_not():
    record = strategy()
    impl = record["payload"]["implementation"]
    impl["snippet"] = "+    x = a // b  # tuned in v12\n+    y = 0xdeadbeef1"
    found = check_record(record, STRATEGY_PATH, GateContext())["anonymization"]
    assert [m.split(": ", 2)[2] for m in found] == ["version id 'v12'"]
    impl["snippet"] = '+    open("/home/alice/w.bin")'
    assert check_record(record, STRATEGY_PATH, GateContext())["anonymization"]


@pytest.mark.parametrize(
    "text",
    [
        "emits ld.global.v4.b32 per thread",
        "packs v4 bf16 values",
        "MLPerf v5.0 rules",
        "a Tesla V100 part",
        "rel_err=1.662843e-02",
        "reached 3 records/s",
        "FlashAttention rewrite",
        "16384 rows",
        "deadbeef words",
    ],
)
def test_no_false_positive_in_trace_records(text):
    record = strategy()
    record["payload"]["mechanism"] = text
    verdicts = check_record(record, STRATEGY_PATH, GateContext(known_ids=frozenset({record["id"]})))
    assert {g for g, m in verdicts.items() if m} == set(), verdicts


def test_version_ids_and_hashes_only_bind_records_mined_from_a_trace():
    """Curated documentation records (no trace provenance) discuss their own history; the shipped store does."""
    record = strategy()
    record["payload"]["mechanism"] = "the v43 pattern from commit a65a3a4"
    record["evidence"]["raw"] = {"page_path": "nvidia/x.md"}
    assert check_record(record, STRATEGY_PATH, GateContext())["anonymization"] == []


def test_denylisted_terms_fail_anywhere_in_the_record(tmp_path, monkeypatch, capsys):
    deny = tmp_path / "deny.txt"
    deny.write_text("# private names\nAcmeCorp\n\nhopper.triton.fused\n")
    monkeypatch.setenv(DENYLIST_ENV, str(deny))
    root = specimen_store(
        tmp_path / "store", edit_strategy(lambda r: r["evidence"]["raw"].update(source_repo="acmecorp-kernels"))
    )
    assert check_store.main([str(root), "--all"]) == 1
    out = capsys.readouterr().out
    assert "evidence.raw.source_repo: denylisted term #1" in out  # named by its place, never repeated
    assert "<file path>: denylisted term #2" in out  # every specimen's id and path
    assert "'acmecorp'" not in out.lower() and "'hopper.triton.fused'" not in out


def test_without_a_denylist_the_same_store_passes(tmp_path, monkeypatch):
    monkeypatch.delenv(DENYLIST_ENV, raising=False)
    root = specimen_store(tmp_path, edit_strategy(lambda r: r["evidence"]["raw"].update(source_repo="acmecorp-k")))
    assert failing(root) == {}


def test_unreadable_denylist_is_an_input_error(tmp_path, monkeypatch):
    from optrace.errors import InputError

    monkeypatch.setenv(DENYLIST_ENV, str(tmp_path / "nope.txt"))
    with pytest.raises(InputError, match="denylist"):
        check_store.main([str(specimen_store(tmp_path / "s"))])


def test_denylist_matches_case_insensitively_longest_first():
    pattern = denylist_pattern(("Acme", "acme labs"))
    assert [m.group(0) for m in pattern.finditer("ACME LABS and acme")] == ["ACME LABS", "acme"]
    assert pattern.label("ACME LABS") == "term #1" and pattern.label("acme") == "term #1"


# --- raw-isolation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["raw", "links", "locator"])
def test_a_tag_named_like_an_engine_key_is_fine(tag):
    record = strategy()
    record["retrieval"]["technique_tags"].append(tag)
    assert check_record(record, STRATEGY_PATH, GateContext())["raw-isolation"] == []


def test_short_or_plain_word_provenance_never_fires():
    record = strategy()
    record["evidence"]["raw"].update(git_commit="a", source_repo="softmax")
    record["payload"]["goal"] = "a softmax kernel"
    assert check_record(record, STRATEGY_PATH, GateContext())["raw-isolation"] == []


def test_provenance_value_served_fails():
    record = strategy()
    record["payload"]["goal"] += " From kernel_opt_001_fused_softmax_h4096."
    found = check_record(record, STRATEGY_PATH, GateContext())["raw-isolation"]
    assert found == [
        f"{STRATEGY_PATH}: payload.goal: raw.source_repo value 'kernel_opt_001_fused_softmax_h4096' is served"
    ]


# --- relations -----------------------------------------------------------------------------------


def test_links_must_resolve_and_not_point_at_themselves():
    record = strategy()
    record["retrieval"]["links"] = {"parent": record["id"], "see_also": ["a.b.c.d.e"]}
    found = check_record(record, STRATEGY_PATH, GateContext(known_ids=frozenset({record["id"]})))["relations"]
    assert ["links to the record itself" in found[0], "unknown record 'a.b.c.d.e'" in found[1]] == [True, True]


# --- index ---------------------------------------------------------------------------------------


def index_edited(tmp_path, change) -> list[str]:
    records = specimen_records()
    index = index_for(records)
    change(index)
    return failing(write_store(tmp_path, records, index)).get("index", [])


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda ix: ix["records"][0].update(path="records/elsewhere.json"), "differs from the record in path"),
        (lambda ix: ix["records"][0].update(type="doc"), "differs from the record in type"),
        (lambda ix: ix["records"][0].update(episode_key="x"), "differs from the record in episode_key"),
        (lambda ix: ix.update(count=5), "count is 5"),
        (lambda ix: ix["records"].append(dict(ix["records"][0])), "duplicate entry"),
        (lambda ix: ix["records"].append({**ix["records"][0], "id": "a.b.c.d.gone"}), "has no record file"),
        (lambda ix: ix.update(schema="clean-1.2"), "expected 'clean-1.3'"),
    ],
)
def test_index_must_match_the_records(tmp_path, change, expected):
    assert any(expected in m for m in index_edited(tmp_path, change))


def test_missing_index_fails(tmp_path):
    assert failing(write_store(tmp_path, specimen_records()))["index"] == ("records/index.json: missing",)


# --- self-contained ------------------------------------------------------------------------------------


def strategy_with(change) -> list[str]:
    record = strategy()
    change(record)
    return check_record(record, STRATEGY_PATH, GateContext())["self-contained"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r["worth"]["gain"].update(pct=20.0), "is not the primary metric's delta_pct"),
        (lambda r: r["worth"]["gain"].update(pct=None), "but the primary metric's delta_pct"),
        (lambda r: r["worth"]["gain"]["metrics"][0].update(unit="us"), "time unit"),
        (lambda r: r["worth"]["gain"]["metrics"][0].update(before=52.9), "absolute before/after"),
        (lambda r: r["worth"]["gain"]["metrics"][0].update(note="41.2 us now"), "absolute latency"),
        (lambda r: r["worth"]["gain"]["metrics"][0].pop("source"), "no source"),
        (lambda r: r["worth"]["gain"].update(metrics=[], pct=None), "needs a metric with a delta_pct"),
        (lambda r: r["payload"]["problem"].update(operator=None), "operator-level"),
        (lambda r: r["payload"]["trace"]["builds_on"].update(approach=" "), "builds_on.approach: blank"),
        (lambda r: r["payload"]["implementation"].update(format="source (verbatim)"), "snippet is a diff"),
        (lambda r: r["payload"]["implementation"].update(snippet=""), "blank although format"),
        (lambda r: r["worth"]["gain"].pop("basis"), "basis: missing"),
    ],
)
def test_self_contained_rules(change, expected):
    assert any(expected in m for m in strategy_with(change))


# --- no-cross-reference ----------------------------------------------------------------------------

VENDOR_SLUGS = {
    "nvidia": ["ampere", "hopper", "blackwell", "blackwell-ultra", "blackwell-geforce", "b200", "any"],
    "amd": ["cdna3", "cdna4", "rdna4", "mi300x", "mi308x", "mi355x"],
    "generic": ["generic", "any"],
}


@pytest.mark.parametrize("vendor, slug", [(v, s) for v, slugs in VENDOR_SLUGS.items() for s in slugs])
def test_record_ids_of_every_vendor_and_arch_are_cross_references(vendor, slug):
    rid = f"{vendor}.{slug}.triton.gemm.split-k-r1a2b3c"
    found = strategy_with(lambda r: None)  # baseline clean
    assert found == []
    record = strategy()
    record["payload"]["lesson"] = f"See {rid} for the follow-up."
    record["type"], record["payload"]["attempted"], record["payload"]["verdict"] = "strategy", "x", "y"
    messages = check_record(record, STRATEGY_PATH, GateContext())["no-cross-reference"]
    assert [m.rsplit(": ", 1)[1] for m in messages] == [f"record id {rid!r}"]


@pytest.mark.parametrize(
    "text, flagged",
    [
        ("processes 3 records/s", False),
        ("see docs/guide", False),
        ("see records/doc/amd/x.json", True),
        ("see docs/tuning/gemm", True),
        ("see docs/guide.rst", True),
    ],
)
def test_store_paths_need_a_second_segment_or_an_extension(text, flagged):
    record = strategy()
    record["payload"]["change"] = text
    assert bool(check_record(record, STRATEGY_PATH, GateContext())["no-cross-reference"]) == flagged


def test_stored_serve_time_code_is_a_cross_reference():
    record = strategy()
    record["payload"]["implementation"]["source_text"] = "def f(): pass"
    assert "serve-time field" in check_record(record, STRATEGY_PATH, GateContext())["no-cross-reference"][0]


# --- established-fact --------------------------------------------------------------------------------


def anti_with(change) -> list[str]:
    record = anti_strategy()
    change(record)
    return check_record(record, "records/a.json", GateContext())["established-fact"]


@pytest.mark.parametrize(
    "phrase",
    ["no kernel change", "consecutive dead-end", "flat within noise", "hw floor confirmed", "all four variants failed"],
)
def test_non_mechanisms_of_both_reference_lists_fail(phrase):
    found = anti_with(
        lambda r: r["payload"]["established_fact"].update(
            mechanism=f"We saw {phrase} on this part, so the lever was dropped for good."
        )
    )
    assert any("reports an outcome" in m for m in found)


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r["payload"].pop("established_fact"), "missing"),
        (lambda r: r["payload"]["established_fact"].update(condition={}), "no checkable condition"),
        (lambda r: r["payload"]["established_fact"].update(condition={"dtype": 16}), "string or null"),
        (lambda r: r["payload"]["established_fact"].update(condition={"gpu": "h100"}), "not one of"),
        (lambda r: r["payload"]["established_fact"].update(mechanism="too short"), "needs 40"),
        (lambda r: r["payload"].update(verdict="unstable"), "concludes nothing"),
    ],
)
def test_established_fact_rules(change, expected):
    assert any(expected in m for m in anti_with(change))


def test_established_fact_skips_when_the_store_has_no_anti_strategy(tmp_path):
    records = [specimen_records()[0], specimen_records()[2]]
    results = results_of(write_store(tmp_path, records, index_for(records)))
    assert results["established-fact"].status == "SKIP"


# --- the per-record API ------------------------------------------------------------------------------


def test_check_record_returns_every_per_record_gate():
    verdicts = check_record(reference_kernel(), "records/r.json", GateContext(known_ids=frozenset({strategy()["id"]})))
    assert set(verdicts) == set(GATES) - {"index", "established-fact"}
    assert verdicts["ids"] == [
        "records/r.json: id: file is not named <id>.json for id "
        "'nvidia.hopper.triton.fused-softmax-h4096.final-kernel-r5d20b8'"
    ]


def test_run_gates_on_a_loaded_store_equals_the_directory_run(tmp_path):
    root = specimen_store(tmp_path)
    assert run_gates(load_store(root)) == run_store_gates(root, ())
