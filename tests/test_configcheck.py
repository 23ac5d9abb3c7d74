"""Nested --config values arrive as strings; numbers and booleans the schema asks for are converted."""

import yaml

from conftest import ROOT
from optrace.configcheck import coerce_numbers

SCHEMA = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())


def test_numbers_and_booleans_from_strings():
    got = coerce_numbers({"ladder": {"milestone_pct": "2.5", "mega_pct": "20"}, "distill": {"batch_size": "4"},
                          "dataset": {"csv": "true"}}, SCHEMA)
    assert got == {"ladder": {"milestone_pct": 2.5, "mega_pct": 20.0}, "distill": {"batch_size": 4},
                   "dataset": {"csv": True}}


def test_what_does_not_parse_is_left_for_the_schema_to_reject():
    got = coerce_numbers({"ladder": {"milestone_pct": "abc"}, "distill": {"batch_size": "2.5"}, "dataset": {"csv": "yes"},
                          "trace": "123"}, SCHEMA)
    assert got == {"ladder": {"milestone_pct": "abc"}, "distill": {"batch_size": "2.5"}, "dataset": {"csv": "yes"},
                   "trace": "123"}
