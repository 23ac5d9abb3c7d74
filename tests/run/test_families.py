"""Trace names -> slugs; operator names -> operator slug and the store's workload families."""

import json

import pytest

from optrace.run.families import STORE_OPERATOR_FAMILIES, operator_slug, trace_slug, workload_family
from tests.support.paths import SCHEMAS

FAMILIES = {
    "attention",
    "conv-vision",
    "decoder-layer",
    "gemm-projection",
    "mask-index",
    "misc",
    "mlp-activation",
    "moe",
    "norm",
    "rope",
    "ssm-linear-attention",
}


@pytest.mark.parametrize(
    "name,slug",
    [
        ("kernel_opt_001_fused_softmax_h4096", "001-fused-softmax-h4096"),
        ("kernel_opt_fused_moe_fp8_triton_l20n_production", "kernel-opt-fused-moe-fp8-triton-l20n-production"),
        ("My Trace!!", "my-trace"),
        ("___", "trace"),
    ],
)
def test_trace_slug(name, slug):
    assert trace_slug(name) == slug


@pytest.mark.parametrize(
    "name,slug,family",
    [
        ("fused_add_rmsnorm_h4096", "norm", "norm"),
        ("rmsnorm_h4096", "norm", "norm"),
        ("gemm_n28672_k4096", "gemm", "gemm-projection"),
        ("sgemm", "gemm", "gemm-projection"),
        ("sgemm_fp32_m4096", "gemm", "gemm-projection"),
        ("fused_moe", "moe", "moe"),
        ("fused_moe_fp8_triton_l20n", "moe", "moe"),
        ("gqa_paged_decode_h32_kv8_d128_ps1", "paged-attention", "attention"),
        ("mla_paged_prefill_causal_h16", "mla", "attention"),
        ("moe_fp8_block_scale_ds_routing_topk8", "moe", "moe"),
        ("kernel_opt_003_flash_attention_backward", "flash-attention", "attention"),
        ("flash_attention_l20n", "flash-attention", "attention"),
        ("chunk_gdn_fwd", "gdn", "ssm-linear-attention"),
        ("silu_and_mul", "silu-mul", "mlp-activation"),
        ("rope_qk_inplace", "rope-qk-inplace", "rope"),
        ("conv2d_nhwc_3x3", "conv", "conv-vision"),
        ("top_k_sampling_from_probs", "top-k-sampling-from-probs", "mask-index"),
        ("normal_and_transform", "normal-transform", "misc"),  # "norm" only as a whole word
        ("kernel_opt_002", "unknown", "misc"),
    ],
)
def test_operator_slug_and_family(name, slug, family):
    assert operator_slug(name) == slug
    assert workload_family(name) == family


def test_families_are_the_store_schema_vocabulary():
    meta_schema = json.loads((SCHEMAS / "meta.schema.json").read_text())
    assert set(meta_schema["properties"]["workload_family"]["enum"]) == FAMILIES
    assert all(workload_family(n) in FAMILIES for n in ("x", "attention", "moe_gate", "layernorm", "qkv_proj"))


def test_operator_families_are_the_live_stores_own_vocabulary(shared_data):
    """Every family the table files records under is one the real store uses (read at run time)."""
    store = {
        (json.loads(p.read_text()).get("retrieval") or {}).get("scope", {}).get("operator_family")
        for p in (shared_data / "upstream-store" / "records").rglob("*.json")
        if p.name != "index.json"
    }
    assert {family for family, _ in STORE_OPERATOR_FAMILIES} <= store
    assert {"norm", "gemm", "moe"} <= store  # the three the realistic traces need
