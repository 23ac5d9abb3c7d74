"""Config checks run before any job: values typed as the schema types them, one-line errors.

Snakemake hands the leaves of a nested `--config key={a: 2.0}` over as strings ('2.0'), so a
numeric or boolean setting given on the command line would fail validation. Strings that parse as
the number or boolean the schema asks for are converted before validation; anything else is left for
the schema to reject.
"""

from __future__ import annotations

from typing import Any


def coerce_numbers(value: Any, schema: dict) -> Any:
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


def config_problem(config: dict, schema: dict) -> str | None:
    """One line naming the first bad key, what is wrong with it and what is allowed; None when valid.
    Snakemake's own validation prints the whole schema, which hides the one key that matters."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (list(e.absolute_path), e.validator))
    return _describe(errors[0], schema) if errors else None


def _describe(error: Any, schema: dict) -> str:  # a jsonschema ValidationError
    path = [str(p) for p in error.absolute_path]
    rule, value, want = error.validator, error.instance, error.validator_value
    if rule == "additionalProperties":
        node = _schema_at(schema, path)
        allowed = sorted(node.get("properties", {}))
        extra = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
        key = ".".join(path + extra[:1]) or "config"
        return f"config: unknown key `{key}`; allowed{' under ' + '.'.join(path) if path else ''}: {', '.join(allowed)}"
    key = ".".join(path) or "config"
    shown = repr(value) if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else value
    node = _schema_at(schema, path)
    if rule == "enum":
        problem = f"{shown} is not allowed; allowed values: {', '.join(map(str, want))}"
    elif rule == "type":
        problem = f"{shown} is not {_kind(want)}"
    elif rule in ("exclusiveMinimum", "minimum"):
        problem = f"{shown} is too small; allowed: {_kind(node.get('type'))} {'above' if rule == 'exclusiveMinimum' else 'of at least'} {want}"
    elif rule == "minLength":
        problem = "must not be empty"
    elif rule == "pattern":
        problem = f"{shown} is not allowed; allowed: text matching {want}"
    else:
        problem = error.message
    return f"config: `{key}`: {problem}"


def _schema_at(schema: dict, path: list[str]) -> dict:
    node = schema
    for part in path:
        props = node.get("properties", {})
        if part in props:
            node = props[part]
        elif "items" in node:
            node = node["items"]
        else:
            return {}
    return node


def _kind(kind: Any) -> str:
    names: dict[str, str] = {
        "number": "a number",
        "integer": "a whole number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a map of keys",
    }
    return " or ".join(names.get(k, str(k)) for k in kind) if isinstance(kind, list) else names.get(kind, str(kind))


def trace_problem(path: str) -> str | None:
    """Why a trace path cannot be a trace (the rules ingest applies before git runs), or None."""
    from optrace.ingest.tracepath import trace_kind_problem  # lstat and small reads only: no git

    return trace_kind_problem(path)
