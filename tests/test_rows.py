"""The typed rows (optrace.rows) and the JSON schemas of the files they type cannot drift: each TypedDict,
nested ones included, has exactly its schema object's properties, with the same required keys, and every
schema object that lists properties is typed by a TypedDict (where the schema leaves an object open, the
type may be narrower: the TypedDict of what the stage writes there)."""

import types
import typing

import pytest

from optrace import rows
from tests.support.schemas import load_schema

WRAPPERS = (typing.NotRequired, typing.Required, list, dict, typing.Union, types.UnionType)


def typed_dicts_in(annotation) -> list[type]:
    """The TypedDicts an annotation names, through NotRequired, `| None` and list[...]."""
    if typing.is_typeddict(annotation):
        return [annotation]
    if typing.get_origin(annotation) in WRAPPERS:
        return [td for arg in typing.get_args(annotation) for td in typed_dicts_in(arg)]
    return []


def object_schemas(prop: dict) -> list[dict]:
    """The object schemas a property may hold: itself, or its array items."""
    found = [prop] if "properties" in prop else []
    if isinstance(prop.get("items"), dict):
        found += object_schemas(prop["items"])
    return found


def mismatches(td: type, schema: dict, where: str) -> list[str]:
    out = []
    keys, props = set(td.__annotations__), set(schema["properties"])
    if keys != props:
        out.append(
            f"{where} ({td.__name__}): only in the TypedDict {sorted(keys - props)}, only in the schema {sorted(props - keys)}"
        )
    required = set(schema.get("required", []))
    if set(td.__required_keys__) != required:
        out.append(f"{where} ({td.__name__}): required {sorted(td.__required_keys__)} != schema's {sorted(required)}")
    hints = typing.get_type_hints(td, include_extras=True)
    for key in sorted(keys & props):
        nested_tds, nested_schemas = typed_dicts_in(hints[key]), object_schemas(schema["properties"][key])
        if nested_schemas and not nested_tds:
            out.append(f"{where}.{key}: the schema lists its properties, the type is no TypedDict")
            continue
        for sub_td, sub_schema in zip(nested_tds, nested_schemas):
            out += mismatches(sub_td, sub_schema, f"{where}.{key}")
    return out


@pytest.mark.parametrize(
    ("row", "schema_name"),
    [
        (rows.VersionRow, "versions.schema.json"),
        (rows.SegmentRow, "segments.schema.json"),
        (rows.PacketRow, "packet.schema.json"),
    ],
)
def test_typed_row_matches_its_schema(row, schema_name):
    assert mismatches(row, load_schema(schema_name), schema_name) == []


def test_the_check_sees_a_drift():
    """The comparison fires on a missing key, an extra key, a wrong required split and an untyped
    nested object (so the test above cannot pass by comparing nothing)."""
    schema = load_schema("segments.schema.json")
    missing = typing.TypedDict("Missing", {k: str for k in list(schema["properties"])[1:]})
    assert any("only in the schema ['seg_id']" in m for m in mismatches(missing, schema, "s"))

    class Extra(rows.SegmentRow):
        extra: str

    assert any("only in the TypedDict ['extra']" in m for m in mismatches(Extra, schema, "s"))
    all_optional = typing.TypedDict("AllOptional", rows.SegmentRow.__annotations__, total=False)
    assert any("required" in m for m in mismatches(all_optional, schema, "s"))
    untyped_scope = typing.TypedDict("Untyped", {**rows.SegmentRow.__annotations__, "scope": dict})
    assert any("s.scope" in m for m in mismatches(untyped_scope, schema, "s"))
    wrong_nested = {**schema, "properties": {**schema["properties"]}}
    wrong_nested["properties"]["scope"] = {**schema["properties"]["scope"], "required": []}
    assert any("s.scope (Scope): required" in m for m in mismatches(rows.SegmentRow, wrong_nested, "s"))


def test_the_metrics_packets_reads_are_profiler_metrics():
    """packets.summary_metrics builds its dict by key name; each name must be a ProfilerMetrics key."""
    from optrace.mine.packets import _SUMMARY_NUMBERS, summary_metrics

    names = {key for _, key in _SUMMARY_NUMBERS} | {"stall_reasons", "symptoms"}
    assert names <= set(rows.ProfilerMetrics.__annotations__)
    text = "Duration: 1.5\nTop Stall Reasons:\n  long_scoreboard: 40.0\nSYMPTOMS: memory-bound\n"
    assert set(summary_metrics(text)) <= set(rows.ProfilerMetrics.__annotations__)
