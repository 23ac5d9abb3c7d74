# Helpers shared by the rule files (config validation, the trace list, path helpers, per-stage code digests).
import hashlib
import inspect
import os
import shlex
import sys
import threading
from pathlib import Path

from snakemake.utils import validate
from snakemake_interface_executor_plugins.settings import DeploymentMethod

import yaml

from optrace import DEFAULT_TARGETS, PACKAGE_DIR, SCHEMAS
from optrace.cli import MODULES
from optrace.distill.records import records_digest
from optrace.errors import InputError
from optrace.example.embedded import EXAMPLE_DIR, example_name, source_digest
from optrace.run import codedigest, runlock
from optrace.run.configcheck import coerce_numbers, config_problem, trace_problem
from optrace.run.sheet import fingerprint, select_traces


def stop(message):
    """Bad config or trace list: one line, before any job runs (a WorkflowError adds file and line)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


with open(SCHEMAS / "config.schema.yaml") as fh:
    CONFIG_SCHEMA = yaml.safe_load(fh)
config.update(coerce_numbers(dict(config), CONFIG_SCHEMA))
if problem := config_problem(config, CONFIG_SCHEMA):
    stop(problem)
validate(config, str(SCHEMAS / "config.schema.yaml"))  # fills the defaults
if config["trace"] and (problem := trace_problem(config["trace"])):
    stop(f"config: `trace`: {config['trace']}: {problem}")

RESULTS = config["results"].rstrip("/")
# How a job starts the package: the controller's own interpreter, or the job's conda env's
# (`--sdm conda`: every rule names workflow/envs/optrace.yaml). A param, so the software is provenance.
CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
OPTRACE = (
    f"PYTHONPATH={shlex.quote(str(PACKAGE_DIR.parent))} python -m optrace"
    if CONDA
    else f"{shlex.quote(sys.executable)} -m optrace"
)
ENV = "../envs/optrace.yaml"  # relative to the rule files (the Snakefile names it from the top)
# The source the code digests read: a checkout's own src/ (what its editable install runs), else the
# installed package.
PKG = Path(workflow.basedir) / "workflow" / "scripts" / "optrace"
if not PKG.is_dir():
    PKG = PACKAGE_DIR
TARGETS = config["targets"] or str(DEFAULT_TARGETS)

# A controller killed with SIGKILL leaves Snakemake's locks behind; clear them only when this host
# knows their owner is dead (optrace.run.runlock), so resuming needs no --unlock. Job steps on a cluster
# parse this file too: only the main process takes part.
CONTROLLER = None
if workflow.is_main_process:
    _note = runlock.clear_stale_locks(Path(".snakemake"))
    if _note:
        print(f"note: {_note}", file=sys.stderr)
    if not workflow.dryrun:
        CONTROLLER = runlock.register(Path(".snakemake"))

EXAMPLE_NAME = example_name()
EXAMPLE_PATH = f"{RESULTS}/example/{EXAMPLE_NAME}"

try:
    TRACES = {t.slug: t for t in select_traces(config, EXAMPLE_PATH, EXAMPLE_NAME)}
except InputError as exc:
    stop(f"{exc.where}: {exc.problem}")
for _t in TRACES.values():
    if _t.note:
        print(f"note: {_t.note}", file=sys.stderr)
SLUGS = sorted(TRACES)
LIVE_INDEX = (
    f"{config['live_store'].rstrip('/')}/records/index.json"
    if config["live_store"]
    else ""
)


IMPORT_CACHE = Path(".snakemake") / "optrace" / "code-imports.json"
codedigest.load_cache(IMPORT_CACHE)


def code_digest(command):
    """Digest of the package modules an `optrace` command runs (its import closure, plus the CLI that
    starts it): editing one re-runs exactly the stages that use it, and their dependants.
    """
    entry = MODULES[command].partition(".")[2]
    value = f"{codedigest.digest(PKG, entry)}-{codedigest.digest(PKG, '__main__')}"
    # saved only when this command parsed a module the cache lacked
    if workflow.is_main_process:
        codedigest.save_cache(IMPORT_CACHE)
    return value


def job_function(func):
    """Mark a param or input function: Snakemake inspects such a function's signature for every job
    it makes (~30 us each, thousands per start of a 100-trace sheet); one carrying its signature is
    inspected once."""
    func.__signature__ = inspect.signature(func)
    return func


def results(path):
    return f"{RESULTS}/{path}"


def work(path):
    """A trace's intermediate files: work/{slug}/..."""
    return f"{RESULTS}/work/{path}"


def reports(path):
    """What a reviewer reads: staging/reports/..."""
    return f"{RESULTS}/staging/reports/{path}"


def logs(path):
    return f"{RESULTS}/logs/{path}"


def benchmarks(path):
    return f"{RESULTS}/benchmarks/{path}"


def folder_of(name):
    """A param: the folder of the declared output `name` (a stage writes its siblings there)."""
    return job_function(lambda wildcards, output: str(Path(output[name]).parent))


def root_above(name, levels):
    """A param: the results root, `levels` folders above the declared output `name` (a stage that
    reads several of its folders is given the root its outputs lie under)."""
    return job_function(
        lambda wildcards, output: str(Path(output[name]).parents[levels - 1])
    )


def input_folder(name, levels=1):
    """A param: the folder `levels` above the declared input `name` (a stage reads its siblings)."""
    return job_function(
        lambda wildcards, input: str(Path(input[name]).parents[levels - 1])
    )


def input_folders(name):
    """A param: the folder of each file of the declared input list `name`."""
    return job_function(
        lambda wildcards, input: [str(Path(f).parent) for f in input[name]]
    )


