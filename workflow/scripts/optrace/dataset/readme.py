"""The dataset's README: its files, keys, every column with its type and meaning, the split rule, the
exclusions per trace, the loader, and a datasheet (motivation, composition, what is left out and why,
units) generated from the data it describes.
"""

from __future__ import annotations

from collections import Counter

from optrace.dataset.columns import (
    AUTOTUNE_SOURCE,
    AXIS_DOC,
    AXIS_PREFIX,
    BUILT,
    FILES,
    PANDAS_DTYPES,
    SAMPLE_TABLES,
    TABLES,
    TRACE_SOURCE,
    Column,
    type_text,
)
from optrace.dataset.loader import sample_columns
from optrace.dataset.sources import HELION_RUN_ID_DOMAIN
from optrace.dataset.split import SPLIT_DOMAIN
from optrace.dataset.tables import AUTOTUNE_EXCLUSIONS, EXCLUSIONS, PROBLEM_ID_DOMAIN, RUN_ID_DOMAIN, Dataset
from optrace.mine.ladder import Thresholds

LOAD_RECIPE = """from optrace.dataset import load

trace = load("results/dataset")                     # latency_us per (trace, version, shape), runs + split joined
tuning = load("results/dataset", kind="autotune")   # Helion autotune rows: perf_ms per config
feasible = tuning[tuning.status.isin(["ok", "deduplicated"])]  # the others are infeasible labels
with_code = load("results/dataset", source=True)    # + kernels.source_text (repeated per row of a kernel)
train, test = trace[trace.split == "train"], trace[trace.split == "test"]
"""


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def column_docs(ds: Dataset) -> list[str]:
    out = []
    for name in (*BUILT, "split"):
        cols = TABLES[name]
        out += [
            f"### `{FILES[name]}`",
            "",
            *_table(["column", "type", "meaning"], [[f"`{c.name}`", type_text(c), c.meaning] for c in cols]),
        ]
        if name == "runs":
            out += [f"| `{AXIS_DOC[0]}` | {AXIS_DOC[1]} | {AXIS_DOC[2]} |"]
            out += [
                f"| `{c.name}` | {type_text(c)} | named axis `{c.name[len(AXIS_PREFIX) :]}` |" for c in ds.axis_columns
            ]
        out.append("")
    return out


