"""The reviewer's staging README on a real snakemake run over a realistic trace and a trace that gives
ingest warnings (#29): a trace column, rows sorted by trace and version, whole ids, every gain equal to
recon's for the same version or marked with recon's, each trace's ingest warnings; and every report of
the run holds paths relative to the results tree, never one of this machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from optrace.example.repo_builder import CommitSpec, build_trace
from optrace.publish.readme import TYPE_ORDER, records_section, version_number, warnings_section
from tests.support import realistic_traces, tracekit
from tests.support.workflow import copy_workflow
from tests.support.workflow import run_snakemake as snakemake

WARNED = "kernel_opt_070_warned"
WARNING = "v2: subject says kept but kernel.py did not change; verdict none"


def warned_trace(dest: Path) -> Path:
    """A small trace whose ingest warns: v2's subject says kept while its kernel.py did not change."""
    k, m = tracekit.kernel, tracekit.memory
    build_trace(
        dest,
        [
            CommitSpec(
                "V0: baseline kernel", {"kernel.py": k(0), "memory/v0.json": m(0, 40.0), **tracekit.meta_files()}
            ),
            CommitSpec(
                "V1: 120 TFLOPS | XOR16 swizzle layout (bottleneck: bank conflicts)",
                {"kernel.py": k(1), "memory/v1.json": m(1, 30.0)},
            ),
            CommitSpec("V2: committed (+3.0%) kept: retuned num_stages", {"memory/v2.json": m(2, 29.0)}),
        ],
    )
    return dest


@pytest.fixture(scope="module")
def staged_run(tmp_path_factory):
    if not realistic_traces.available():
        pytest.skip("../shared/data is absent")
    root = tmp_path_factory.mktemp("readme")
    traces = [realistic_traces.build("sgemm_ladder", root / "traces"), warned_trace(root / "traces" / WARNED)]
    sheet = root / "sheet.tsv"
    sheet.write_text(f"label\tpath\tproduct\n{traces[0].name}\t{traces[0]}\t\n{WARNED}\t{traces[1]}\th100\n")
    wd = copy_workflow(root / "wf")
    results = root / "elsewhere" / "results"  # an absolute results root, outside the workflow
    snakemake(wd, "staging", "--config", f"traces={sheet}", f"results={results}")
    return {"wd": wd, "results": results, "root": root, "traces": traces}