@job_function
def distill_command(wildcards):
    """The agent command template: a function, so its {packet} is not taken for a wildcard."""
    return config["distill"]["command"]


@job_function
def guarded(wildcards, output):
    """The command prefix of every per-trace stage: optrace.run.pertrace runs it, and a trace that
    fails writes placeholders carrying its one-line reason, so the aggregates still run for the others.
    """
    outs = " ".join(shell_quote(o) for o in output)
    meta = shell_quote(work(f"{wildcards.slug}/meta.json"))
    label = shell_quote(TRACES[wildcards.slug].label)
    # `--label=<value>`: a label such as `-h` or `--outputs` is a value, never an option (#28)
    return f"{OPTRACE}.run.pertrace --slug {wildcards.slug} --meta {meta} --label={label} --outputs {outs} --"


@job_function
def trace_path(wildcards):
    return TRACES[wildcards.slug].path


def tracked_trace(t):
    """The file Snakemake itself can track for a trace: the example's directory, a bundle file, or None."""
    if t.example:
        return EXAMPLE_PATH
    return t.path if t.path.endswith(".bundle") else None


@job_function
def trace_inputs(wildcards):
    tracked = tracked_trace(TRACES[wildcards.slug])
    return {"trace": tracked} if tracked else {}


def all_trace_inputs(wildcards):
    """Every trace's tracked file (the dataset build reads each trace's kernel sources)."""
    return sorted({p for p in map(tracked_trace, TRACES.values()) if p})


_FINGERPRINTS = {}


@job_function
def trace_fingerprint(wildcards):
    """Once per trace and run: ingest's and packets' params share it (it stats every file of memory/)."""
    t = TRACES[wildcards.slug]
    if t.slug not in _FINGERPRINTS:
        # the example is rebuilt from its package sources, so its sources identify it before it exists
        _FINGERPRINTS[t.slug] = source_digest() if t.example else fingerprint(t.path)
    return _FINGERPRINTS[t.slug]


@job_function
def ingest_args(wildcards):
    t = TRACES[wildcards.slug]
    # `=`: a value that starts with `-` stays a value
    args = [f"--label={shell_quote(t.label)}"]
    args += [f"--{k}={shell_quote(v)}" for k, v in sorted(t.overrides.items())]
    return " ".join(args)


def shell_quote(value):
    return shlex.quote(str(value))


# Per-trace rules carry no `benchmark:`: Snakemake samples every benchmarked job from the controller
# (psutil, /proc/<pid>/smaps, every 0.5 s), 27 % of the controller's CPU on a 20-trace run
# (benchmarks/README.md). The aggregate jobs keep theirs: one file each, read by bench_workflow.py.
def per_trace(pattern):
    return expand(pattern, slug=SLUGS)


def ladder_args():
    lad = config["ladder"]
    return (
        f"--milestone-pct {lad['milestone_pct']} --mega-pct {lad['mega_pct']} "
        f"--rebaseline-factor {lad['rebaseline_factor']}"
    )


@job_function
def live_store_inputs(wildcards):
    return {"live_index": LIVE_INDEX} if LIVE_INDEX else {}


@job_function
def live_store_arg(wildcards, input):
    return f"--live-store {shell_quote(input.live_index)}" if LIVE_INDEX else ""


@job_function
def distilled_digest(wildcards):
    """Names, sizes and mtimes of the trace's record files (optrace.distill.records): a new or changed
    record re-runs this trace's validation and nothing else."""
    return records_digest(Path(results(f"distilled/{wildcards.slug}")))


def denylist_digest():
    """Content digest of the private denylist (never its terms): editing it re-scrubs packets."""
    path = os.environ.get(config["denylist_env"], "")
    if not path:
        return "none"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return f"unreadable:{path}"


def run_summary(run_failed):
    """Print the run summary (optrace.run.summary) and return the exit status it asks for. Never raises:
    a summary that cannot be made must not hide how the run itself ended."""
    from optrace.run import summary

    validate_target = "validate" in (
        getattr(workflow.dag_settings, "targets", None) or ()
    )
    exits_because = (
        "strict: true"
        if config["strict"]
        else "`snakemake validate`" if validate_target else ""
    )
    per_trace_rules = (
        rules.ingest_trace,
        rules.recon_trace,
        rules.partition_trace,
        rules.packets_trace,
        rules.distill_trace,
        rules.validate_trace,
    )
    try:
        stages = [
            summary.StageFiles(
                r.rule.name.removesuffix("_trace"),
                str(r.log[0]),
                tuple(map(str, r.output)),
            )
            for r in per_trace_rules
        ]
        places = summary.Places(
            validation_summary=Path(rules.validate_summary.output.summary),
            staged=Path(rules.stage.output.summary),
            staging_readme=Path(rules.readme.output.readme),
            dataset=Path(rules.dataset_build.output.readme),
            trace_report=str(rules.validate_trace.output.report),
        )
        result = summary.collect(SLUGS, stages, places)
        print(
            summary.render(result, exits_because, need_records=validate_target),
            flush=True,
        )
        return (
            0
            if run_failed
            else summary.exit_status(
                result, exits_because, need_records=validate_target
            )
        )
    except Exception as exc:  # noqa: BLE001 - see the docstring
        print(f"run summary unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0


def end_of_run():
    """The run is over: forget this controller (optrace.run.runlock) and stop rescheduling."""
    if CONTROLLER is not None:
        runlock.unregister(CONTROLLER)
    stop_rescheduling()


def stop_rescheduling():
    """Cancel the scheduler's pending re-evaluation timers: the run is over. Snakemake starts one
    threading.Timer (max-jobs-per-timespan's timespan, profiles/default) per scheduling round, and
    Python waits for every pending one before it exits."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
