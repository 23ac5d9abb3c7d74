"""The workflow's config, loaded and checked in one call (`checked`), before any job.

Values are typed as the schema types them, checked with one line naming the bad key, completed with
the schema's defaults (as `snakemake.utils.validate` fills them), and a `trace` path is checked to be
a trace. Every problem is an InputError("config", ...).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from optrace import SCHEMAS
from optrace.errors import InputError
from optrace.run.configcheck import coerce_numbers, config_problem, trace_problem
from optrace.run.sheet import is_url, url_problem

CONFIG_SCHEMA = SCHEMAS / "config.schema.yaml"


def with_defaults(value: Any, schema: dict) -> Any:
    """`value` with every missing property that has a `default` filled in, at any depth."""
    if not (isinstance(value, dict) and schema.get("type") == "object"):
        return value
    out = dict(value)
    for key, sub in schema.get("properties", {}).items():
        if key not in out and "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
        if key in out:
            out[key] = with_defaults(out[key], sub)
    return out


def checked(config: dict, schema_path: Path = CONFIG_SCHEMA) -> dict:
    """The config as the stages read it, or an InputError naming the first bad key."""
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    typed = coerce_numbers(dict(config), schema)
    if problem := config_problem(typed, schema):
        raise InputError("config", problem.removeprefix("config: "))
    full = with_defaults(typed, schema)
    check = url_problem if is_url(full["trace"]) else trace_problem
    if full["trace"] and (problem := check(full["trace"])):
        raise InputError("config", f"`trace`: {full['trace']}: {problem}")
    return dict(full)
