# Wiring shared by the .smk files: the checked config, the trace table, path helpers, and the input
# and param functions the rules name. What a run does lives in the `optrace` package.
import os
import shlex
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

from snakemake.io import is_flagged

from optrace import DEFAULT_TARGETS, PACKAGE_DIR
from optrace.cli import MODULES
from optrace.distill.records import mark_deleted, records_digest
from optrace.errors import InputError
from optrace.example.embedded import example_name, source_digest
from optrace.run import codedigest
from optrace.run.lifecycle import Controller
from optrace.run.settings import checked
from optrace.run.sheet import fingerprint, is_url, select_traces
from optrace.run.snakemake_shim import uses_conda
from optrace.scrub.denylist_file import STATED_NONE, denylist_notice


def stop(exc):
    """Bad config or trace list: one line, before any job runs (a WorkflowError adds file and line)."""
    print(f"error: {exc.where}: {exc.problem}", file=sys.stderr)
    raise SystemExit(1)


try:
    config.update(checked(config))
except InputError as exc:
    stop(exc)

RESULTS = config["results"].rstrip("/")

# A run without a denylist says so first, unless the user stated there is none (#29).
if _no_denylist := denylist_notice(os.environ, config["denylist_env"]):
    print(_no_denylist, file=sys.stderr)

# A controller killed with SIGKILL leaves Snakemake's locks behind: they are cleared when this host
# knows their owner is dead, so resuming needs no --unlock (optrace.run.lifecycle).
CONTROLLER = Controller()
if _note := CONTROLLER.clear_stale_locks():
    print(f"note: {_note}", file=sys.stderr)


def results(path):
    return f"{RESULTS}/{path}"


def work(path):
    """A trace's intermediate files: work/{slug}/..."""
    return results(f"work/{path}")


def reports(path):
    """What a reviewer reads: staging/reports/..."""
    return results(f"staging/reports/{path}")


def logs(path):
    return results(f"logs/{path}")


def benchmarks(path):
    return results(f"benchmarks/{path}")


EXAMPLE_PATH = results(f"example/{example_name()}")
try:
    TRACES = {t.slug: t for t in select_traces(config, EXAMPLE_PATH, example_name())}
except InputError as exc:
    stop(exc)
for _t in TRACES.values():
    if _t.note:
        print(f"note: {_t.note}", file=sys.stderr)
SLUGS = sorted(TRACES)


def per_trace(pattern):
    """An input function: `pattern` (or each of a list) for every trace, in SLUGS order.

    A function, not the list itself: when a rule also names another rule's output, Snakemake looks up
    each input file's rule-level item among the rule's dependencies, and a named list as that item is
    hashed whole, once per file in it (quadratic in traces); a function is hashed as itself. The list
    is expanded once and the same files reach the job."""
    if isinstance(pattern, list):
        files = expand([declared_pattern(p) for p in pattern], slug=SLUGS)
    else:
        files = expand(declared_pattern(pattern), slug=SLUGS)
    return lambda wildcards: files


STORAGE_PREFIX = (workflow.storage_settings.default_storage_prefix or "").rstrip("/")
if STORAGE_PREFIX and os.path.isabs(RESULTS):
    stop(
        InputError(
            "config",
            f"`results`: {RESULTS} is a local folder, but the results live under --default-storage-prefix "
            f"{STORAGE_PREFIX}: give a relative `results` (a key below the prefix)",
        )
    )


def controller_copy(path):
    """Where the controller keeps its copy of result `path` (the path itself without storage)."""
    if not STORAGE_PREFIX:
        return path
    provider = workflow.storage_registry.default_storage_provider
    return str(
        provider.object(f"{STORAGE_PREFIX}/{os.path.normpath(path)}").local_path()
    )


def storage_copies():
    """`COPY=URL`: the folder where jobs keep their copies of the default provider's objects, and the
    URL prefix those copies stand for (`.snakemake/storage/s3/=s3://`)."""
    copy = os.path.dirname(controller_copy("x"))
    bucket_and_key = STORAGE_PREFIX.partition("://")[2]
    # a provider that renames its copies: the prefix's own folder
    if not copy.endswith(bucket_and_key):
        return f"{copy}/={STORAGE_PREFIX}/"
    return f"{copy.removesuffix(bucket_and_key)}={STORAGE_PREFIX.removesuffix(bucket_and_key)}"