def render_readme(ds: Dataset, thresholds: Thresholds) -> str:
    t = ds.tables
    by_source = Counter(r["source"] for r in t["runs"])
    reasons = [r for r in EXCLUSIONS if any(s.excluded[r] for s in ds.summaries.values())]
    out = [
        "# Cost-model dataset",
        "",
        f"Built by `optrace dataset` from {len(ds.summaries)} trace(s). Re-baselines follow the ladder "
        f"thresholds (milestone {thresholds.milestone_pct} %, mega {thresholds.mega_pct} %, "
        f"re-baseline ×{thresholds.rebaseline_factor}).",
        "",
        "## Files",
        "",
        *_table(
            ["file", "rows", "one row per"],
            [
                [
                    f"`{FILES['measurements']}`",
                    len(t["measurements"]),
                    "genuine (trace, version, shape) latency measurement, each its own run",
                ],
                [f"`{FILES['autotune']}`", len(t["autotune"]), "joined Helion autotune result"],
                [
                    f"`{FILES['runs']}`",
                    f"{len(t['runs'])} ({by_source[TRACE_SOURCE]} {TRACE_SOURCE}, "
                    f"{by_source[AUTOTUNE_SOURCE]} {AUTOTUNE_SOURCE})",
                    "run_id: its typed context",
                ],
                [f"`{FILES['kernels']}`", len(t["kernels"]), "distinct published kernel source"],
                [f"`{FILES['split']}`", "written by `optrace dataset split`", "group: train or test"],
            ],
        ),
        "",
        "## Keys",
        "",
        "- `run_id` joins both sample tables to `runs` (many to one): one measured run. A trace run is one "
        "version's benchmark of one shape, so a revert that re-measures the kernel it restores is a run of "
        f"its own: SHA-256 of `{RUN_ID_DOMAIN}\\0kernel_blob\\0shape\\0vendor\\0arch\\0product\\0dsl\\0trace\\0version` "
        "(all as published). An autotune run is Helion's run (many configs): Helion's own run_id; when the "
        "scrub changed the run's kernel_source, SHA-256 of "
        f"`{HELION_RUN_ID_DOMAIN}\\0source\\0codegen settings\\0input_shapes\\0dtypes\\0hardware` over the "
        "published source instead.",
        "- `problem_id` groups the runs that measured the same problem (code, shape, GPU, DSL): "
        f"SHA-256 of `{PROBLEM_ID_DOMAIN}\\0kernel_blob\\0shape\\0vendor\\0arch\\0product\\0dsl`; the "
        "spread of their latencies is the harness's noise. For an autotune run it is its run_id.",
        "- `kernel_blob` joins `runs` to `kernels` (many to one): the git blob id of `kernels.source_text` exactly as "
        "published (`git hash-object`), so every row can be verified. Sources are scrubbed like packets "
        "(denylisted terms, paths, e-mails, hashes, version ids in comments and strings); when the scrub changed "
        "nothing the id is the trace's own blob of kernel.py, when it changed something the trace's id is not "
        "published, because it hashes the unscrubbed text and would let a guessed private term be confirmed "
        "offline. A source that still holds a denylisted term (in code) is withheld with its samples.",
        "- `group` joins `runs` to `split`: operator family / GPU product. Rows of "
        "one family on one GPU are highly correlated, so the split is by group, never by row.",
        "",
        "## Columns",
        "",
        *column_docs(ds),
        "Nothing a consumer can derive from another column is stored: no geomeans (derive them from the "
        "per-shape rows), no config_id (`sha256(config)[:16]`), no source hash besides the key.",
        "",
        "## Split",
        "",
        "`optrace dataset split DIR --test-fraction F` (the workflow uses `dataset.test_fraction`) writes "
        f"`{FILES['split']}`: groups are taken in the order of SHA-256 of `{SPLIT_DOMAIN}\\0<group>`; first each "
        "that fits under F × the *samples* (measurements and autotune rows) goes to test, then each that "
        "brings the test set's share closer to F; the rest are train (at least one group on each side when "
        "there are two or more). F is a fraction of samples, not of groups: one group may hold most of them. No group is ever on both sides; the "
        "achieved share per split is printed by the command and kept in the file's metadata "
        "(`optrace.split_report`). The assignment depends only on the groups, their sample counts and F.",
        "",
        "## Trace measurements",
        "",
        "A version gives one row per shape, or none, for the first reason below that applies:",
        "",
        *[f"- `{r}`: {why}" for r, why in EXCLUSIONS.items()],
        "",
        *_table(
            ["trace", "versions", "measured", "rows", *reasons],
            [
                [label, s.versions, s.measured_versions, s.measurements, *(s.excluded[r] for r in reasons)]
                for label, s in ds.summaries.items()
            ],
        ),
        "",
    ]
    withheld = [(label, w) for label, s in ds.summaries.items() for w in s.withheld]
    if withheld:
        out += ["Withheld sources:", "", *[f"- {label}: {w}" for label, w in withheld], ""]
    out += ["## Helion autotune telemetry", ""]
    tuned = {label: s for label, s in ds.summaries.items() if s.autotune}
    if tuned:
        out += _table(
            [
                "trace",
                "rows read",
                "joined",
                "started dropped",
                "excluded on ingest",
                "unjoinable files",
                "tampered config ids",
                "in the dataset",
                *AUTOTUNE_EXCLUSIONS,
            ],
            [
                [
                    label,
                    a["rows_read"],
                    a["rows_joined"],
                    a["started_dropped"],
                    ", ".join(f"{k} {v}" for k, v in a["excluded"].items() if v) or "0",
                    len(a["unjoinable_files"]),
                    len(a["tampered_config_ids"]),
                    s.autotune_rows,
                    *(s.autotune_excluded[k] for k in AUTOTUNE_EXCLUSIONS),
                ]
                for label, s in tuned.items()
                for a in [s.autotune]
                if a  # tuned holds the traces that have one
            ],
        )
        out += [
            "",
            *[f"- `{k}`: {why}" for k, why in AUTOTUNE_EXCLUSIONS.items()],
            "",
            "Ingest's reasons and file names are in each trace's `work/<slug>/meta.json` (`autotune`).",
        ]
    else:
        out.append("No trace has an `autotune/` directory.")
    if ds.conflicts:
        out += ["", "## Context conflicts", "", *[f"- {c}" for c in ds.conflicts]]
    out += [
        "",
        "## Loading",
        "",
        "```python",
        LOAD_RECIPE.rstrip("\n"),
        "```",
        "",
        "`load(path, kind=..., source=False)` returns one kind of sample with its run's context, the kernel's "
        "DSL and size, and the split (null until `split` ran); `source=True` adds `source_text`. Columns "
        "and pandas dtypes (categoricals are dictionary-encoded in the files and `category` in pandas):",
        "",
    ]
    for kind in SAMPLE_TABLES:
        dtypes = [[f"`{c.name}`", _pandas(c)] for c in sample_columns(kind, ds.axis_columns, source=True)]
        out += [f'### kind="{kind}"', "", *_table(["column", "dtype"], dtypes), ""]
    out += datasheet(ds, thresholds)
    return "\n".join(out)


