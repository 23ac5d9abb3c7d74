"""Stage code closures (optrace.run.codedigest): a stage re-runs when a module it runs changes, and only then."""

from __future__ import annotations

from optrace import PACKAGE_DIR
from optrace.cli import MODULES
from optrace.run import codedigest


def files(command: str) -> set[str]:
    entry = MODULES[command].partition(".")[2]
    return {p.relative_to(PACKAGE_DIR).as_posix() for p in codedigest.closure(PACKAGE_DIR, entry)}


def test_stages_using_the_store_gates_include_the_modules_that_define_them():
    for command in ("validate", "check-store", "gate"):
        assert {"gates/store/runner.py", "gates/store/model.py", "gates/store/store.py"} <= files(command), command


def test_distill_includes_the_phrases_its_drafts_must_satisfy_and_no_gate():
    # the drafter writes to the gates' phrase lists (optrace.facts) but runs no gate: editing a gate must not
    # re-run an agent's distillation (validation re-judges the records)
    distill = files("distill")
    assert {"distill/drafter.py", "facts.py"} <= distill
    assert not {f for f in distill if f.startswith("gates/")}, distill


def test_ingest_includes_the_validator_of_its_hardware_table_and_no_gate():
    ingest = files("ingest")
    assert {"ingest/hardware.py", "contracts.py"} <= ingest
    assert not {f for f in ingest if f.startswith("gates/")}, "editing a gate would re-run every trace's ingest"


# --- the imports cache kept across Snakemake starts ---------------------------------------------


def package(root, files):
    for name, text in files.items():
        path = root / "optrace" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "optrace"


def fresh_run():
    """What a new controller process starts with: no per-run memo, no cache loaded."""
    codedigest._imports.cache_clear()
    codedigest._module_path.cache_clear()
    codedigest.closure.cache_clear()
    codedigest.digest.cache_clear()
    codedigest.data_files.cache_clear()
    codedigest._CACHE.clear()
    codedigest._DIRTY[0] = False


def names(pkg, entry):
    return [str(p.relative_to(pkg)) for p in codedigest.closure(pkg, entry)]


def test_the_cache_gives_the_same_closure_and_a_changed_module_is_read_again(tmp_path):
    pkg = package(
        tmp_path,
        {
            "__init__.py": "",
            "stage.py": "from .helper import f\n",
            "helper.py": "def f():\n    from . import late\n",
            "late.py": "",
            "other.py": "",
        },
    )
    cache = tmp_path / "cache.json"
    fresh_run()
    before = (names(pkg, "stage"), codedigest.digest(pkg, "stage"))
    assert before[0] == ["__init__.py", "helper.py", "late.py", "stage.py"]  # an import inside a function counts
    codedigest.save_cache(cache)
    fresh_run()
    codedigest.load_cache(cache)
    assert (names(pkg, "stage"), codedigest.digest(pkg, "stage")) == before
    assert codedigest._DIRTY == [False]  # nothing was parsed: every file's content was in the cache
    # an edit that adds an import: its bytes are not in the cache, so it is parsed and the closure grows
    (pkg / "helper.py").write_text("def f():\n    from . import late, other\n")
    fresh_run()
    codedigest.load_cache(cache)
    assert names(pkg, "stage") == ["__init__.py", "helper.py", "late.py", "other.py", "stage.py"]
    assert codedigest.digest(pkg, "stage") != before[1]


def test_an_unreadable_or_malformed_cache_is_ignored(tmp_path):
    pkg = package(tmp_path, {"__init__.py": "", "stage.py": "import optrace.helper\n", "helper.py": ""})
    fresh_run()
    expected = names(pkg, "stage")
    for text in ("{not json", '["a list"]', '{"k": "not a list"}', '{"k": [1, 2]}'):
        (tmp_path / "cache.json").write_text(text)
        fresh_run()
        codedigest.load_cache(tmp_path / "cache.json")
        assert names(pkg, "stage") == expected == ["__init__.py", "helper.py", "stage.py"]
    fresh_run()
    codedigest.load_cache(tmp_path / "absent.json")
    assert names(pkg, "stage") == expected


# --- package data named by a module is part of its closure ------------------------------------------


def test_the_package_data_a_stage_reads_is_in_its_digest_not_another_stages(tmp_path):
    fresh_run()
    pkg = package(
        tmp_path,
        {
            "__init__.py": 'SCHEMAS = "schemas"\nDEFAULT = "shared.yaml"\n',
            "reader.py": 'from pathlib import Path\nSCHEMA = Path(__file__).parent / "schemas" / "x.schema.json"\n',
            "other.py": 'NOTE = "not a data file name: x.schema"\n',
            "schemas/x.schema.json": '{"type": "object"}\n',
            "shared.yaml": "a: 1\n",
        },
    )
    assert "schemas/x.schema.json" in names(pkg, "reader")
    assert "shared.yaml" not in names(pkg, "reader")  # named by __init__, for the module that reads it
    before = {m: codedigest.digest(pkg, m) for m in ("reader", "other")}
    (pkg / "schemas" / "x.schema.json").write_text('{"type": "array"}\n')
    fresh_run()
    after = {m: codedigest.digest(pkg, m) for m in ("reader", "other")}
    assert after["reader"] != before["reader"] and after["other"] == before["other"]


def test_the_schemas_and_the_brief_travel_with_the_stages_that_read_them():
    fresh_run()
    assert {"schemas/clean-1.3.schema.json", "schemas/opt-trace-1.0.schema.json"} <= files("validate")
    assert "distill/brief.md" in files("distill")
    assert "schemas/targets.schema.yaml" in files("ingest")
    assert not {f for f in files("partition") if not f.endswith(".py")}