STORAGE_COPIES = storage_copies() if STORAGE_PREFIX else ""


def declared_pattern(pattern):
    """A declared output as written in its .smk file: under --default-storage-prefix it carries its storage
    object, which expand() refuses; the files expanded from it get theirs again as inputs.
    """
    if not is_flagged(pattern, "storage_object"):
        return pattern
    return pattern.flags["storage_object"].query.removeprefix(f"{STORAGE_PREFIX}/")


# Jobs run the package beside this Snakefile (a checkout), else the installed one, and the code digests
# read the same files. With `--sdm conda` a job's `python` is its env's, which finds the package
# through PYTHONPATH; otherwise it is the interpreter running Snakemake (a job step's own, on a node).
CHECKOUT = Path(workflow.basedir) / "workflow" / "scripts" / "optrace"
PKG = CHECKOUT if CHECKOUT.is_dir() else PACKAGE_DIR
PYTHON = "python" if uses_conda(workflow) else shlex.quote(sys.executable)
OPTRACE = f"PYTHONPATH={shlex.quote(str(PKG.parent))}${{PYTHONPATH:+:$PYTHONPATH}} {PYTHON} -m optrace"
ENV = "../envs/optrace.yaml"  # relative to the rule files (the Snakefile names it from the top)

IMPORT_CACHE = Path(".snakemake") / "optrace" / "code-imports.json"
codedigest.load_cache(IMPORT_CACHE)


def code_digest(command):
    """Digest of the package modules an `optrace` command runs (its import closure, plus the CLI that
    starts it): editing one re-runs exactly the stages that use it, and their dependants.
    """
    entry = MODULES[command].partition(".")[2]
    return f"{codedigest.digest(PKG, entry)}-{codedigest.digest(PKG, '__main__')}"


# A rule's shell command is written here, at parse time, with what it runs spelled out: the command
# prefix, the per-trace guard, and a leading no-op `:` naming the code digest of each command (and the
# package data it reads). Snakemake's `code` rerun trigger compares a rule's shell command as written
# (Persistence._code in snakemake/persistence), so editing a module re-runs exactly the rules whose
# commands import it; and none of it is a param, so the report's "Job parameters" of an item show only
# what means something to a reviewer (#29).


def template_text(value):
    """A parse-time value inside a shell command: its braces are not Snakemake's placeholders."""
    return str(value).replace("{", "{{").replace("}", "}}")


OPTRACE_COMMAND = template_text(OPTRACE)


def per_trace_guard(meta="{input.meta:q}", outputs="{output:q}", label=""):
    """The command prefix of every per-trace stage: optrace.run.pertrace runs it, and a trace that
    fails writes placeholders carrying its one-line reason, so the aggregates still run for the others;
    a declared input missing in the job fails the job. Ingest, which writes meta.json, names its
    output and its trace's label (`--label={params.label:q}`: a label such as `-h` is a value, #28).
    """
    return (
        f"{OPTRACE_COMMAND}.run.pertrace --slug {{wildcards.slug}} --meta {meta}{label} "
        f"--inputs {{input:q}} --outputs {outputs} --"
    )


def optrace_shell(*commands, guard="", **data):
    """The shell command of a rule running the `optrace` commands `commands` in turn (`&&`), the first
    behind `guard` if given; its `:` names each command's code digest and the digests of `data`.
    """
    digests = {c.split()[0]: code_digest(c.split()[0]) for c in commands}
    digests.update((name, value) for name, value in data.items() if value)
    stamp = " ".join(f"{name}={shell_quote(value)}" for name, value in digests.items())
    first, *then = commands
    runs = [
        f"{guard or OPTRACE_COMMAND} {first}",
        *(f"{OPTRACE_COMMAND} {c}" for c in then),
    ]
    return f": digests {template_text(stamp)}; " + " && ".join(runs)


def data_digest(path):
    """Package data's content digest, in the shell command of the rules reading it (a job reads its own
    package's copy)."""
    return codedigest.file_digest(Path(path))


def shell_quote(value):
    return shlex.quote(str(value))


