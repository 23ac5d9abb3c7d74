"""One place per default: the config schema defines every default; `config/config.yaml`, the table in
`config/README.md` and the code's own fallbacks (ladder thresholds, argparse defaults) must repeat it."""

import re

import yaml

from optrace.dataset import build as dataset
from optrace.ingest.ingest import DEFAULT_NON_TARGET
from optrace.mine.ladder import Thresholds
from optrace.scrub.leak_patterns import DENYLIST_ENV
from tests.support.paths import ROOT, SCHEMAS

SCHEMA = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
README = (ROOT / "config" / "README.md").read_text()


def leaf_defaults(schema, prefix=""):
    """Dotted key -> default of every leaf property of the schema."""
    out = {}
    for key, prop in schema["properties"].items():
        name = f"{prefix}{key}"
        if prop.get("type") == "object" and "properties" in prop:
            out.update(leaf_defaults(prop, name + "."))
        else:
            assert "default" in prop, f"{name} has no default in the schema"
            out[name] = prop["default"]
    return out


def config_value(dotted):
    node = CONFIG
    for part in dotted.split("."):
        node = node[part]
    return node


DEFAULTS = leaf_defaults(SCHEMA)


def test_config_yaml_holds_exactly_the_schema_defaults():
    assert {k: config_value(k) for k in DEFAULTS} == DEFAULTS
    flat = set()

    def walk(node, prefix=""):
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat.add(f"{prefix}{key}")

    walk(CONFIG)
    assert flat == set(DEFAULTS), "config.yaml and the schema name different keys"


def readme_defaults():
    rows = re.findall(r"^\| `([\w.]+)` \| (.+?) \| ", README, flags=re.M)
    return dict(rows)


def rendered(value):
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    return f"`{value}`"


def test_readme_table_states_every_default_as_the_schema_does():
    table = readme_defaults()
    assert set(table) == set(DEFAULTS), "config/README.md's table and the schema name different keys"
    for key, value in DEFAULTS.items():
        if isinstance(value, list):
            continue  # described in words (`non_target_kernels`); its value is checked against the code below
        assert table[key] == rendered(value), key


def test_code_fallbacks_equal_the_schema_defaults():
    assert Thresholds() == Thresholds(
        DEFAULTS["ladder.milestone_pct"], DEFAULTS["ladder.mega_pct"], DEFAULTS["ladder.rebaseline_factor"]
    )
    assert DEFAULTS["denylist_env"] == DENYLIST_ENV
    assert list(DEFAULT_NON_TARGET) == DEFAULTS["non_target_kernels"]
    assert DEFAULTS["dataset.test_fraction"] == dataset.DEFAULT_TEST_FRACTION
