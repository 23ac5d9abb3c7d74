"""docs/architecture.md stays true: every module of the package is on it, and everything it names exists."""

import re

from tests.support.paths import PACKAGE_DIR, ROOT

DOC = (ROOT / "docs" / "architecture.md").read_text()


def package_modules():
    """Every module, as the path the page names it by (`mine/ladder.py`); the example's kernel sources are data."""
    return sorted(
        p.relative_to(PACKAGE_DIR).as_posix()
        for p in PACKAGE_DIR.rglob("*.py")
        if "sources" not in p.relative_to(PACKAGE_DIR).parts
    )


def test_every_module_is_on_the_page():
    # a subpackage's __init__ is named by its heading (`mine/`) unless it holds an API of its own
    missing = [
        m
        for m in package_modules()
        if f"`{m}`" not in DOC and not (m.endswith("/__init__.py") and f"`{m.rpartition('/')[0]}/`" in DOC)
    ]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_module_the_page_names_exists():
    named = set(re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", DOC))
    assert named, "the page names no module"
    gone = sorted(m for m in named if not (PACKAGE_DIR / m).is_file())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_the_layout_the_page_names_is_the_repositorys():
    """The layout table names what is at the top (the design card's layout) and each place exists."""
    table = DOC[DOC.index("## Layout") : DOC.index("## The DAG")]
    named = {
        p.rstrip("/") for row in re.findall(r"^\| (`[^|]+)\|", table, flags=re.M) for p in re.findall(r"`([^`]+)`", row)
    }
    assert {"Snakefile", "workflow/rules", "workflow/scripts/optrace", "schemas", "config", "tests"} <= named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md's layout names what is not there: {missing}"
    assert (PACKAGE_DIR / "schemas").resolve() == (ROOT / "schemas").resolve()


def test_every_rule_is_in_the_dag_table():
    rules = set()
    for smk in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        rules |= set(re.findall(r"^rule (\w+):", smk.read_text(), flags=re.M))
    dag = DOC[DOC.index("## The DAG") : DOC.index("## The package")]
    listed = {r for row in re.findall(r"^\| ([^|]+)\|", dag, flags=re.M) for r in re.findall(r"`(\w+)`", row)}
    assert rules and rules <= listed, f"rules missing from the DAG table: {sorted(rules - listed)}"