def record_rows(readme: str) -> list[list[str]]:
    section = readme.split("## Records", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| trace |")]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines]


@pytest.mark.workflow
def test_the_record_table_has_a_trace_column_whole_ids_and_sorted_rows(staged_run):
    results = staged_run["results"]
    readme = (results / "staging" / "README.md").read_text()
    assert "| trace | version | type | id | tier | score | gain | basis |" in readme
    rows = record_rows(readme)
    staged = json.loads((results / "staging" / "staged.json").read_text())["staged"]
    assert sorted(r[3].strip("`") for r in rows) == sorted(s["id"] for s in staged)  # whole ids, every one
    assert "…" not in readme.split("## Records", 1)[1].split("## Histograms", 1)[0]
    assert "kernel_opt_041_sgemm_a6000" in {r[0] for r in rows} <= {"kernel_opt_041_sgemm_a6000", WARNED}
    keys = [(r[0], version_number(r[1]), TYPE_ORDER[r[2]], r[3]) for r in rows]
    assert keys == sorted(keys)
    versions = [r[1] for r in rows if r[0] == "kernel_opt_041_sgemm_a6000"]
    assert versions[0] == "v1" and versions.index("v2") < versions.index("v10")  # by number, not by text


def recon_gain(results: Path, slug: str, version: str) -> str:
    steps = json.loads((results / "staging" / "reports" / slug / "recon.json").read_text())["ladder"]["steps"]
    (pct,) = [s["improve_pct"] for s in steps if s["version"] == version]
    return f"{pct:+.2f}%"


@pytest.mark.workflow
def test_every_gain_equals_recons_or_is_marked_with_it(staged_run):
    results = staged_run["results"]
    rows = record_rows((results / "staging" / "README.md").read_text())
    strategies = [r for r in rows if r[0] == "kernel_opt_041_sgemm_a6000" and r[2] == "strategy"]
    assert len(strategies) >= 5
    for r in strategies:
        theirs = recon_gain(results, "041-sgemm-a6000", r[1])
        gain = re.fullmatch(r"([+-]\d+\.\d\d%)(?: \*\*\(recon ([+-]\d+\.\d\d%)\)\*\*)?", r[6])
        assert gain, r
        assert (gain.group(2) or gain.group(1)) == theirs, r  # the number shown as recon's is recon's


@pytest.mark.workflow
def test_no_record_claims_a_gain_other_than_recons(staged_run):
    readme = (staged_run["results"] / "staging" / "README.md").read_text()
    assert "(recon " not in readme


@pytest.mark.workflow
def test_each_traces_ingest_warnings_reach_the_readme(staged_run):
    readme = (staged_run["results"] / "staging" / "README.md").read_text()
    section = readme.split("## Ingest warnings", 1)[1].split("\n## ", 1)[0]
    assert f"| {WARNED} | {WARNING} |" in section
    assert "kernel_opt_041_sgemm_a6000" not in section  # it gave none


@pytest.mark.workflow
def test_reports_hold_no_path_of_this_machine(staged_run):
    results, root = staged_run["results"], staged_run["root"]
    summary = json.loads((results / "staging" / "reports" / "validation-summary.json").read_text())
    assert sorted(t["report"] for t in summary["traces"]) == [
        "041-sgemm-a6000/validation.json",
        "070-warned/validation.json",
    ]
    leaking = []
    for folder in ("staging", "dataset"):
        for path in sorted((results / folder).rglob("*")):
            if not path.is_file() or path.suffix not in (".json", ".md", ".svg"):
                continue
            if str(root) in path.read_text(errors="replace"):
                leaking.append(path.relative_to(results).as_posix())
    assert leaking == []


def test_a_gain_recon_disagrees_with_is_shown_beside_recons():
    index = [
        {"id": "nvidia.h100.cuda.gemm.b-s222222", "type": "strategy", "tier": "promising", "worth_score": 0.5},
        {"id": "nvidia.h100.cuda.gemm.a-s111111", "type": "strategy", "tier": "promising", "worth_score": 0.6},
        {"id": "nvidia.h100.cuda.gemm.c-a333333", "type": "anti-strategy", "tier": "cautionary", "worth_score": 0.4},
    ]
    staged = {
        index[0]["id"]: {"trace": "t", "version": "v10", "gain_pct": 10.96, "first_regression": None, "basis": None},
        index[1]["id"]: {"trace": "t", "version": "v9", "gain_pct": 5.0, "first_regression": None, "basis": "profiler"},
        index[2]["id"]: {"trace": "t", "version": "v9", "gain_pct": None, "first_regression": None, "basis": None},
    }
    lines = records_section(index, staged, {"t": "kernel_opt_1"}, {"t": {"v9": 5.0, "v10": 10.21}})
    rows = [ln for ln in lines if ln.startswith("| kernel_opt_1")]
    assert [r.split(" | ")[1] for r in rows] == ["v9", "v9", "v10"]  # numeric version order, strategy first
    assert "| +5.00% | profiler |" in rows[0] and "`nvidia.h100.cuda.gemm.a-s111111`" in rows[0]
    assert "+10.96% **(recon +10.21%)**" in rows[2]
    assert lines[3].startswith("1 record(s) claim a gain other than recon's")
    assert warnings_section([("a", []), ("b", ["x | y"])], str)[-1] == "| b | x / y |"
    assert warnings_section([("a", [])], str)[-1] == "No trace gave an ingest warning."