def _pandas(c: Column) -> str:
    return PANDAS_DTYPES.get(c.type, "Int64, Float64 or string (by its values)")


def _counts(values: Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(values.items(), key=lambda kv: (-kv[1], str(kv[0])))) or "none"


def datasheet(ds: Dataset, thresholds: Thresholds) -> list[str]:
    """The datasheet: why the dataset exists, what is in it, what was left out and why, its units."""
    t = ds.tables
    runs = {r["run_id"]: r for r in t["runs"]}
    dsl = {k["kernel_blob"]: k["dsl"] for k in t["kernels"]}
    trace_runs = [runs[m["run_id"]] for m in t["measurements"]]
    excluded: Counter = Counter()
    for s in ds.summaries.values():
        excluded.update(s.excluded)
    verdicts = Counter(m["verdict"] for m in t["measurements"])
    problems = Counter(r["problem_id"] for r in trace_runs)
    repeated = sum(1 for n in problems.values() if n > 1)
    out = [
        "## Datasheet",
        "",
        "### Motivation",
        "",
        "A lean dataset for GPU-kernel cost models: what each version of a kernel measured on each shape and "
        "GPU, beside the exact source it measured, as optimization traces (an agent's or an engineer's "
        "successive versions of one kernel) recorded it; and Helion autotune searches, the time of each "
        "config tried. It is a by-product of mining the traces into knowledge records: only numbers the "
        "trace measured itself, on code its history holds, are kept.",
        "",
        "### Composition",
        "",
        f"- {len(t['measurements'])} trace measurements from {len(ds.summaries)} trace(s), "
        f"{len(t['autotune'])} autotune rows, {len(t['runs'])} runs, {len(t['kernels'])} kernel sources.",
        f"- GPUs: {_counts(Counter(r['product'] for r in t['runs']))}; groups (operator family / GPU): "
        f"{_counts(Counter(r['group'] for r in t['runs']))} (runs each).",
        f"- DSLs (kernels): {_counts(Counter(dsl.values()))}.",
        f"- Trace measurements by verdict: {_counts(verdicts)}. A `reverted` row is a genuine measurement "
        "of code the history holds (an attempt that was undone): kept, with its verdict, because a cost "
        "model learns as much from a slower version as from a faster one.",
        f"- {repeated} problem(s) measured by more than one run (same `problem_id`: a revert re-measuring "
        "what it restores, traces that start from one kernel): their spread is measurement noise.",
        "",
        "### What is left out, and why",
        "",
        f"- Re-baselines ({excluded['rebaseline']} version(s)): the ladder (re-baseline factor "
        f"×{thresholds.rebaseline_factor}) found evidence that the harness changed, not the kernel; their "
        "numbers are not comparable with the versions before them.",
        f"- Unit slips ({excluded['unit_slip']} version(s)): latencies about 10³ off the floor's with no "
        "harness change, so written in ns or ms where µs was meant; no unit can be trusted for them.",
        f"- Carried-forward, missing or broken numbers ({excluded['carried_forward'] + excluded['no_number']}), "
        f"failed correctness or quality gates ({excluded['failed_correctness'] + excluded['gate_failed']}), "
        f"infrastructure failures ({excluded['infrastructure']}): no genuine measurement of working code.",
        f"- Versions whose kernel the history does not hold ({excluded['no_kernel'] + excluded['uncommitted_kernel']}): "
        "a reverted attempt that never committed its kernel measured code nobody can read; pinning its "
        "number on the incumbent's source would mislabel it.",
        f"- Geomean-only versions ({excluded['geomean_only']}) and withheld sources "
        f"({excluded['source_withheld']}): no per-shape number, or a source that cannot be published.",
        "- Every count per trace is under Trace measurements above.",
        "",
        "### Units",
        "",
        "- `measurements.latency_us`: µs, per shape, as the trace's harness reported it. A version whose "
        "numbers jump by about 10³ with no evidence of a harness change (a unit slip: ns written as µs) is "
        "rejected by the ladder and never reaches the dataset (counted above).",
        "- `autotune.perf_ms`: ms (Helion's own unit); `autotune.compile_time_s`: s; `kernels.blob_bytes`: bytes.",
        "- Nothing is normalised across GPUs or harnesses: compare within a `problem_id` or a group.",
        "",
    ]
    return out
