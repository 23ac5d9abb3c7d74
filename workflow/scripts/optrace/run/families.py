"""Names: trace name -> trace slug, operator name -> operator family and workload family.

The operator family (`scope.operator_family`, the middle of every id) is the knowledge store's own
vocabulary: `STORE_OPERATOR_FAMILIES` was written by reading the real store's records (their
`retrieval.scope.operator_family` values), so `fused_add_rmsnorm_h4096` is filed under `norm`, an SGEMM
under `gemm` and a fused MoE under `moe`, next to the store's own records. An operator the table does
not know keeps a slug of its own name. Workload families are the store schema's `workload_family`
vocabulary. Matching is on whole words of the operator name (`norm` must not fire inside
`normal_and_transform`), in a fixed priority order.
"""

from __future__ import annotations

import re

TRACE_NUMBERED_RE = re.compile(r"^kernel_opt_(\d+)_(.+)$", re.I)
_CONTAINER_WORDS = {"root", "home", "work", "tmp", "data", "src", "repo", "repos", "traces", "trace", "kernel", "opt"}
_ABBREV = {
    "attention": "attn",
    "backward": "bwd",
    "forward": "fwd",
    "projection": "proj",
    "normalization": "norm",
    "convolution": "conv",
    "activation": "act",
}
_DROP = {"with", "and", "the", "a", "of", "for", "to", "using", "based"}
# (store operator family, words of an operator name); the first family with a matching word wins, so the
# specific families (a paged attention, a MoE GEMM, MLA) come before the general ones.
STORE_OPERATOR_FAMILIES = [
    ("moe", {"moe", "expert", "experts"}),
    ("mla", {"mla"}),
    ("paged-attention", {"paged"}),
    ("gdn", {"gdn", "deltanet"}),
    ("mamba", {"mamba", "ssm"}),
    ("flash-attention", {"attention", "attn", "flash", "mha", "gqa", "mqa", "prefill", "decode", "fmha"}),
    ("norm", {"norm", "rmsnorm", "layernorm", "groupnorm", "batchnorm", "rms"}),
    ("softmax", {"softmax"}),
    ("gemv", {"gemv"}),
    ("gemm", {"gemm", "sgemm", "hgemm", "dgemm", "igemm", "matmul", "mm", "bmm", "dense"}),
    ("conv", {"conv", "conv1d", "conv2d", "conv3d", "convolution"}),
    ("quantization", {"quant", "quantize", "quantization", "dequant", "dequantize"}),
    ("sort", {"sort", "argsort", "topk"}),
    ("allreduce", {"allreduce", "all_reduce"}),
]

# (family, words); the first family with a matching word wins
_FAMILY_WORDS = [
    ("mask-index", {"mask", "masking", "index", "gather", "scatter", "topk", "argsort", "sampling"}),
    ("moe", {"moe", "expert", "experts"}),
    ("rope", {"rope", "rotary"}),
    ("norm", {"norm", "rmsnorm", "layernorm", "groupnorm", "batchnorm", "softmax"}),
    ("ssm-linear-attention", {"ssm", "mamba", "gdn", "linear", "deltanet", "retention", "scan"}),
    ("decoder-layer", {"decoder", "layer", "block", "transformer"}),
    ("conv-vision", {"conv", "conv1d", "conv2d", "conv3d", "vision", "vit", "pool", "pooling"}),
    ("attention", {"attn", "attention", "mha", "gqa", "mla", "mqa", "flash", "decode", "prefill", "paged"}),
    (
        "gemm-projection",
        {
            "gemm",
            "sgemm",
            "hgemm",
            "dgemm",
            "gemv",
            "matmul",
            "mm",
            "bmm",
            "proj",
            "projection",
            "linear",
            "dense",
            "qkv",
        },
    ),
    ("mlp-activation", {"mlp", "ffn", "silu", "gelu", "swiglu", "geglu", "relu", "act", "activation"}),
]


def trace_slug(name: str) -> str:
    """`kernel_opt_001_fused_softmax_h4096` -> `001-fused-softmax-h4096`; other names are
    lower-cased with every run of other characters turned into one `-`."""
    m = TRACE_NUMBERED_RE.match(name)
    text = f"{m.group(1)}-{m.group(2)}" if m else name
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return slug or "trace"


def _words(name: str) -> list[str]:
    name = re.sub(r"^.*?kernel[-_]opt[-_](\d+[-_])?", "", name.lower())
    words = [w for w in re.split(r"[^a-z0-9]+", name) if w]
    while words and (words[0] in _CONTAINER_WORDS or words[0].isdigit()):
        words.pop(0)
    return words


def store_family(operator_name: str) -> str | None:
    """The store's operator family for an operator name, or None when the table knows none."""
    words = set(_words(operator_name))
    return next((family for family, vocab in STORE_OPERATOR_FAMILIES if words & vocab), None)


def operator_slug(operator_name: str) -> str:
    """The operator family records are filed under: the store's family, else a slug of the name."""
    family = store_family(operator_name)
    if family:
        return family
    words = _words(operator_name)
    kept = [_ABBREV.get(w, w) for w in words if w not in _DROP and not w.isdigit()]
    return "-".join(kept[:5]) or "unknown"


def workload_family(operator_name: str) -> str:
    words = set(_words(operator_name))
    # "fused_add_rmsnorm" style compounds: also look inside snake_case words split above
    for family, vocab in _FAMILY_WORDS:
        if words & vocab:
            return family
    return "misc"
