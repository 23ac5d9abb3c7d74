"""Config values as the schema types them.

Snakemake hands the leaves of a nested `--config key={a: 2.0}` over as strings ('2.0'), so a
numeric or boolean setting given on the command line would fail validation. Strings that parse as
the number or boolean the schema asks for are converted before validation; anything else is left for
the schema to reject.
"""

from __future__ import annotations


def coerce_numbers(value, schema: dict):
    kind = schema.get("type")
    if isinstance(value, str) and kind in ("number", "integer"):
        try:
            number = float(value)
        except ValueError:
            return value
        if kind == "integer":
            return int(number) if number.is_integer() else value
        return number
    if isinstance(value, str) and kind == "boolean" and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if isinstance(value, dict) and kind == "object":
        props = schema.get("properties", {})
        return {k: coerce_numbers(v, props[k]) if k in props else v for k, v in value.items()}
    return value
