"""A Helion autotune `.meta.jsonl` sidecar: one record per run (its id, what the id hashes, the
configs it tried); entries whose id does not recompute from their config are set apart, and records
of one run id are merged."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from optrace.ingest.autotune_csv import RUN_ID, Problem, config_id_of

# Identity fields of a meta record that a row needs; all are strings in the merged format.
CONTEXT_KEYS = ("kernel_name", "input_shapes", "dtypes", "hardware")
# The settings Helion hashes into run_id (Helion's `_CODEGEN_SETTINGS`).
CODEGEN_SETTINGS = (
    "allow_warp_specialize",
    "backend",
    "debug_dtype_asserts",
    "dot_precision",
    "fast_math",
    "index_dtype",
    "pallas_collective_id",
    "pallas_interpret",
    "pallas_topk_recall_target",
    "persistent_reserved_sms",
    "static_shapes",
    "triton_do_not_specialize",
)


def codegen_signature(settings: dict) -> str:
    """Helion's `codegen_signature`: `name=str(value)` over the sorted codegen settings (missing = None);
    JSON-decoded values print as Python's did (True, None, 0.99)."""
    return ", ".join(f"{name}={settings.get(name)}" for name in CODEGEN_SETTINGS)


@dataclass(frozen=True)
class Tampered:
    where: str
    stated: str
    recomputed: str  # the id the config actually hashes to

    def to_json(self) -> dict:
        return {"where": self.where, "stated": self.stated, "recomputed": self.recomputed}


@dataclass(frozen=True)
class RunContext:
    """What a row needs from its run and cannot get anywhere else: run_id is a one-way hash of these."""

    kernel_name: str
    input_shapes: str
    dtypes: str
    hardware: str
    backend: str | None  # settings.backend, the codegen target (triton, pallas, cute, …)
    # Not written to autotune.jsonl (one copy per run is enough); the dataset's kernel table reads them.
    kernel_source: str = ""
    codegen: str = ""  # codegen_signature(settings)


@dataclass(frozen=True)
class MetaRecord:
    where: str
    run_id: str
    context: RunContext
    configs: dict[str, dict]  # only entries whose id recomputes from their config
    tampered: list[Tampered]  # the entries that did not


@dataclass
class ParsedMeta:
    records: list[MetaRecord] = field(default_factory=list)
    malformed: list[Problem] = field(default_factory=list)


def parse_meta_record(where: str, rec: object) -> MetaRecord:
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    run_id = rec.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValueError("run_id is not 64 lowercase hex")
    for key in (*CONTEXT_KEYS, "kernel_source"):
        if not isinstance(rec.get(key), str):
            raise ValueError(f"{key} is not a string")
    settings = rec.get("settings")
    if not isinstance(settings, dict):
        raise ValueError("settings is not an object")
    backend = settings.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise ValueError("settings.backend is not a string")
    configs = rec.get("configs")
    if not isinstance(configs, dict):
        raise ValueError("configs is not an object")
    kept, tampered = {}, []
    for stated, config in configs.items():
        if not isinstance(config, dict):
            raise ValueError(f"configs[{stated[:40]!r}] is not an object")
        actual = config_id_of(config)
        # The union across records is lossless only because ids are content-addressed; an entry
        # whose key is not its content's hash would poison every row that names that key.
        if stated == actual:
            kept[stated] = config
        else:
            tampered.append(Tampered(f"{where}: configs", stated, actual))
    context = RunContext(
        **{k: rec[k] for k in CONTEXT_KEYS},
        backend=backend,
        kernel_source=rec["kernel_source"],
        codegen=codegen_signature(settings),
    )
    return MetaRecord(where, run_id, context, kept, tampered)


def parse_meta(path: str, text: str) -> ParsedMeta:
    out = ParsedMeta()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            out.records.append(parse_meta_record(where, json.loads(line)))
        except json.JSONDecodeError as exc:
            out.malformed.append(Problem(where, f"not valid JSON ({exc.msg})"))
        except ValueError as exc:
            out.malformed.append(Problem(where, f"meta record skipped: {exc}"))
        except RecursionError:  # a hostile line nested past the parser's depth
            out.malformed.append(Problem(where, "not valid JSON (nested too deeply)"))
    return out


@dataclass(frozen=True)
class Run:
    context: RunContext
    configs: dict[str, dict]
    tampered_ids: set[str]  # stated and recomputed ids of dropped entries, to name why a row fails


def merge_runs(records: list[MetaRecord]) -> tuple[dict[str, Run], list[str]]:
    """One run per run_id with the union of its records' configs (run_id recurs across re-runs,
    processes and best-of-k). Context comes from the first record; records of one run_id that
    disagree on it (impossible for genuine records: those fields are hashed into run_id) are named."""
    runs: dict[str, Run] = {}
    conflicts: set[str] = set()
    for rec in records:
        run = runs.setdefault(rec.run_id, Run(rec.context, {}, set()))
        if rec.context != run.context:
            conflicts.add(rec.run_id)
        for cid, config in rec.configs.items():
            run.configs.setdefault(cid, config)
        run.tampered_ids.update(i for t in rec.tampered for i in (t.stated, t.recomputed))
    return runs, sorted(conflicts)
