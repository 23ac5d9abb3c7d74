"""Names: trace name -> trace slug, operator name -> operator slug and workload family.

Families are the store schema's `workload_family` vocabulary. Matching is on whole words of the
operator name (`norm` must not fire inside `normal_and_transform`), in a fixed priority order.
"""

from __future__ import annotations

import re

TRACE_NUMBERED_RE = re.compile(r"^kernel_opt_(\d+)_(.+)$", re.I)
_CONTAINER_WORDS = {"root", "home", "work", "tmp", "data", "src", "repo", "repos", "traces", "trace", "kernel", "opt"}
_ABBREV = {"attention": "attn", "backward": "bwd", "forward": "fwd", "projection": "proj",
           "normalization": "norm", "convolution": "conv", "activation": "act"}
_DROP = {"with", "and", "the", "a", "of", "for", "to", "using", "based"}
# Operators that recur with one shape constant in the name are one operator family in the store.
_MERGE_RULES = [
    (re.compile(r"^gemm_n\d+_k\d+$"), "dense-gemm-shape-sweep"),
    (re.compile(r"^(fused_add_)?rmsnorm_h\d+$"), "rmsnorm-and-fused-add-rmsnorm"),
    (re.compile(r"^gqa_paged_decode\w*$"), "gqa-paged-decode"),
    (re.compile(r"^gqa_paged_prefill\w*$"), "gqa-paged-prefill"),
    (re.compile(r"^gqa_ragged_prefill\w*$"), "gqa-ragged-prefill"),
    (re.compile(r"^mla_paged_decode\w*$"), "mla-paged-decode"),
    (re.compile(r"^mla_paged_prefill\w*$"), "mla-paged-prefill"),
    (re.compile(r"^moe_fp8_block_scale\w*$"), "moe-fp8-block-scale"),
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
    ("gemm-projection", {"gemm", "matmul", "mm", "bmm", "proj", "projection", "linear", "dense", "qkv"}),
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


def operator_slug(operator_name: str) -> str:
    words = _words(operator_name)
    joined = "_".join(words)
    for pattern, slug in _MERGE_RULES:
        if pattern.match(joined):
            return slug
    kept = [_ABBREV.get(w, w) for w in words if w not in _DROP and not w.isdigit()]
    return "-".join(kept[:5]) or "unknown"


def workload_family(operator_name: str) -> str:
    words = set(_words(operator_name))
    # "fused_add_rmsnorm" style compounds: also look inside snake_case words split above
    for family, vocab in _FAMILY_WORDS:
        if words & vocab:
            return family
    return "misc"
