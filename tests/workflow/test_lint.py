"""The workflow as the field's tooling sees it: `snakemake --lint` finds nothing, and the conda env every
rule names pins exactly the package's runtime dependencies."""

import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from tests.support.paths import ROOT

ENV = yaml.safe_load((ROOT / "workflow" / "envs" / "optrace.yaml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# conda-forge names of the PyPI distributions; snakemake and Pygments run in the controller only
CONDA_NAME = {
    "gitpython": "gitpython",
    "jsonschema": "jsonschema",
    "jsonschema-rs": "jsonschema-rs",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "pyyaml": "pyyaml",
}
CONTROLLER_ONLY = {"snakemake", "pygments"}


def distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def test_the_conda_env_pins_every_runtime_dependency_and_nothing_else():
    runtime = {distribution(r) for r in PYPROJECT["project"]["dependencies"]} - CONTROLLER_ONLY
    assert runtime <= set(CONDA_NAME), f"no conda-forge name known for {runtime - set(CONDA_NAME)}"
    pinned = {d.split()[0]: d for d in ENV["dependencies"] if isinstance(d, str)}
    assert set(pinned) == {CONDA_NAME[r] for r in runtime} | {"python", "git"}
    unpinned = [d for d in pinned.values() if "=" not in d]
    assert not unpinned, f"unpinned: {unpinned}"


def test_every_rule_names_the_one_env():
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        text = smk.read_text()
        rules = len(re.findall(r"^rule \w+:", text, flags=re.M))
        assert text.count("conda:\n        ENV\n") == rules, smk.name


@pytest.mark.workflow
def test_snakemake_lint_finds_nothing(workdir):
    res = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=workdir, capture_output=True, text=True)
    assert "Lints for" not in res.stdout + res.stderr, res.stdout[-3000:]
    assert res.returncode == 0, res.stderr[-2000:]
