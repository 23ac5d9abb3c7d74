"""A non-editable install works on its own: the package finds its schemas, hardware table, brief and the
example trace's sources inside site-packages, and runs the workflow and `optrace check-store` from there."""

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.workflow import IGNORED, WORKFLOW_IGNORE

pytestmark = pytest.mark.workflow


def run(*args, cwd, env=None):
    res = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{args[:3]} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv holding the project as a wheel; its dependencies are this environment's (a .pth
    line adds our site-packages without running their .pth files, so our editable install stays out)."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    shutil.copytree(ROOT, source, ignore=WORKFLOW_IGNORE)  # pip builds in the tree: keep the checkout clean
    pip = [sys.executable, "-m", "pip", "-q"]
    run(*pip, "wheel", "--no-deps", "-w", root / "wheels", source, cwd=root)
    venv = root / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root)
    python = venv / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=root).stdout.strip())
    (purelib / "outer-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    wheel = next((root / "wheels").glob("opt_trace_mining-*.whl"))
    run(*pip, "--python", python, "install", "--no-deps", wheel, cwd=root)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return python, purelib, env


def test_the_installed_package_is_the_one_imported_and_holds_its_data(installed, tmp_path):
    python, purelib, env = installed
    probe = (
        "import optrace, importlib.resources, pathlib; from optrace.gates.store.schema import CONTRACT;"
        "from optrace.distill.distill import BRIEF; print(optrace.__file__);"
        "print(pathlib.Path(str(importlib.resources.files('optrace'))).resolve() == optrace.PACKAGE_DIR,"
        "CONTRACT.is_file(),"
        "optrace.DEFAULT_TARGETS.is_file(), BRIEF.is_file(),"
        "(optrace.EXAMPLE_SOURCES / 'trace.yaml').is_file())"
    )
    out = run(python, "-c", probe, cwd=tmp_path, env=env).stdout.split("\n")
    assert Path(out[0]).is_relative_to(purelib), out[0]
    assert out[1] == "True True True True True"


def test_the_workflow_and_check_store_run_from_the_installed_package(installed, tmp_path):
    python, _, env = installed
    wd = tmp_path / "wf"
    shutil.copytree(ROOT, wd, ignore=shutil.ignore_patterns(*IGNORED, "scripts"))
    res = run(python, "-m", "snakemake", "-c2", cwd=wd, env=env)
    assert "17 staged" in res.stdout + res.stderr  # the example: 17 drafted records (#25/#26 drafter)
    check = run(python.parent / "optrace", "check-store", wd / "results" / "staging", cwd=wd, env=env)
    assert "FAIL" not in check.stdout
