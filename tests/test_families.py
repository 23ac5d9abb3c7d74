"""Trace names -> slugs; operator names -> operator slug and the store's workload families."""

import json

import pytest

from conftest import ROOT
from optrace.families import operator_slug, trace_slug, workload_family

FAMILIES = {"attention", "conv-vision", "decoder-layer", "gemm-projection", "mask-index", "misc", "mlp-activation",
            "moe", "norm", "rope", "ssm-linear-attention"}


@pytest.mark.parametrize("name,slug", [
    ("kernel_opt_001_fused_softmax_h4096", "001-fused-softmax-h4096"),
    ("kernel_opt_fused_moe_fp8_triton_l20n_production", "kernel-opt-fused-moe-fp8-triton-l20n-production"),
    ("My Trace!!", "my-trace"),
    ("___", "trace"),
])
def test_trace_slug(name, slug):
    assert trace_slug(name) == slug


@pytest.mark.parametrize("name,slug,family", [
    ("fused_add_rmsnorm_h4096", "rmsnorm-and-fused-add-rmsnorm", "norm"),
    ("rmsnorm_h4096", "rmsnorm-and-fused-add-rmsnorm", "norm"),
    ("gemm_n28672_k4096", "dense-gemm-shape-sweep", "gemm-projection"),
    ("gqa_paged_decode_h32_kv8_d128_ps1", "gqa-paged-decode", "attention"),
    ("mla_paged_prefill_causal_h16", "mla-paged-prefill", "attention"),
    ("moe_fp8_block_scale_ds_routing_topk8", "moe-fp8-block-scale", "moe"),
    ("kernel_opt_003_flash_attention_backward", "flash-attn-bwd", "attention"),
    ("chunk_gdn_fwd", "chunk-gdn-fwd", "ssm-linear-attention"),
    ("silu_and_mul", "silu-mul", "mlp-activation"),
    ("rope_qk_inplace", "rope-qk-inplace", "rope"),
    ("conv2d_nhwc_3x3", "conv2d-nhwc-3x3", "conv-vision"),
    ("top_k_sampling_from_probs", "top-k-sampling-from-probs", "mask-index"),
    ("normal_and_transform", "normal-transform", "misc"),  # "norm" only as a whole word
    ("kernel_opt_002", "unknown", "misc"),
])
def test_operator_slug_and_family(name, slug, family):
    assert operator_slug(name) == slug
    assert workload_family(name) == family


def test_families_are_the_store_schema_vocabulary():
    meta_schema = json.loads((ROOT / "schemas" / "meta.schema.json").read_text())
    assert set(meta_schema["properties"]["workload_family"]["enum"]) == FAMILIES
    assert all(workload_family(n) in FAMILIES for n in ("x", "attention", "moe_gate", "layernorm", "qkv_proj"))
