"""`optrace` as a CLI: every command listed with a description, --version, help on every option, no
help text or error naming a document the repository does not have, and lazy imports per command."""

import argparse
import ast
import importlib
import json
import re
import subprocess
import sys
import tomllib

import pytest

from optrace import cli
from tests.support.paths import ROOT

PKG = ROOT / "workflow" / "scripts" / "optrace"
# Files of a trace, and files the workflow writes: not documents, so help texts and errors may name them.
TRACE_FILES = {"REPORT.md", "README.md"}
OUTPUT_FILES = {
    m for smk in (ROOT / "workflow" / "rules").glob("*.smk") for m in re.findall(r"[\w-]+\.md", smk.read_text())
}
# What each command may import at start-up (`--help`): what its stage really uses.
HEAVY = ("pandas", "pyarrow", "matplotlib", "jsonschema")
USES = {"ingest": {"jsonschema"}, "dataset": {"pyarrow", "pandas"}}


def optrace(*args):
    return subprocess.run([sys.executable, "-m", "optrace", *args], capture_output=True, text=True)


class Captured(Exception):
    pass


def parser_of(module: str) -> argparse.ArgumentParser | None:
    """The parser a command's main builds, caught at parse_args."""
    box = {}

    def capture(self, *a, **k):
        box["parser"] = self
        raise Captured

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        importlib.import_module(module).main([])
    except (Captured, SystemExit):
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    return box.get("parser")


def walk(parser, name):
    """(command path, parser) for the parser and every sub-command under it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from walk(p, f"{name} {sub}")


def test_help_lists_every_command_with_a_description():
    res = optrace("--help")
    assert res.returncode == 0
    listed = {}
    for line in res.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines():
        name, _, summary = line.strip().partition("  ")
        listed[name] = summary.strip()
    assert list(listed) == [name for name, _, _ in cli.COMMANDS]
    assert all(len(s) > 10 for s in listed.values()), listed
    for _, module, _ in cli.COMMANDS:
        assert callable(importlib.import_module(module).main)
    assert optrace().returncode == 2  # no command: the list, on stderr, exit 2
    bad = optrace("ingset")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown command 'ingset'" in bad.stderr


def test_version_is_the_package_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    res = optrace("--version")
    assert res.returncode == 0 and res.stdout == f"optrace {version}\n"


def test_every_option_of_every_command_has_help_text():
    missing = []
    for name, module, _ in cli.COMMANDS:
        parser = parser_of(module)
        if parser is None:  # a command without argparse must still answer --help
            res = optrace(name, "--help")
            assert res.returncode == 0 and res.stdout.strip(), name
            continue
        for path, p in walk(parser, name):
            for action in p._actions:
                if isinstance(action, argparse._SubParsersAction):
                    helped = {a.dest for a in action._choices_actions if a.help}
                    missing += [f"{path} {sub}" for sub in action.choices if sub not in helped]
                elif not isinstance(action, argparse._HelpAction) and not action.help:
                    missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def documents_named(text: str) -> set[str]:
    return set(re.findall(r"[\w./-]*\w\.md\b", text)) | set(re.findall(r"\bDESIGN\b|§", text))


def in_repository(name: str) -> bool:
    if name in TRACE_FILES | OUTPUT_FILES:
        return True
    if name in ("DESIGN", "§"):
        return False
    return (ROOT / name).is_file() or (PKG / name).is_file() or any(ROOT.glob(f"**/{name.rsplit('/', 1)[-1]}"))


def test_no_help_text_names_a_document_the_repository_does_not_have():
    texts = [cli.usage()]
    for name, module, _ in cli.COMMANDS:
        parser = parser_of(module)
        texts += [p.format_help() for _, p in walk(parser, name)] if parser else [optrace(name, "--help").stdout]
    named = {d for t in texts for d in documents_named(t)}
    assert not {d for d in named if not in_repository(d)}


def error_strings(tree: ast.AST) -> list[str]:
    """String pieces of every error a module can print: InputError(...), raise X(...), ap.error(...),
    print(..., file=sys.stderr)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        to_stderr = func == "print" and any(k.arg == "file" for k in node.keywords)
        if func in ("InputError", "error", "SystemExit", "WorkflowError", "ValueError") or to_stderr:
            out += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


def test_no_error_names_a_document_the_repository_does_not_have():
    bad, seen = {}, 0
    for path in sorted(PKG.rglob("*.py")):
        for text in error_strings(ast.parse(path.read_text())):
            seen += 1
            for d in documents_named(text):
                if not in_repository(d):
                    bad.setdefault(path.name, set()).add(d)
    assert seen > 100 and not bad
    assert documents_named("see DESIGN §5 and reference/trace-format.md") == {
        "DESIGN",
        "§",
        "reference/trace-format.md",
    }
    assert not in_repository("reference/trace-format.md")


@pytest.mark.parametrize("name", [name for name, _, _ in cli.COMMANDS])
def test_a_command_imports_only_what_its_stage_uses(name):
    code = (
        "import contextlib, io, json, sys\nfrom optrace.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        main([{name!r}, '--help'])\n    except SystemExit:\n        pass\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(json.loads(res.stdout)) <= USES.get(name, set())
