"""Gate `layout`: the record is its packet's target, filed where that target says.

A distilled record lives at `distilled/{slug}/<id>.json` (its packet's target.output, in this trace);
a staged copy at `records/<type>/<vendor>/<arch>/<dsl>/<operator_family | misc>/<id>.json`. Either way
the id, episode_key, level, type and every scope field the target names are the target's: an agent
cannot rename, re-scope or re-key what the partition decided.

The facts that are not numbers are the packet's and meta.json's too (rules for mined records; this is
a trace gate):
- the packet's target scope is the trace's hardware (meta.json target: vendor, arch, product);
- retrieval.scope.shape_signature holds only the operator's constants (fixed_axes), with their values;
  scope.architectures is absent or exactly [scope.arch]; scope.operators names only the operator
  (its family or meta.json's operator name);
- retrieval.generality is the scope's: arch = scope.arch (never widened to `any`), language = scope.dsl,
  workload_family = the target's;
- payload.problem.target is the packet's GPU, problem.operator its family, problem.dsl its dsl;
  evidence.summary.measured_on holds only gpu, harness and track, and they are the packet's;
- every GPU product, architecture, ISA, dtype, DSL and operator (softmax, gemm, attention, ...) a string of the record names (NAMES; code
  quoted verbatim aside) is one the packet's text names too: A800 -> B200 or bf16 -> fp8 fails; names
  are read as written with a separator (`FP-8`, `H-100`), in look-alike or full-width letters, and in
  words ("half precision" = fp16, "8-bit integers" = int8); and no string claims a wider scope than the
  record's ("any GPU", "all architectures", "portable", "cross-vendor") unless the packet says so;
- what the drafter derives from the packet is the packet's: retrieval.signals.shape_regime has
  n_shapes = operator.n_benchmarked_shapes, var_axes within operator.variable_axes and predicate `*`
  (a packet states no narrower regime); a gain metric's measured_over counts the shapes measured;
  payload.trace.builds_on.is_baseline is builds_on.was_the_untouched_baseline; payload.cost.edit_scope
  of a diff is what the diff edits (kernelcode.edit_scope: one-line only when at most one line goes out
  and one comes in);
- an established fact's condition is within the scope: sm_arch is the packet's ISA (operator.isa, or
  the ISA of the scope's arch when the packet names none), toolchain is the scope's dsl, dtype is a data
  type (facts.DTYPE_RE), and no architecture or product other than the scope's appears in any condition
  value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from functools import lru_cache
from typing import Any

from optrace.facts import ARCH_ISA, DTYPE_RE  # an arch's ISA, a dtype's spelling: shared facts, judged the same way
from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.store.store import store_path
from optrace.gates.trace.model import Packet, PacketEvidence, needs_packet
from optrace.gates.trace.ncu_attribution import collapsed, folded, record_strings, strings
from optrace.gates.trace.numbers import normalize, number_tokens
from optrace.kernelcode import edit_scope

PRODUCT = r"[abhlv]\d{2,3}[a-z]?|g[bh]\d{3}|rtx\s?\d{4}(?:\s?ti)?|mi\d{3}[a-z]?|t4|p100"
ARCH = (
    r"hopper|blackwell(?:-ultra|-geforce)?|ampere|ada|lovelace|volta|turing|pascal|maxwell|kepler|rubin|grace|thor"
    r"|orin|xavier|cdna\d|rdna\d"
)
ISA = r"sm_?\d{2,3}a?|gfx\d{3,4}|compute_\d{2,3}"
DTYPE = (
    r"bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int4|int8|e4m3|e5m2|e2m1|bfloat16|float16|float32|float64"
    r"|float8\w*|nvfp4|mxfp\d"
)
DSL = r"cutlass|cute(?:dsl)?|triton|gluon|tilelang|thunderkittens|helion|pallas|mojo|hip|cuda|flydsl|aiter"
# operators: a record about one operator does not claim another's
OPERATOR = (
    r"softmax|layer_?norm|rms_?norm|group_?norm|batch_?norm|gemm|matmul|attention|conv[123]d|convolution|moe|top_?k"
    r"|rope|embedding|all_?reduce|all_?gather|cross_?entropy"
)
NAMES = (PRODUCT, ARCH, ISA, DTYPE, DSL, OPERATOR)  # every alternative of each starts with a letter
# on lower-cased text: no case folding per position; and since every name starts with a letter, a word
# boundary that ends a word (half of them) is passed over without trying each name
HARDWARE_WORDS_LOWER = re.compile(rf"\b(?=[a-z])(?:{'|'.join(NAMES)})\b")
# a dtype in words, as the name it stands for
DTYPE_PHRASES = (
    (re.compile(r"\bhalf[- ]precision\b", re.I), "fp16"),
    (re.compile(r"\bsingle[- ]precision\b", re.I), "fp32"),
    (re.compile(r"\bdouble[- ]precision\b", re.I), "fp64"),
    (re.compile(r"\b(\d{1,2})[- ]?bit\s+(?:integer|int)s?\b", re.I), r"int\1"),
    (re.compile(r"\b(\d{1,2})[- ]?bit\s+float(?:ing[- ]point)?s?\b", re.I), r"fp\1"),
)
SEPARATED = re.compile(r"(?<=[a-z])[-_](?=\d)", re.I)  # FP-8, H-100, sm-90: the names with a separator
# a scope wider than the record's: no mined record is about every GPU, dtype or DSL
WIDENING = re.compile(
    r"(?<![a-z])(?:any|every|all|other)[\s_-]+(?:gpus?|architectures?|archs?|vendors?|hardware|platforms?|dtypes?"
    r"|precisions?|dsls?|languages?|devices?)(?![a-z])|(?:architecture|arch|hardware|vendor|platform|dtype|gpu)"
    r"[\s_-]?(?:agnostic|independent|neutral)|portable|cross[\s_-]?(?:vendor|arch\w*|platform|gpu)",
    re.I,
)
WIDENING_LOWER = re.compile(WIDENING.pattern)
SCOPE_WORDS = re.compile(rf"\b(?:{PRODUCT}|{ARCH}|{ISA})\b", re.I)
MEASURED_ON_KEYS = ("gpu", "harness", "track")
PROVENANCE_BOUND = frozenset(("evidence", "raw", k) for k in ("git_commit", "source_repo", "version"))  # provenance's


def staged_path(packet: Packet) -> str | None:
    return store_path(packet.data.get("record_type"), obj(packet.target, "scope"), packet.target.get("id"))


def expected_path(relpath: str, packet: Packet, slug: str) -> str | None:
    if relpath.startswith("records/"):
        return staged_path(packet)
    return f"distilled/{slug}/{packet.target.get('id')}.json"


def field_mismatches(record: dict, packet: Packet) -> list[tuple[str, object, object]]:
    """(field, record's value, target's value) for every targeted field the record changed."""
    target = packet.target
    pairs = [
        ("id", record.get("id"), target.get("id")),
        ("episode_key", record.get("episode_key"), target.get("episode_key")),
        ("level", record.get("level"), target.get("level")),
        ("type", record.get("type"), packet.data.get("record_type")),
    ]
    scope = obj(record, "retrieval", "scope")
    pairs += [(f"retrieval.scope.{k}", scope.get(k), v) for k, v in obj(target, "scope").items()]
    return [(name, got, want) for name, got, want in pairs if got != want]


def word(text: str) -> str:
    return re.sub(r"[\s_]", "", text.lower())


@lru_cache(maxsize=1 << 14)  # a trace's packets share their code and most of their text
def text_facts(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(hardware/dtype/DSL names, scope-widening phrases) one text states."""
    t = SEPARATED.sub("", folded(normalize(text)))
    t = t.lower()
    if "precision" in t or "bit" in t:  # the only words a dtype phrase holds
        for pattern, name in DTYPE_PHRASES:
            t = pattern.sub(name, t)
    return (
        frozenset(word(m.group(0)) for m in HARDWARE_WORDS_LOWER.finditer(t)),
        frozenset(collapsed(m.group(0)) for m in WIDENING_LOWER.finditer(t)),
    )


