"""`optrace make-schema`: build the opt-trace-1.0 profile from clean-1.3 and the patch list.

    optrace make-schema            write schemas/opt-trace-1.0.schema.json
    optrace make-schema --check    exit 1 when that file is missing or stale (CI)
    optrace make-schema --show     print every patch with its reason

The profile is the base document with each patch appended to its top-level allOf. A conjunct can
only remove instances, so every patch narrows by construction; the reference generator edited
`required` lists in place and silently dropped fields the base added later. The profile records the
sha256 of the base file it was built from, so a base edit without a rebuild is caught by --check.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from optrace import SCHEMAS
from optrace.errors import InputError
from optrace.jsonio import write_text_atomic

PATCHES_FILE = "opt-trace-1.0.patches.yaml"
PATCH_KEYS = {"id", "reason", "at", "when", "schema"}
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Patch:
    id: str
    reason: str
    at: tuple[str, ...]  # property names from the record root
    schema: dict
    when: str | None = None  # record type the patch is limited to


@dataclass(frozen=True)
class ProfileSpec:
    name: str  # opt-trace-1.0
    base_file: str  # clean-1.3.schema.json, next to the patch list
    patches: tuple[Patch, ...]


# --- reading ------------------------------------------------------------------------------------


def _patch(where: str, raw: Any) -> Patch:
    if not isinstance(raw, dict):
        raise InputError(where, "a patch must be a mapping")
    unknown = set(raw) - PATCH_KEYS
    if unknown:
        raise InputError(where, f"unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(PATCH_KEYS))}")
    pid, reason, at, schema, when = (raw.get(k) for k in ("id", "reason", "at", "schema", "when"))
    if not isinstance(pid, str) or not ID_RE.match(pid):
        raise InputError(where, "id must be a lowercase slug")
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"{where} ({pid})", "every patch needs a reason")
    if not isinstance(at, str) or not all(at.split(".")):
        raise InputError(f"{where} ({pid})", "at must be a dotted property path such as evidence.raw")
    if not isinstance(schema, dict) or not schema:
        raise InputError(f"{where} ({pid})", "schema must be a non-empty mapping")
    if when is not None and not isinstance(when, str):
        raise InputError(f"{where} ({pid})", "when must be a record type")
    return Patch(pid, " ".join(reason.split()), tuple(at.split(".")), schema, when)


def read_spec(path: Path) -> ProfileSpec:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise InputError(path, f"not valid YAML ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("patches"), list):
        raise InputError(path, "expected a mapping with profile, base and a list of patches")
    if not isinstance(raw.get("profile"), str) or not isinstance(raw.get("base"), str):
        raise InputError(path, "profile and base must be strings")
    patches = tuple(_patch(f"{path}: patches[{i}]", p) for i, p in enumerate(raw["patches"]))
    seen: set[str] = set()
    for p in patches:
        if p.id in seen:
            raise InputError(path, f"patch id {p.id!r} appears twice")
        seen.add(p.id)
    return ProfileSpec(raw["profile"], raw["base"], patches)


# --- checking a patch against the base ------------------------------------------------------------


def _resolve(root: dict, ref: Any) -> Any:
    node: Any = root
    for part in ref[2:].split("/") if isinstance(ref, str) and ref.startswith("#/") else [None]:
        if not isinstance(node, dict) or part not in node:
            raise InputError(PATCHES_FILE, f"the base schema has a $ref that does not resolve: {ref!r}")
        node = node[part]
    return node


def enum_of(root: dict, node: Any) -> list:
    while isinstance(node, dict) and "enum" not in node and "$ref" in node:
        node = _resolve(root, node["$ref"])
    return node.get("enum", []) if isinstance(node, dict) else []


def _branch_matches(test: Any, record_type: str | None) -> bool:
    """Whether an allOf `if` that tests the record type can hold for `record_type` (None: any type)."""
    tested = test.get("properties", {}).get("type", {}) if isinstance(test, dict) else {}
    options = [tested["const"]] if "const" in tested else tested.get("enum")
    return record_type is None or options is None or record_type in options


def declared(root: dict, node: Any, name: str, record_type: str | None) -> list[dict]:
    """Subschemas the base declares for property `name` of `node` (through $ref, allOf and if/then)."""
    if not isinstance(node, dict):
        return []
    found = [node["properties"][name]] if name in node.get("properties", {}) else []
    if "$ref" in node:
        found += declared(root, _resolve(root, node["$ref"]), name, record_type)
    for sub in node.get("allOf", []):
        found += declared(root, sub, name, record_type)
        if isinstance(sub, dict) and "then" in sub and _branch_matches(sub.get("if"), record_type):
            found += declared(root, sub["then"], name, record_type)
    return found


def check_against_base(root: dict, patch: Patch) -> None:
    """A patch must name declared properties: a typo would add a constraint that never applies."""
    where = f"{PATCHES_FILE} ({patch.id})"
    types = [t for d in declared(root, root, "type", None) for t in enum_of(root, d)]
    if patch.when is not None and patch.when not in types:
        raise InputError(where, f"when: {patch.when!r} is not a record type of the base")
    nodes: list = [root]
    for i, name in enumerate(patch.at):
        nodes = [d for n in nodes for d in declared(root, n, name, patch.when)]
        if not nodes:
            raise InputError(where, f"at: {'.'.join(patch.at[: i + 1])} is not declared in the base schema")
    for name in patch.schema.get("required", []):
        if not any(declared(root, n, name, patch.when) for n in nodes):
            raise InputError(where, f"requires {name!r}, which the base does not declare at {'.'.join(patch.at)}")


# --- building -----------------------------------------------------------------------------------


def conjunct(patch: Patch) -> dict:
    """The patch as one allOf entry: its schema nested under `at`, guarded by the record type."""
    schema: dict = copy.deepcopy(patch.schema)
    for name in reversed(patch.at):
        schema = {"properties": {name: schema}}
    if patch.when is not None:
        schema = {"if": {"properties": {"type": {"const": patch.when}}, "required": ["type"]}, "then": schema}
    return {"$comment": f"patch {patch.id}: {patch.reason}", **schema}


def build_profile(spec: ProfileSpec, base: dict, base_sha256: str) -> dict:
    if base.get("properties", {}).get("schema", {}).get("const") != "clean-1.3":
        raise InputError(spec.base_file, "is not the clean-1.3 contract (properties.schema.const)")
    for patch in spec.patches:
        check_against_base(base, patch)
    body = {k: v for k, v in copy.deepcopy(base).items() if k not in ("$schema", "$id", "title", "description")}
    body["allOf"] = body.get("allOf", []) + [conjunct(p) for p in spec.patches]
    return {
        "$schema": base["$schema"],
        "$id": f"urn:opt-trace-mining:schema:{spec.name}",
        "title": f"{spec.name}: clean-1.3 narrowed for records mined from one optimization trace",
        "description": f"Generated by `optrace make-schema` from {spec.base_file} and {PATCHES_FILE}; do not edit. "
        "Every record this profile accepts, clean-1.3 accepts.",
        "x-profile-of": {
            "base": "clean-1.3",
            "base_file": spec.base_file,
            "base_sha256": base_sha256,
            "patches": [p.id for p in spec.patches],
        },
        **body,
    }


def render(profile: dict) -> str:
    return json.dumps(profile, ensure_ascii=False, indent=2) + "\n"


def profile_path(schemas: Path, spec: ProfileSpec) -> Path:
    return schemas / f"{spec.name}.schema.json"


def generate(schemas: Path) -> tuple[ProfileSpec, str]:
    """The spec and the profile text that `schemas/` should hold."""
    spec = read_spec(schemas / PATCHES_FILE)
    base_file = schemas / spec.base_file
    try:
        data = base_file.read_bytes()
        base = json.loads(data)
    except OSError as exc:
        raise InputError(base_file, f"cannot be read ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(base_file, f"not valid JSON ({exc})") from None
    return spec, render(build_profile(spec, base, hashlib.sha256(data).hexdigest()))


# --- CLI ----------------------------------------------------------------------------------------


def show(spec: ProfileSpec) -> str:
    lines = [f"{spec.name} = {spec.base_file} + {len(spec.patches)} narrowing patches"]
    for p in spec.patches:
        scope = ".".join(p.at) + (f" (type {p.when})" if p.when else "")
        lines += [
            f"- {p.id}  at {scope}",
            f"    why:  {p.reason}",
            f"    adds: {json.dumps(p.schema, ensure_ascii=False, separators=(', ', ': '))}",
        ]
    return "\n".join(lines)


def check(path: Path, expected: str) -> tuple[bool, str]:
    if not path.is_file():
        return False, f"MISSING {path}: run `optrace make-schema`"
    current = path.read_text(encoding="utf-8")
    if current == expected:
        return True, f"up to date: {path}"
    try:
        recorded = json.loads(current).get("x-profile-of", {}).get("base_sha256")
    except (ValueError, AttributeError):
        recorded = None
    because = (
        "the base schema changed since it was generated"
        if recorded != json.loads(expected)["x-profile-of"]["base_sha256"]
        else "the patches or the generator changed, or it was edited by hand"
    )
    return False, f"STALE {path}: {because}; run `optrace make-schema`"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace make-schema", description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the committed profile is missing or stale")
    mode.add_argument("--show", action="store_true", help="print the patches with their reasons")
    ap.add_argument("--schemas", type=Path, default=SCHEMAS, help="directory of the schemas (default: repo schemas/)")
    args = ap.parse_args(argv)
    spec, text = generate(args.schemas)
    path = profile_path(args.schemas, spec)
    if args.show:
        print(show(spec))
        return 0
    if args.check:
        ok, message = check(path, text)
        print(message, file=sys.stdout if ok else sys.stderr)
        return 0 if ok else 1
    write_text_atomic(path, text)
    print(f"wrote {path} ({len(spec.patches)} patches over {spec.base_file})")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