RUN_STARTED = [time.time()]


def run_started():
    """onstart: record this controller (locks) and keep the import cache it parsed."""
    RUN_STARTED[0] = time.time()
    CONTROLLER.started()
    codedigest.save_cache(IMPORT_CACHE)


def run_ended():
    """onsuccess/onerror."""
    CONTROLLER.ended()


def run_failed(summary):
    """onerror: when a job failed before the target's summary job ran (a full disk, a missing input),
    print the summary of what exists, so the terminal still says what happened and why.
    """
    run_ended()
    ran = Path(logs("summary"))
    if any(p.stat().st_mtime >= RUN_STARTED[0] for p in ran.glob("*.log")):
        return  # the target's own summary job printed it
    subprocess.run(["bash", "-c", f"{OPTRACE} run-summary {summary(None)}"])


# ---- the hardware table, the live store, the denylist ------------------------------------------


def targets_inputs(wildcards):
    """A hardware table of the user's is an input; the built-in one is package data (TARGETS_DIGEST)."""
    return {"targets": config["targets"]} if config["targets"] else {}


# The flag naming a user's hardware table in a shell command (fixed at parse time, never a param).
TARGETS_FLAG = "--targets {input.targets:q}" if config["targets"] else ""


TARGETS_DIGEST = "" if config["targets"] else data_digest(DEFAULT_TARGETS)

LIVE_INDEX = (
    f"{config['live_store'].rstrip('/')}/records/index.json"
    if config["live_store"]
    else ""
)


def live_store_inputs(wildcards):
    return {"live_index": LIVE_INDEX} if LIVE_INDEX else {}


LIVE_STORE_FLAG = "--live-store {input.live_index:q}" if LIVE_INDEX else ""


def denylist_digest():
    """Content digest of the private denylist (never its terms): editing it re-scrubs packets."""
    path = os.environ.get(config["denylist_env"], "")
    if not path or path == STATED_NONE:
        return "none"
    try:
        return codedigest.file_digest(Path(path))
    except OSError:
        return f"unreadable:{path}"


# ---- per-trace functions -------------------------------------------------------------------------


def folder_of(name):
    """A param: the folder of the declared output `name` (a stage writes its siblings there)."""
    return lambda wildcards, output: str(Path(output[name]).parent)


def input_folder(name, levels=1):
    """A param: the folder `levels` above the declared input `name` (a stage reads its siblings)."""
    return lambda wildcards, input: str(Path(input[name]).parents[levels - 1])


def input_folders(name):
    """A param: the folder of each file of the declared input list `name`."""
    return lambda wildcards, input: [str(Path(f).parent) for f in input[name]]


def per_trace_args(*names):
    """A param of an aggregate job: `--trace SLUG FILE...` per trace, from its declared per-trace input
    lists `names` (each in SLUGS order), so the job is named every file it reads."""

    def args(wildcards, input):
        rows = zip(SLUGS, *(input[n] for n in names))
        return " ".join(f"--trace {' '.join(map(shell_quote, row))}" for row in rows)

    return args


def trace_path(wildcards, input):
    """What a job opens: its copy of a tracked trace (a bundle fetched from storage), else the path."""
    return input.trace if "trace" in input.keys() else TRACES[wildcards.slug].path


def trace_file(path):
    """A trace file as an input: a storage URL through its plugin, a local file as itself (local():
    never a key under --default-storage-prefix)."""
    return storage(path) if is_url(path) else local(path)


def tracked_trace(t):
    """The file Snakemake itself can track for a trace: the example's directory, a bundle file, or None."""
    if t.example:
        return EXAMPLE_PATH
    return trace_file(t.path) if t.path.endswith(".bundle") else None


def trace_inputs(wildcards):
    tracked = tracked_trace(TRACES[wildcards.slug])
    return {"trace": tracked} if tracked else {}


def trace_sources(wildcards):
    """Every trace, in SLUGS order (the dataset build reads each one's kernel sources): declared, so a job
    is given them, but ancient(): what a trace holds reaches the build through its ingest (fingerprint).
    """
    return [
        ancient(EXAMPLE_PATH if t.example else trace_file(t.path))
        for t in (TRACES[s] for s in SLUGS)
    ]