def _facts_of(texts: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    names: set[str] = set()
    wide: set[str] = set()
    for t in texts:
        found, widening = text_facts(t)
        names |= found
        wide |= widening
    return frozenset(names), frozenset(wide)


class PacketFacts:
    """The hardware/dtype/DSL names and scope-widening phrases the packet's texts state, read lazily: the
    target and the operator (a few short texts that repeat across a trace's packets) name what an honest
    record names, and only a name or phrase they do not state needs the whole packet. Exact either way:
    those texts are part of the packet, so what they state the packet states."""

    def __init__(self, packet: Packet):
        self.packet = packet
        self._near: tuple[frozenset[str], frozenset[str]] | None = None
        self._all: tuple[frozenset[str], frozenset[str]] | None = None

    def _whole(self) -> tuple[frozenset[str], frozenset[str]]:
        if self._all is None:
            p = self.packet
            texts = [t for _, t in strings(p.agent_facing)] + [t for _, t in strings(p.target)]
            self._all = _facts_of(texts + ([p.code] if p.code else []))
        return self._all

    def _known(self) -> tuple[frozenset[str], frozenset[str]]:
        if self._near is None:
            p = self.packet
            near = [t for _, t in strings(p.target)] + [t for _, t in strings(obj(p.agent_facing, "operator"))]
            self._near = _facts_of(near)
        return self._near

    def unnamed(self, stated: frozenset[str]) -> set[str]:
        """The names in `stated` the packet never names."""
        if stated <= self._known()[0]:
            return set()
        return set(stated - self._whole()[0])

    def unclaimed(self, widening: frozenset[str]) -> set[str]:
        """The scope-widening phrases in `widening` the packet never claims."""
        if widening <= self._known()[1]:
            return set()
        return set(widening - self._whole()[1])


def fact_mismatches(view: RecordView, packet: Packet, meta: dict) -> list[str]:
    """What the record says about hardware, shapes, dtype and scope that the packet and meta.json do not."""
    record = view.record
    target, scope_t = packet.target, obj(packet.target, "scope")
    op = obj(packet.agent_facing, "operator")
    scope = obj(record, "retrieval", "scope")
    out = []
    hw = obj(meta, "target")
    out += [
        f"packet target scope.{k}: {scope_t.get(k)!r} is not meta.json's {hw.get(k)!r}"
        for k in ("vendor", "arch", "product")
        if hw and k in hw and scope_t.get(k) != hw.get(k)
    ]
    fixed = obj(op, "fixed_axes")
    for k, v in obj(scope, "shape_signature").items():
        if k not in fixed or fixed[k] != v or type(fixed[k]) is not type(v):
            out.append(f"retrieval.scope.shape_signature.{k}: {v!r} is not a constant of the operator {fixed}")
    if "architectures" in scope and scope["architectures"] != [scope_t.get("arch")]:
        out.append(
            f"retrieval.scope.architectures: {scope['architectures']!r} widens the scope {scope_t.get('arch')!r}"
        )
    names = {
        n
        for n in (scope_t.get("operator_family"), meta.get("operator_name"), meta.get("operator_slug"))
        if n is not None
    }
    if "operators" in scope and not (isinstance(scope["operators"], list) and set(scope["operators"]) <= names):
        out.append(f"retrieval.scope.operators: {scope['operators']!r} names operators other than {sorted(names)}")
    gen = obj(record, "retrieval", "generality")
    for key, want in (
        ("arch", scope_t.get("arch")),
        ("language", scope_t.get("dsl")),
        ("workload_family", target.get("workload_family")),
    ):
        if (key in gen or key != "workload_family") and gen.get(key) != want:
            out.append(f"retrieval.generality.{key}: {gen.get(key)!r} is not the packet's {want!r}")
    problem = obj(record, "payload", "problem")
    for key, want in (
        ("target", op.get("gpu")),
        ("operator", scope_t.get("operator_family")),
        ("dsl", scope_t.get("dsl")),
    ):
        if key in problem and problem[key] != want:
            out.append(f"payload.problem.{key}: {problem[key]!r} is not the packet's {want!r}")
    measured_on = obj(record, "evidence", "summary", "measured_on")
    wanted = {
        "gpu": op.get("gpu"),
        "harness": op.get("harness"),
        "track": f"{scope_t.get('arch')}/{scope_t.get('dsl')}",
    }
    for key, value in measured_on.items():
        if key not in MEASURED_ON_KEYS or value != wanted[key]:
            out.append(f"evidence.summary.measured_on.{key}: {value!r} is not the packet's {wanted.get(key)!r}")
    facts = PacketFacts(packet)
    for path, text in record_strings(view):
        if path in PROVENANCE_BOUND:
            continue
        stated, widening = text_facts(text)  # most strings name nothing: two empty sets, no set arithmetic
        alien = sorted(facts.unnamed(stated)) if stated else ()
        if alien:
            where = ".".join(map(str, path)) or "<top>"
            out.append(f"{where}: names {', '.join(alien)}, which the packet never names")
        widened = facts.unclaimed(widening) if widening else ()
        if widened and path[:2] != ("evidence", "raw"):
            out.append(
                f"{'.'.join(map(str, path)) or '<top>'}: {sorted(widened)[0]!r} claims a scope wider than "
                "the record's, which the packet never claims"
            )
    out += condition_mismatches(record, packet) + derived_mismatches(record, packet)
    return out


def derived_mismatches(record: dict, packet: Packet) -> list[str]:
    """The shape regime, shape count, baseline flag and edit scope the packet determines."""
    op, out = obj(packet.agent_facing, "operator"), []
    n, axes = op.get("n_benchmarked_shapes"), op.get("variable_axes")
    regime = obj(record, "retrieval", "signals", "shape_regime")
    if "n_shapes" in regime and regime["n_shapes"] != n:
        out.append(f"retrieval.signals.shape_regime.n_shapes: {regime['n_shapes']!r} is not the packet's {n!r} shapes")
    if "var_axes" in regime and not (
        isinstance(regime["var_axes"], list) and isinstance(axes, list) and all(a in axes for a in regime["var_axes"])
    ):
        out.append(
            f"retrieval.signals.shape_regime.var_axes: {regime['var_axes']!r} is not within the packet's {axes!r}"
        )
    if regime.get("predicate", "*") != "*":
        out.append(
            f"retrieval.signals.shape_regime.predicate: {regime['predicate']!r}, but the packet states no "
            "narrower regime than its benchmarked shapes ('*')"
        )
    metrics = obj(record, "worth", "gain").get("metrics")
    measured = obj(packet.agent_facing, "measurements").get("shapes_measured")
    over_n = measured if type(measured) is int and measured > 0 else n  # the geomean is over the measured shapes
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        over = metric.get("measured_over") if isinstance(metric, dict) else None
        counts = {Decimal(t) for t, _ in number_tokens(over)} if isinstance(over, str) else set()
        if counts and counts != {Decimal(over_n) if isinstance(over_n, int) else None}:
            out.append(
                f"worth.gain.metrics[{i}].measured_over: {over!r} does not count the {over_n!r} shapes the "
                "packet measured"
            )
    base = obj(record, "payload", "trace", "builds_on")
    if "is_baseline" in base and base["is_baseline"] != bool(
        obj(packet.agent_facing, "builds_on").get("was_the_untouched_baseline")
    ):
        out.append(f"payload.trace.builds_on.is_baseline: {base['is_baseline']!r} is not the packet's builds_on")
    scope = obj(record, "payload", "cost").get("edit_scope")
    if scope is not None and (packet.code_file or "").endswith(".diff") and scope != edit_scope(packet.code):
        out.append(f"payload.cost.edit_scope: {scope!r}, but the packet's diff is a {edit_scope(packet.code)!r} edit")
    return out


def condition_mismatches(record: dict, packet: Packet) -> list[str]:
    condition = obj(record, "payload", "established_fact", "condition")
    if not condition:
        return []
    scope_t = obj(packet.target, "scope")
    arch: Any = scope_t.get("arch")  # any JSON value: the packet is read as written
    isa = obj(packet.agent_facing, "operator").get("isa") or ARCH_ISA.get(arch)
    own = {word(str(v)) for v in (scope_t.get("arch"), scope_t.get("product"), isa) if v}
    out = []
    sm_arch = condition.get("sm_arch")
    if sm_arch is not None and (not isinstance(sm_arch, str) or word(sm_arch) != word(str(isa))):
        out.append(f"payload.established_fact.condition.sm_arch: {sm_arch!r} is not the scope's ISA {isa!r}")
    toolchain, dsl = condition.get("toolchain"), scope_t.get("dsl")
    if toolchain is not None and toolchain != dsl:
        out.append(f"payload.established_fact.condition.toolchain: {toolchain!r} is not the scope's dsl {dsl!r}")
    dtype = condition.get("dtype")
    if dtype is not None and not (isinstance(dtype, str) and DTYPE_RE.fullmatch(dtype.strip())):
        out.append(f"payload.established_fact.condition.dtype: {str(dtype)[:60]!r} is not a data type")
    for key, value in condition.items():
        if isinstance(value, str):
            outside = sorted({word(m.group(0)) for m in SCOPE_WORDS.finditer(value)} - own)
            if outside:
                out.append(
                    f"payload.established_fact.condition.{key}: names {', '.join(outside)}, outside the record's scope"
                )
    return out


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    rel = view.relpath
    want = expected_path(rel, ev.packet, ev.trace.slug)
    out = [] if rel == want else [f"{rel}: filed at the wrong place; its packet's target is {want}"]
    out += [
        f"{rel}: {name}: {got!r} is not the packet's target {want!r}"
        for name, got, want in field_mismatches(view.record, ev.packet)
    ]
    out += [f"{rel}: {m}" for m in fact_mismatches(view, ev.packet, dict(ev.trace.meta))]
    return out


GATE = Gate(
    "layout",
    "each record is its packet's target (id, episode_key, level, type, scope) at its path, "
    "on the packet's hardware, dtype, shapes and generality",
    check=check,
)
