# Helpers shared by every rule file: config validation, the trace list, per-stage code digests.
import hashlib
import os
import sys
from pathlib import Path

from snakemake.utils import validate

import yaml

from optrace.configcheck import coerce_numbers
from optrace.errors import InputError
from optrace.example_trace import EXAMPLE_DIR, example_name, source_digest
from optrace.sheet import fingerprint, select_traces

with open(Path(workflow.basedir) / "schemas" / "config.schema.yaml") as fh:
    config.update(coerce_numbers(dict(config), yaml.safe_load(fh)))
validate(config, "../../schemas/config.schema.yaml")

RESULTS = config["results"].rstrip("/")
PY = sys.executable
PKG = Path(workflow.basedir) / "workflow" / "scripts" / "optrace"

EXAMPLE_NAME = example_name()
EXAMPLE_PATH = f"{RESULTS}/example/{EXAMPLE_NAME}"

try:
    TRACES = {t.slug: t for t in select_traces(config, EXAMPLE_PATH, EXAMPLE_NAME)}
except InputError as exc:
    raise WorkflowError(f"{exc.where}: {exc.problem}") from None
SLUGS = sorted(TRACES)
LIVE_INDEX = f"{config['live_store'].rstrip('/')}/records/index.json" if config["live_store"] else ""


wildcard_constraints:
    slug="[a-z0-9][a-z0-9.-]*",


# The optrace modules each stage runs. Their digest goes into the stage's params, so editing a
# stage's code re-runs that stage and its dependants, and nothing upstream.
STAGE_MODULES = {
    "ingest": ["ingest", "gitlog", "grammar", "memory", "metadata", "hardware", "profiles", "ncu",
               "dsl", "families", "tracefiles", "jsonio", "errors", "autotune"],
    "recon": ["recon", "ladder", "jsonio", "errors"],
    "dataset": ["dataset", "ladder", "jsonio", "errors"],
    "partition": ["partition", "ladder", "facts", "anonymize", "anonymize_patterns", "jsonio", "errors"],
    "packets": ["packets", "anonymize", "anonymize_patterns", "gitlog", "tracefiles", "jsonio", "errors"],
    "distill": ["distill", "drafter", "facts", "storegates/established_fact", "storegates/self_contained",
                "jsonio", "errors"],
    "stage": ["stage", "worth", "ladder", "storegates/index", "storegates/model", "jsonio", "errors"],
    "readme": ["readme", "anonymize", "anonymize_patterns", "jsonio", "errors"],
    # every store and trace gate module: a new gate re-runs validation without editing this list
    "validate": ["validate", "anonymize_patterns", "jsonio", "errors",
                 *(f"{p.parent.name}/{p.stem}" for p in sorted(PKG.glob("*gates/*.py")))],
}


def code_digest(stage):
    h = hashlib.sha256()
    for module in STAGE_MODULES[stage]:
        h.update((PKG / f"{module}.py").read_bytes())
    return h.hexdigest()[:16]


def trace_path(wildcards):
    return TRACES[wildcards.slug].path


def trace_inputs(wildcards):
    """Files Snakemake itself can track: the example's directory, or a bundle file."""
    t = TRACES[wildcards.slug]
    if t.example:
        return {"trace": EXAMPLE_PATH}
    if t.path.endswith(".bundle"):
        return {"trace": t.path}
    return {}


def trace_fingerprint(wildcards):
    t = TRACES[wildcards.slug]
    # the example is rebuilt from resources/, so its sources identify it before it exists
    return source_digest() if t.example else fingerprint(t.path)


def ingest_args(wildcards):
    t = TRACES[wildcards.slug]
    args = [f"--label {shell_quote(t.label)}"]
    args += [f"--{k} {shell_quote(v)}" for k, v in sorted(t.overrides.items())]
    return " ".join(args)


def shell_quote(value):
    import shlex

    return shlex.quote(str(value))


def per_trace(pattern):
    return expand(pattern, slug=SLUGS)


def ladder_args():
    lad = config["ladder"]
    return (f"--milestone-pct {lad['milestone_pct']} --mega-pct {lad['mega_pct']} "
            f"--rebaseline-factor {lad['rebaseline_factor']}")


def live_store_inputs(wildcards):
    return {"live_index": LIVE_INDEX} if LIVE_INDEX else {}


def live_store_arg(wildcards, input):
    return f"--live-store {shell_quote(input.live_index)}" if LIVE_INDEX else ""


def denylist_digest():
    """Content digest of the private denylist (never its terms): editing it re-scrubs packets."""
    path = os.environ.get(config["denylist_env"], "")
    if not path:
        return "none"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return f"unreadable:{path}"
