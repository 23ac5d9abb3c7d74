"""The opt-trace-1.0 profile: generated from clean-1.3 + the patch list, up to date, and only narrowing."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil

import pytest
import yaml

from optrace import SCHEMAS
from optrace.contracts import compile_schema
from optrace.errors import InputError
from optrace.gates import make_schema as ms
from optrace.gates.store.specimens import anti_strategy, reference_kernel, strategy
from optrace.gates.store.store import load_store
from tests.support.paths import SHARED_DATA

STORE = SHARED_DATA / "upstream-store"
BASE_FILE = SCHEMAS / "clean-1.3.schema.json"
PROFILE_FILE = SCHEMAS / "opt-trace-1.0.schema.json"


@pytest.fixture()
def schemas_copy(tmp_path):
    for name in ("clean-1.3.schema.json", ms.PATCHES_FILE, "opt-trace-1.0.schema.json"):
        shutil.copy(SCHEMAS / name, tmp_path / name)
    return tmp_path


def spec_and_base():
    return ms.read_spec(SCHEMAS / ms.PATCHES_FILE), json.loads(BASE_FILE.read_text(encoding="utf-8"))


def test_committed_profile_is_up_to_date(capsys):
    assert ms.main(["--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_profile_records_the_digest_of_our_base_file():
    profile = json.loads(PROFILE_FILE.read_text(encoding="utf-8"))
    assert profile["x-profile-of"]["base_sha256"] == hashlib.sha256(BASE_FILE.read_bytes()).hexdigest()
    assert profile["x-profile-of"]["base_file"] == "clean-1.3.schema.json"


def test_check_fails_when_the_base_changed(schemas_copy, capsys):
    base = json.loads((schemas_copy / "clean-1.3.schema.json").read_text())
    base["description"] += " Edited."
    (schemas_copy / "clean-1.3.schema.json").write_text(json.dumps(base, indent=2) + "\n")
    assert ms.main(["--check", "--schemas", str(schemas_copy)]) == 1
    err = capsys.readouterr().err
    assert "STALE" in err and "base schema changed" in err


def test_check_fails_when_a_patch_changed(schemas_copy, capsys):
    path = schemas_copy / ms.PATCHES_FILE
    spec = yaml.safe_load(path.read_text())
    spec["patches"][0]["schema"]["enum"].remove("reference-kernel")
    path.write_text(yaml.safe_dump(spec))
    assert ms.main(["--check", "--schemas", str(schemas_copy)]) == 1
    assert "STALE" in capsys.readouterr().err


def test_check_fails_when_the_profile_is_missing(schemas_copy, capsys):
    (schemas_copy / "opt-trace-1.0.schema.json").unlink()
    assert ms.main(["--check", "--schemas", str(schemas_copy)]) == 1
    assert "MISSING" in capsys.readouterr().err


def test_make_schema_rewrites_a_stale_profile(schemas_copy):
    (schemas_copy / "opt-trace-1.0.schema.json").write_text("{}\n")
    assert ms.main(["--schemas", str(schemas_copy)]) == 0
    assert (schemas_copy / "opt-trace-1.0.schema.json").read_text() == PROFILE_FILE.read_text()
    assert ms.main(["--check", "--schemas", str(schemas_copy)]) == 0


def test_show_prints_every_patch_with_its_reason(capsys):
    assert ms.main(["--show"]) == 0
    out = capsys.readouterr().out
    spec, _ = spec_and_base()
    assert len(spec.patches) >= 7
    for patch in spec.patches:
        assert patch.id in out and patch.reason in out


def test_profile_is_the_base_plus_one_conjunct_per_patch():
    """Narrowing by construction: strip the appended allOf entries and the labels, and the base remains."""
    spec, base = spec_and_base()
    profile = json.loads(PROFILE_FILE.read_text(encoding="utf-8"))
    n = len(spec.patches)
    assert profile["allOf"][-n:] == [ms.conjunct(p) for p in spec.patches]
    stripped = {k: v for k, v in profile.items() if k != "x-profile-of"}
    stripped["allOf"] = stripped["allOf"][:-n]
    labels = ("$id", "title", "description")
    assert {k: v for k, v in stripped.items() if k not in labels} == {k: v for k, v in base.items() if k not in labels}


def test_required_provenance_is_non_null_in_the_profile():
    profile = compile_schema(json.loads(PROFILE_FILE.read_text(encoding="utf-8")))
    record = strategy()
    assert profile(record) == []
    for key in ("source_repo", "version", "git_commit"):
        nulled = copy.deepcopy(record)
        nulled["evidence"]["raw"][key] = None
        assert profile(nulled), key
        dropped = copy.deepcopy(record)
        del dropped["evidence"]["raw"][key]
        assert profile(dropped), key


def test_specimens_satisfy_the_profile():
    profile = compile_schema(json.loads(PROFILE_FILE.read_text(encoding="utf-8")))
    for record in (strategy(), anti_strategy(), reference_kernel()):
        assert profile(record) == [], record["id"]


# --- every patch only narrows, and each one bites -----------------------------------------------------


def rule_record() -> dict:
    record = strategy()
    record["type"] = "numerics-rule"
    record["payload"] = {
        "goal": "Keep sums in fp32.",
        "problem": record["payload"]["problem"],
        "rule": "Accumulate in fp32.",
        "rationale": "fp16 sums overflow.",
    }
    return record


def candidates():
    """Specimens, every node of them deleted, retyped or given an unknown key, a record of another
    type, and the real store when present."""
    out = [rule_record()]
    for record in (strategy(), anti_strategy(), reference_kernel()):
        out.append(record)
        stack = [((), record)]
        while stack:
            path, node = stack.pop()
            children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            if isinstance(node, dict):
                extended = copy.deepcopy(record)
                target = extended
                for step in path:
                    target = target[step]
                target["zz_unknown"] = "x"
                out.append(extended)
            for key, child in children:
                stack.append((path + (key,), child))
                for value in ("DELETE", None, 0, "x", "v1", "generic", {}, []):
                    variant = copy.deepcopy(record)
                    target = variant
                    for step in path:
                        target = target[step]
                    if value == "DELETE":
                        del target[key]
                    else:
                        target[key] = value
                    out.append(variant)
    if STORE.is_dir():
        out += [f.record for f in load_store(STORE).files]
    return out


@pytest.fixture(scope="module")
def corpus():
    return candidates()


def test_every_patch_only_narrows_and_each_rejects_something(corpus):
    spec, base = spec_and_base()
    base_ok = [*map(compile_schema(base).is_valid, corpus)]
    full = compile_schema(ms.build_profile(spec, base, "0" * 64))
    for record, ok in zip(corpus, base_ok):
        assert not (full.is_valid(record) and not ok)
    for patch in spec.patches:
        alone = compile_schema(ms.build_profile(ms.ProfileSpec(spec.name, spec.base_file, (patch,)), base, "0" * 64))
        verdicts = [*map(alone.is_valid, corpus)]
        assert not any(v and not ok for v, ok in zip(verdicts, base_ok)), f"{patch.id} widens"
        assert any(ok and not v for v, ok in zip(verdicts, base_ok)), f"{patch.id} rejects nothing"


# --- a bad patch list is refused with the patch named --------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        ({"at": "evidence.rwa"}, "evidence.rwa is not declared"),
        ({"schema": {"required": ["commit_sha"]}}, "'commit_sha'"),
        ({"when": "recipe"}, "not a record type"),
        ({"reason": "  "}, "needs a reason"),
        ({"colour": "red"}, "unknown key"),
    ],
)
def test_bad_patch_is_refused_naming_it(schemas_copy, change, message):
    path = schemas_copy / ms.PATCHES_FILE
    spec = yaml.safe_load(path.read_text())
    spec["patches"][2].update(change)
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as info:
        ms.generate(schemas_copy)
    assert message in str(info.value)


def test_duplicate_patch_id_is_refused(schemas_copy):
    path = schemas_copy / ms.PATCHES_FILE
    spec = yaml.safe_load(path.read_text())
    spec["patches"].append(dict(spec["patches"][0]))
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError, match="appears twice"):
        ms.generate(schemas_copy)
