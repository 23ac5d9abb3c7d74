"""Nested --config values arrive as strings; numbers and booleans the schema asks for are converted."""

import pytest
import yaml

from optrace.example.repo_builder import make_bundle
from optrace.run.configcheck import coerce_numbers, config_problem, trace_problem
from tests.support import tracekit
from tests.support.paths import ROOT, SCHEMAS
from tests.support.workflow import run_snakemake

SCHEMA = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())


def test_numbers_and_booleans_from_strings():
    got = coerce_numbers(
        {
            "ladder": {"milestone_pct": "2.5", "mega_pct": "20"},
            "distill": {"batch_size": "4"},
            "dataset": {"csv": "true"},
        },
        SCHEMA,
    )
    assert got == {
        "ladder": {"milestone_pct": 2.5, "mega_pct": 20.0},
        "distill": {"batch_size": 4},
        "dataset": {"csv": True},
    }


def test_what_does_not_parse_is_left_for_the_schema_to_reject():
    got = coerce_numbers(
        {
            "ladder": {"milestone_pct": "abc"},
            "distill": {"batch_size": "2.5"},
            "dataset": {"csv": "yes"},
            "trace": "123",
        },
        SCHEMA,
    )
    assert got == {
        "ladder": {"milestone_pct": "abc"},
        "distill": {"batch_size": "2.5"},
        "dataset": {"csv": "yes"},
        "trace": "123",
    }


# --- one-line errors: the key, the problem, what is allowed -------------------------------------


@pytest.mark.parametrize(
    "config, line",
    [
        (
            {"ladder": {"milestone_pct": -1}},
            "config: `ladder.milestone_pct`: -1 is too small; allowed: a number above 0",
        ),
        (
            {"ladder": {"megapct": 3}},
            "config: unknown key `ladder.megapct`; allowed under ladder: mega_pct, milestone_pct, rebaseline_factor",
        ),
        (
            {"distill": {"mode": "llm"}},
            "config: `distill.mode`: 'llm' is not allowed; allowed values: draft, agent, none",
        ),
        ({"distill": {"batch_size": "2.5"}}, "config: `distill.batch_size`: '2.5' is not a whole number"),
        ({"strict": "yes"}, "config: `strict`: 'yes' is not true or false"),
        ({"results": ""}, "config: `results`: must not be empty"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key_the_problem_and_what_is_allowed(config, line):
    assert config_problem(config, SCHEMA) == line


def test_an_unknown_top_level_key_lists_the_allowed_keys():
    line = config_problem({"trace": "", "tracez": "x"}, SCHEMA)
    assert line.startswith("config: unknown key `tracez`; allowed: ")
    assert set(line.split("allowed: ")[1].split(", ")) == set(SCHEMA["properties"])


def test_the_defaults_are_valid():
    assert config_problem(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), SCHEMA) is None


def test_trace_paths_that_cannot_be_a_trace(tmp_path):
    tracekit.iteration_era(tmp_path / "repo")
    (tmp_path / "plain").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "fake.bundle").write_text("not a bundle\n")
    bundle = make_bundle(tmp_path / "repo", tmp_path / "real.bundle")
    assert trace_problem(str(tmp_path / "repo")) is None and trace_problem(str(bundle)) is None
    assert trace_problem(str(tmp_path / "absent")).startswith("trace not found")
    assert trace_problem(str(tmp_path / "plain")).startswith("not a git work tree")
    assert trace_problem(str(tmp_path / "notes.txt")) == "a trace file must be a git bundle ending in .bundle"
    assert trace_problem(str(tmp_path / "fake.bundle")) == (
        "not a readable git bundle (it does not start with '# v2 git bundle' or '# v3 git bundle')"
    )


@pytest.mark.workflow
def test_snakemake_stops_with_one_line_before_any_job(workdir, tmp_path):
    for args, line in [
        (
            ("--config", "ladder={mega_pct: 0}"),
            "error: config: `ladder.mega_pct`: 0 is too small; allowed: a number above 0",
        ),
        (
            ("--config", f"trace={tmp_path / 'absent'}"),
            f"error: config: `trace`: {tmp_path / 'absent'}: trace not found (give a git work tree or a .bundle file)",
        ),
    ]:
        res = run_snakemake(workdir, *args, check=False)
        assert res.returncode == 1
        said = [
            ln
            for ln in res.stderr.splitlines()
            if not ln.startswith(("Using workflow specific profile", "Config file"))
        ]
        assert said == [line], res.stderr
        assert not (workdir / "results").exists()  # no job ran