@cache
def _fingerprint(slug):
    t = TRACES[slug]
    # the example is rebuilt from its package sources, so its sources identify it before it exists
    return source_digest() if t.example else fingerprint(t.path)


def trace_fingerprint(wildcards):
    """Once per trace and run: ingest's and packets' params share it (it stats every file of memory/)."""
    return _fingerprint(wildcards.slug)


def trace_label(wildcards):
    return TRACES[wildcards.slug].label


def ingest_args(wildcards):
    """The sheet's overrides of a trace (`=`: a value that starts with `-` stays a value)."""
    overrides = TRACES[wildcards.slug].overrides
    return " ".join(f"--{k}={shell_quote(v)}" for k, v in sorted(overrides.items()))


def ladder_args():
    lad = config["ladder"]
    return (
        f"--milestone-pct {lad['milestone_pct']} --mega-pct {lad['mega_pct']} "
        f"--rebaseline-factor {lad['rebaseline_factor']}"
    )


def distill_command(wildcards):
    """The agent command template: a function, so its {packet} is not taken for a wildcard."""
    return config["distill"]["command"]


def deleted_records_marker(wildcards):
    """distill's input that changes when a record it wrote was deleted (optrace.distill.records), so
    the next run drafts exactly the packets without a record; a new record does not re-run distill.
    None with the results in storage: a local() input would keep distill on the controller, and its
    records travel in its drafts file, which a deleted file of the area does not change.
    """
    if STORAGE_PREFIX:
        return []
    marker = Path(work(f"{wildcards.slug}/deleted-records.txt"))
    distill_report = Path(controller_copy(reports(f"{wildcards.slug}/distill.json")))
    return local(str(mark_deleted(marker, distill_report, Path(RECORDS_ROOT))))


# The agent's records area, distilled/{slug}/ under the results folder: written by distill or an agent,
# never a declared output (never deleted by Snakemake). When the results live in storage
# (--default-storage-prefix) it stays in the controller's folder, where a user or an agent writes
# records, so jobs reach it only through a shared file system (isolated jobs: #30 item 2, open).
RECORDS_ROOT = RESULTS


def records_root(wildcards):
    """A param: the folder holding the agent's records area (distill writes it, stage reads it)."""
    return RECORDS_ROOT


def distilled_folder(wildcards):
    """The agent's records of a trace; their digest is the param below."""
    return f"{RECORDS_ROOT}/distilled/{wildcards.slug}"


def distilled_digest(wildcards):
    """Names, sizes and mtimes of the trace's record files (optrace.distill.records): a new or changed
    record re-runs this trace's validation and nothing else."""
    return records_digest(Path(distilled_folder(wildcards)))


# ---- the run summary of a target (optrace.run.lifecycle) --------------------------------------------


def summary_outputs(r):
    """A stage's outputs the summary reads: its JSON files (a failed trace's placeholders carry its reason)."""
    return [o for o in r.output if o.endswith(".json")]


def summary_inputs(stages, **places):
    """The files a target's summary reads: the outputs of its per-trace `stages` and the aggregate
    `places`."""
    return {**{r.rule.name: per_trace(summary_outputs(r)) for r in stages}, **places}


def summary_args(stages, exits_because="", need_records=False, **places):
    """The `optrace run-summary` arguments for the same files (patterns over {slug} for the stages; a
    function, so Snakemake does not take {slug} for a wildcard of the target)."""
    args = ["--slugs", *SLUGS]
    for r in stages:
        args += [
            "--stage",
            r.rule.name.removesuffix("_trace"),
            r.log[0],
            *summary_outputs(r),
        ]
        if r.rule.name == "validate_trace":
            args += ["--reports", r.output.report]
    for key, value in places.items():
        args += [f"--{key.replace('_', '-')}", value]
    if exits_because:
        args += ["--exits-because", exits_because]
    if need_records:
        args.append("--need-records")
    if config["strict"]:
        args.append("--strict")
    args += ["--denylist-env", config["denylist_env"]]
    if STORAGE_PREFIX:  # the summary reads the job's copies and names them by their URL
        args += ["--stored", STORAGE_COPIES]
    text = " ".join(map(shell_quote, args))
    return lambda wildcards: text
