"""Which package modules a stage runs, read from its imports, and a digest of their source.

Each rule's shell command carries the digest of its commands' module closures (`optrace_shell` in
common.smk), so Snakemake's code trigger re-runs exactly the stages that import an edited module
(directly or not) and their dependants; a hand-kept list would drift as soon as a stage gained an
import. Package data a module names by its file name (a schema, the brief) is part of that module's
closure, so it reaches the digest, never an input.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from optrace.jsonio import dumps_compact, load_or_none, write_text_atomic

PACKAGE = "optrace"


@cache  # a closure asks for every imported name, most of them more than once
def _module_path(pkg: Path, dotted: str) -> Path | None:
    base = pkg.joinpath(*dotted.split(".")) if dotted else pkg
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# Fields of a statement that hold statements: an import is a statement, so it can only be found there
# (expressions never need a visit, which is most of a module's nodes).
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for name in _BODIES:
            todo.extend(getattr(node, name, ()))


# Imports by file content, kept across runs (`load_cache`/`save_cache`): parsing every module was most
# of the digests' CPU at every Snakemake start, no-op included. An entry is keyed by the sha256 of the
# file's bytes and its package directory, so an edited module is always parsed again.
_CACHE: dict[str, list[str]] = {}
_CACHE_VERSION = "2:"  # entries hold data file names too (DATA_MARK); older entries are never matched
DATA_MARK = "@"  # a cached name that is a data file's, not a module's (no module name starts with it)
_DIRTY = [False]


def load_cache(path: Path) -> None:
    doc = load_or_none(path)  # none yet, or unreadable: every module is parsed, as without a cache
    if isinstance(doc, dict):
        _CACHE.update(
            (k, v)
            for k, v in doc.items()
            if isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
        )


def save_cache(path: Path) -> None:
    """Write the cache when this run parsed something new."""
    if not _DIRTY[0]:
        return
    write_text_atomic(path, dumps_compact(_CACHE))
    _DIRTY[0] = False


@cache  # every stage's closure shares most modules: read each file once per run
def _imports(pkg: Path, path: Path) -> frozenset[str]:
    """Package-internal modules one file imports (relative imports and `optrace.*`), at any depth
    (an import inside a function counts)."""
    here = path.parent.relative_to(pkg).parts
    data = path.read_bytes()
    key = _CACHE_VERSION + hashlib.sha256(data).hexdigest() + ":" + "/".join(here)
    if key not in _CACHE:
        _CACHE[key] = sorted(_parse_imports(data, here))
        _DIRTY[0] = True
    return frozenset(_CACHE[key])


def _parse_imports(data: bytes, here: tuple[str, ...]) -> set[str]:
    tree = ast.parse(data.decode("utf-8"))
    found = {DATA_MARK + name for name in _data_names(tree)}
    for node in _statements(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parent = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join([*parent, node.module] if node.module else parent)
            elif node.module and node.module.split(".")[0] == PACKAGE:
                base = node.module.partition(".")[2]
            else:
                continue
            found.add(base)
            found.update(f"{base}.{a.name}" if base else a.name for a in node.names)  # `from . import x`
        elif isinstance(node, ast.Import):
            found.update(a.name.partition(".")[2] for a in node.names if a.name.split(".")[0] == PACKAGE)
    return found


def _data_names(tree: ast.AST) -> set[str]:
    """String constants that look like a data file's name (`"clean-1.3.schema.json"`, `"brief.md"`)."""
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and Path(node.value).suffix in DATA_SUFFIXES
        and "/" not in node.value
    }


DATA_SUFFIXES = (".json", ".yaml", ".md")


@cache
def data_files(pkg: Path) -> dict[str, tuple[Path, ...]]:
    """The package's data files by file name; the schemas folder is a link into the package, and the
    example's sources are a trace's files (their own digest: optrace.example.embedded.source_digest)."""
    found: dict[str, list[Path]] = {}
    for folder, dirs, names in os.walk(pkg, followlinks=True):
        if Path(folder) == pkg:
            dirs[:] = [d for d in dirs if d != "example"]
        for name in names:
            if Path(name).suffix in DATA_SUFFIXES:
                found.setdefault(name, []).append(Path(folder) / name)
    return {name: tuple(sorted(paths)) for name, paths in found.items()}


@cache
def closure(pkg: Path, entry: str) -> tuple[Path, ...]:
    """Every package file `entry` runs: itself, its package __init__ files and their imports."""
    seen: dict[Path, None] = {}
    todo = [entry]
    while todo:
        dotted = todo.pop()
        path = _module_path(pkg, dotted)
        if path is None or path in seen:
            continue
        seen[path] = None
        parts = dotted.split(".")
        todo += [".".join(parts[:i]) for i in range(len(parts))]  # enclosing packages' __init__
        named = _imports(pkg, path)
        todo += sorted(n for n in named if not n.startswith(DATA_MARK))
        if path.name != "__init__.py":  # a package's constants name data its modules read, for them
            for name in sorted(n.removeprefix(DATA_MARK) for n in named if n.startswith(DATA_MARK)):
                seen.update(dict.fromkeys(data_files(pkg).get(name, ())))
    return tuple(sorted(seen))


@cache  # a Snakemake start asks for each command's digest per rule: the files do not change meanwhile
def digest(pkg: Path, entry: str) -> str:
    h = hashlib.sha256()
    for path in closure(pkg, entry):
        h.update(str(path.relative_to(pkg)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def file_digest(path: Path) -> str:
    """A file's content digest (package data and the denylist travel to jobs as params of it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@cache
def package_digest(pkg: Path) -> str:
    """The package's whole source: editing any module changes it. A superset of what any stage runs, read
    without parsing (the validation cache is keyed by it)."""
    h = hashlib.sha256()
    for path in sorted(pkg.rglob("*.py")):
        h.update(path.relative_to(pkg).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
