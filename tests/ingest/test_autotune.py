"""Helion autotune telemetry ingest (issue 6 item 1): join, exclusions, old formats, determinism, schema."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from optrace import cli
from optrace.ingest.autotune import AutotuneSet, find_autotune_sets, ingest_autotune, main
from optrace.ingest.autotune_csv import LEAN_HEADER, compact_config, config_from_repr, config_id_of
from optrace.ingest.trace_files import WorkTreeFiles
from tests.support.paths import EXAMPLE_SOURCES, ROOT, SCHEMAS

SAMPLES = ROOT.parent / "shared" / "data" / "samples" / "helion"
# the embedded example trace carries our own autotune pair under autotune/ci/
FIXTURE = EXAMPLE_SOURCES
FIXTURE_CSV = "autotune/ci/autotune-fused_add_rmsnorm.csv"
FIXTURE_META = "autotune/ci/autotune-fused_add_rmsnorm.meta.jsonl"
SCHEMA = json.loads((SCHEMAS / "autotune.schema.json").read_text())

R1 = "bd1c0cde23c64303a7225cc573c02033e9b62f151b331359c88d2d42b0bd10ed"  # fused_add_rmsnorm, batch 64, two records
R2 = "36076ddde1fee6e32ef5bd264e947210c025a8602a3b9af72f6f7ac4ebbe7e48"  # fused_add_rmsnorm, batch 4096
HEADER = ",".join(LEAN_HEADER) + "\n"


def ingest(root: Path):
    return ingest_autotune(WorkTreeFiles(root))


def fixture_trace(tmp_path: Path) -> Path:
    root = tmp_path / "trace"
    shutil.copytree(FIXTURE, root)
    return root


def assert_accounted(report) -> None:
    """Every data row read is joined, dropped as started, or excluded for a counted reason."""
    assert report.rows_read == report.rows_joined + report.started_dropped + sum(report.excluded.values())
    assert sum(report.excluded_no_meta.values()) == report.excluded["no_meta"]


def csv_lines(root: Path, rel: str = FIXTURE_CSV) -> list[str]:
    return (root / rel).read_text().splitlines(keepends=True)


def meta_records(root: Path, rel: str = FIXTURE_META) -> list[dict]:
    return [json.loads(line) for line in (root / rel).read_text().splitlines()]


def write_meta(root: Path, records: list[dict], rel: str = FIXTURE_META) -> None:
    (root / rel).write_text("".join(json.dumps(r) + "\n" for r in records))


def by_config(rows, run_id: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in rows:
        if r.run_id == run_id:
            out.setdefault(r.config_id, []).append(r)
    return out


# ---------------------------------------------------------------- every row joins


def test_sample_pair_joins_every_row(tmp_path):
    if not (SAMPLES / "autotune-add.csv").is_file():
        pytest.skip("shared Helion sample not present")
    root = tmp_path / "trace"
    (root / "autotune").mkdir(parents=True)
    for name in ("autotune-add.csv", "autotune-add.meta.jsonl"):
        shutil.copy(SAMPLES / name, root / "autotune" / name)
    result = ingest(root)
    rep = result.report
    assert_accounted(rep)
    assert (rep.rows_read, rep.started_dropped, rep.rows_joined) == (24, 12, 12)
    assert sum(rep.excluded.values()) == 0 and not rep.unjoinable_files and not rep.tampered_config_ids
    assert not rep.problems and rep.unverified_config_text == 0
    assert {r.run_id for r in result.rows} == {
        "756575213c0ac03068204524a37d3511f654fb1046f4c16d70de57653efc2ee8",
        "78a753266dc4af61f8594890db69afc646741d6cdc33fba8961d87ac474f6fe6",
    }
    assert sorted(r.status for r in result.rows) == ["error"] * 2 + ["ok"] * 9 + ["timeout"]
    for row in result.rows:
        assert hashlib.sha256(row.config.encode()).hexdigest()[:16] == row.config_id
        assert row.context.hardware == "NVIDIA H100" and row.context.backend == "triton"


def test_fixture_pair_joins_every_row():
    result = ingest(FIXTURE)
    rep = result.report
    assert_accounted(rep)
    assert rep.sets == [AutotuneSet(FIXTURE_CSV, FIXTURE_META)]
    assert (rep.rows_read, rep.started_dropped, rep.rows_joined) == (17, 8, 9)
    assert sum(rep.excluded.values()) == 0 and not rep.unjoinable_files and not rep.tampered_config_ids
    assert not rep.problems and not rep.context_conflicts
    assert sorted(r.status for r in result.rows) == [
        "deduplicated",
        "error",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "peer_compilation_fail",
        "timeout",
    ]
    shapes = {r.run_id: r.context.input_shapes for r in result.rows}
    assert shapes == {R1: "[(64, 4096), (64, 4096), (4096,)]", R2: "[(4096, 4096), (4096, 4096), (4096,)]"}
    # the config is the meta map's dict, compact and key-sorted, i.e. exactly what config_id hashes
    meta_configs = {cid: c for rec in meta_records(FIXTURE) for cid, c in rec["configs"].items()}
    for row in result.rows:
        assert json.loads(row.config) == meta_configs[row.config_id]
        assert row.config == compact_config(meta_configs[row.config_id])


# ---------------------------------------------------------------- exclusions


def test_run_without_meta_record_is_excluded_and_counted(tmp_path):
    root = fixture_trace(tmp_path)
    orphan = "a" * 64  # e.g. a crashed run: rows were flushed, the meta line never written
    lines = csv_lines(root)[1:3]  # a started row and its ok row
    with open(root / FIXTURE_CSV, "a", newline="") as fh:
        fh.writelines(ln.replace(R1, orphan) for ln in lines)
    # a restricted search (configs=[...]) writes its own base with no sidecar at all
    pinned = "".join(ln.replace(R1, "b" * 64) for ln in lines)
    (root / "autotune" / "pinned.csv").write_text(HEADER + pinned)
    rep = ingest(root).report
    assert_accounted(rep)
    assert rep.excluded_no_meta == {orphan: 1, "b" * 64: 1}
    assert rep.excluded["no_meta"] == 2
    assert rep.rows_joined == 9  # the fixture's own rows are untouched
    assert AutotuneSet("autotune/pinned.csv", None) in rep.sets


def test_two_meta_lines_with_one_run_id_union_their_configs(tmp_path):
    root = fixture_trace(tmp_path)
    records = meta_records(root)
    first, second = [r for r in records if r["run_id"] == R1]
    only_first = set(first["configs"]) - set(second["configs"])
    only_second = set(second["configs"]) - set(first["configs"])
    assert only_first and only_second  # the fixture's two invocations registered different configs
    joined = by_config(ingest(root).rows, R1)
    assert only_first | only_second <= set(joined)
    # without the union, the second invocation's configs would have nowhere to resolve
    write_meta(root, [r for r in records if r is not second])
    rep = ingest(root).report
    assert_accounted(rep)
    assert rep.excluded["config_not_in_meta"] == sum(len(joined[c]) for c in only_second)


def test_tampered_config_id_in_csv_is_reported_and_row_excluded(tmp_path):
    root = fixture_trace(tmp_path)
    lines = csv_lines(root)
    ok_line = lines[2]  # R1, config A, ok
    cells = ok_line.split(",", 3)
    other = next(c for c in meta_records(root)[0]["configs"] if c != cells[2])  # an id the map knows
    lines[2] = ",".join([cells[0], cells[1], other, cells[3]])
    (root / FIXTURE_CSV).write_text("".join(lines))
    result = ingest(root)
    rep = result.report
    assert_accounted(rep)
    assert [t.to_json() for t in rep.tampered_config_ids] == [
        {"where": f"{FIXTURE_CSV}:3", "stated": other, "recomputed": cells[2]}
    ]
    assert rep.excluded["tampered_config_id"] == 1 and rep.rows_joined == 8
    # the row is gone, not re-attributed to the config its forged id names
    assert all(r.perf_ms != 0.012288 for r in result.rows)


def test_tampered_config_id_in_meta_is_reported(tmp_path):
    root = fixture_trace(tmp_path)
    records = meta_records(root)
    r2 = next(r for r in records if r["run_id"] == R2)
    f_id = next(c for c, cfg in r2["configs"].items() if cfg["block_sizes"] == [4] and cfg["num_stages"] == 2)
    r2["configs"][f_id]["num_warps"] = 32  # content edited, key kept
    write_meta(root, records)
    rep = ingest(root).report
    assert_accounted(rep)
    assert len(rep.tampered_config_ids) == 1
    t = rep.tampered_config_ids[0]
    assert t.where == f"{FIXTURE_META}:2: configs" and t.stated == f_id
    assert t.recomputed == config_id_of(r2["configs"][f_id])
    assert rep.excluded["tampered_config_id"] == 1  # F's ok row; its started row is dropped anyway
    assert rep.rows_joined == 8


def test_old_header_and_headerless_csvs_are_unjoinable_not_a_crash(tmp_path):
    root = fixture_trace(tmp_path)
    at = root / "autotune"
    body = "".join(csv_lines(root)[1:])
    (at / "pre2770.csv").write_text(
        "kernel_id,sample_id,timestamp_s,config_index,generation,status,perf_ms,compile_time_s,config\n"
        'k1,s1,0.10,1,0,ok,0.5,0.4,"Config(num_warps=4)"\n'
    )
    (at / "pre2770.meta.json").write_text('{"kernel_id": "k1"}\n')
    (at / "pre2699.csv").write_text(
        "timestamp_s,config_index,generation,status,perf_ms,compile_time_s,config\n0.10,1,0,ok,0.5,0.4,x\n"
    )
    (at / "noheader.csv").write_text(body)
    (at / "empty.csv").write_text("")
    (at / "latin1.csv").write_bytes(HEADER.encode() + b"\xe9\n")
    (at / "broken.csv").write_text(HEADER + 'x,"unterminated\n')
    rep = ingest(root).report
    assert_accounted(rep)
    reasons = {p.where: p.problem for p in rep.unjoinable_files}
    names = ("pre2770", "pre2699", "noheader", "empty", "latin1")
    assert set(reasons) == {f"autotune/{n}.csv" for n in names}
    assert "kernel_id, sample_id" in reasons["autotune/pre2770.csv"]
    assert "no ids" in reasons["autotune/pre2699.csv"]
    assert reasons["autotune/noheader.csv"].startswith("no header row")
    assert reasons["autotune/empty.csv"].startswith("empty file")
    assert reasons["autotune/latin1.csv"] == "not UTF-8 (byte 77)"
    # a torn last line of a merged-format file is one malformed row, not a lost file
    assert rep.excluded["malformed"] == 1 and rep.problems[0].where == "autotune/broken.csv:2"
    assert rep.rows_joined == 9


def test_malformed_rows_and_meta_lines_are_reported(tmp_path):
    root = fixture_trace(tmp_path)
    lines = csv_lines(root)
    lines[2] = lines[2].replace(",ok,", ",filtered,")  # never written by Helion
    lines[4] = lines[4][:40] + "\n"  # truncated
    lines[8] = lines[8].replace(",ok,0.089088,", ",ok,0.000000,")  # R2's ok row: zero is no measurement
    (root / FIXTURE_CSV).write_text("".join(lines))
    with open(root / FIXTURE_META, "a") as fh:
        fh.write('{"run_id": "short"}\n{not json\n')
    rep = ingest(root).report
    assert_accounted(rep)
    assert rep.excluded["malformed"] == 3
    wheres = [p.where for p in rep.problems]
    assert wheres == [
        f"{FIXTURE_CSV}:3",
        f"{FIXTURE_CSV}:5",
        f"{FIXTURE_CSV}:9",
        f"{FIXTURE_META}:4",
        f"{FIXTURE_META}:5",
    ]


def test_csv_that_cannot_be_tokenised_is_unjoinable(tmp_path):
    root = fixture_trace(tmp_path)
    torn = f'{R1},0.1,{"b" * 16},0,ok,0.1,0.1,"' + "x" * 200_000  # the quote never closes
    (root / "autotune" / "torn.csv").write_text(HEADER + torn)
    rep = ingest(root).report
    assert [(p.where, p.problem.split(":")[0]) for p in rep.unjoinable_files] == [
        ("autotune/torn.csv", "not parseable as CSV at line 2")
    ]
    assert rep.rows_joined == 9


def test_unreadable_config_cell_joins_through_the_meta_map_and_is_counted(tmp_path):
    root = fixture_trace(tmp_path)
    lines = csv_lines(root)
    head, _, _ = lines[2].rpartition(',"Config(')
    lines[2] = head + ',"<config>"\r\n'
    (root / FIXTURE_CSV).write_text("".join(lines))
    rep = ingest(root).report
    assert (rep.rows_joined, rep.unverified_config_text, rep.tampered_config_ids) == (9, 1, [])


def test_records_of_one_run_id_that_disagree_are_named(tmp_path):
    root = fixture_trace(tmp_path)
    records = meta_records(root)
    records[2]["hardware"] = "NVIDIA A100-SXM4-80GB"  # a genuine record cannot differ: hardware is hashed into run_id
    write_meta(root, records)
    result = ingest(root)
    assert result.report.context_conflicts == [R1]
    assert {r.context.hardware for r in result.rows if r.run_id == R1} == {"NVIDIA H100"}


# ---------------------------------------------------------------- statuses


def test_started_rows_are_dropped():
    result = ingest(FIXTURE)
    raw = csv_lines(FIXTURE)[1:]
    assert result.report.started_dropped == sum(",started," in ln for ln in raw) == 8
    assert all(r.status != "started" for r in result.rows)


def test_infeasible_statuses_are_labelled():
    rows = ingest(FIXTURE).rows
    infeasible = [r for r in rows if r.status in ("error", "timeout", "peer_compilation_fail")]
    assert sorted(r.status for r in infeasible) == ["error", "peer_compilation_fail", "timeout"]
    assert all(r.perf_ms is None for r in infeasible)
    assert all(r.perf_ms and r.perf_ms > 0 for r in rows if r.status in ("ok", "deduplicated"))
    assert next(r for r in infeasible if r.status == "timeout").compile_time_s == 60.0


def test_deduplicated_takes_its_representatives_value(tmp_path):
    rows = by_config(ingest(FIXTURE).rows, R2)
    (dedup,) = [r for rs in rows.values() for r in rs if r.status == "deduplicated"]
    (rep_row,) = [r for rs in rows.values() for r in rs if r.status == "ok"]
    assert dedup.config_id != rep_row.config_id
    assert dedup.perf_ms == rep_row.perf_ms == 0.089088
    assert dedup.compile_time_s is None  # an alias is never compiled
    # an alias row without the representative's value cannot be resolved from the main CSV
    root = fixture_trace(tmp_path)
    text = (root / FIXTURE_CSV).read_text().replace(",deduplicated,0.089088,", ",deduplicated,,")
    (root / FIXTURE_CSV).write_text(text)
    rep = ingest(root).report
    assert_accounted(rep)
    assert rep.excluded["deduplicated_unresolved"] == 1


# ---------------------------------------------------------------- files and ids


def test_sets_follow_the_base_path_rules(tmp_path):
    root = tmp_path / "t"
    files = {
        "autotune/a/run.v2.csv": HEADER,
        "autotune/a/run.v2.meta.jsonl": "",  # dotted base kept its stem
        "autotune/a/run.v2.sources.csv": "run_id,timestamp_s,config_id,generation,status,source_hash\n",
        "autotune/b.csv": HEADER,
        "autotune/b.log": "[0s] hi\n",
        "elsewhere/c.csv": HEADER,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert find_autotune_sets(WorkTreeFiles(root)) == [
        AutotuneSet("autotune/a/run.v2.csv", "autotune/a/run.v2.meta.jsonl"),
        AutotuneSet("autotune/b.csv", None),
    ]


def test_a_csv_symlinked_out_of_the_trace_is_not_read(tmp_path):
    root = fixture_trace(tmp_path)
    outside = tmp_path / "outside.csv"
    outside.write_text(HEADER)
    (root / "autotune" / "evil.csv").symlink_to(outside)
    assert [s.csv for s in ingest(root).report.sets] == [FIXTURE_CSV]


def test_config_repr_round_trips_to_its_id():
    config = {
        "num_warps": 4,
        "block_sizes": [1, 64],
        "range_flattens": [None],
        "flatten_loops": [True],
        "pid_type": "flat",
    }
    text = "Config(" + ", ".join(f"{k}={v!r}" for k, v in sorted(config.items())) + ")"
    assert config_from_repr(text) == config
    assert config_id_of(config_from_repr(text)) == config_id_of(config)
    assert config_from_repr("Config(x=<object at 0x1>)") is None
    assert config_from_repr("dict(num_warps=4)") is None


# ---------------------------------------------------------------- CLI, determinism, schema


def test_rerun_gives_byte_identical_output(tmp_path):
    root = fixture_trace(tmp_path)
    (root / "autotune" / "pre2770.csv").write_text("kernel_id,sample_id,config\n")
    outs = []
    for i in range(2):
        out, rep = tmp_path / f"o{i}" / "autotune.jsonl", tmp_path / f"o{i}" / "report.json"
        assert main([str(root), "--out", str(out), "--report", str(rep)]) == 0
        outs.append((out.read_bytes(), rep.read_bytes()))
    assert outs[0] == outs[1]
    lines = outs[0][0].decode().splitlines()
    assert len(lines) == 9
    keys = [(r["run_id"], r["generation"], r["config_id"]) for r in map(json.loads, lines)]
    assert keys == sorted(keys)


def test_trace_without_autotune_gives_empty_output(tmp_path):
    (tmp_path / "trace").mkdir()
    out = tmp_path / "autotune.jsonl"
    assert main([str(tmp_path / "trace"), "--out", str(out)]) == 0
    assert out.read_bytes() == b""


def test_missing_trace_is_an_input_error(tmp_path, capsys):
    assert cli.main(["autotune", str(tmp_path / "nope"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_rows_validate_against_the_schema(tmp_path):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    rows = [r.to_json() for r in ingest(FIXTURE).rows]
    if (SAMPLES / "autotune-add.csv").is_file():
        root = tmp_path / "sample"
        (root / "autotune").mkdir(parents=True)
        for name in ("autotune-add.csv", "autotune-add.meta.jsonl"):
            shutil.copy(SAMPLES / name, root / "autotune" / name)
        rows += [r.to_json() for r in ingest(root).rows]
    for row in rows:
        validator.validate(row)
    # the schema is strict: no extra field, no perf on a failure, no missing perf on a success
    ok = next(r for r in rows if r["status"] == "ok")
    assert not validator.is_valid({**ok, "timestamp_s": 1.0})
    assert not validator.is_valid({**ok, "status": "error"})
    assert not validator.is_valid({**ok, "perf_ms": None})
    assert not validator.is_valid({**ok, "status": "started", "perf_ms": None})


def test_example_pair_is_about_the_examples_own_kernel_and_gpu():
    """The embedded example is a fused add + RMSNorm (hidden 4096, bfloat16) on an H100: its telemetry
    must be too, and its ids must be Helion's own formulas over its own content (§5)."""
    from optrace.example.embedded import EXAMPLE_DIR
    from optrace.ingest.autotune_meta import codegen_signature
    from optrace.ingest.hardware import HardwareTable

    definition = json.loads((EXAMPLE_DIR / "meta" / "definition.json").read_text())
    solution = json.loads((EXAMPLE_DIR / "meta" / "solution.json").read_text())
    table = HardwareTable.load()
    (example_gpu,) = {table.match(h).product for h in solution["spec"]["target_hardware"]}
    records = meta_records(FIXTURE)
    assert len(records) == 3
    for rec in records:
        assert definition["name"].startswith(rec["kernel_name"])
        assert table.match(rec["hardware"]).product == example_gpu
        dtypes = {v["dtype"] for v in definition["inputs"].values()}
        assert rec["dtypes"] == str([f"torch.{d}" for d in ["bfloat16"] * 3]) and dtypes == {"bfloat16"}
        assert all(s[-1] == definition["axes"]["hidden_size"]["value"] for s in ast.literal_eval(rec["input_shapes"]))
        parts = [
            rec["kernel_source"],
            codegen_signature(rec["settings"]),
            rec["input_shapes"],
            rec["dtypes"],
            rec["hardware"],
        ]
        assert hashlib.sha256("\x00".join(parts).encode()).hexdigest() == rec["run_id"]
        assert all(config_id_of(c) == cid for cid, c in rec["configs"].items())


def test_codegen_signature_recomputes_helions_run_id_on_the_shared_sample():
    if not (SAMPLES / "autotune-add.meta.jsonl").is_file():
        pytest.skip("shared Helion sample not present")
    from optrace.ingest.autotune_meta import codegen_signature

    for line in (SAMPLES / "autotune-add.meta.jsonl").read_text().splitlines():
        rec = json.loads(line)
        parts = [
            rec["kernel_source"],
            codegen_signature(rec["settings"]),
            rec["input_shapes"],
            rec["dtypes"],
            rec["hardware"],
        ]
        assert hashlib.sha256("\x00".join(parts).encode()).hexdigest() == rec["run_id"]
        rec["settings"]["static_shapes"] = not rec["settings"]["static_shapes"]
        assert codegen_signature(rec["settings"]) != parts[1]
