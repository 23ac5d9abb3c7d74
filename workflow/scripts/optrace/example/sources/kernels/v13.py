"""v13: Gluon, 16-byte BlockedLayout; two rows per CTA when batch_size <= 64."""

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

HIDDEN = 4096
EPS = 1e-5
NUM_WARPS = 4
CTAS_PER_SM = 4
SMALL_BATCH = 64


@gluon.jit
def _fused_add_rmsnorm_kernel_persistent(h_ptr, r_ptr, w_ptr, out_ptr, n_rows, stride, eps,
                                         HIDDEN: gl.constexpr, ROWS: gl.constexpr,
                                         layout: gl.constexpr):
    pid = gl.program_id(0)
    nprog = gl.num_programs(0)
    offs = gl.arange(0, HIDDEN, layout=layout)
    w = gl.load(w_ptr + offs, eviction_policy="evict_last").to(gl.float32)
    for start in range(pid * ROWS, n_rows, nprog * ROWS):
        # ROWS independent rows per iteration: their load -> reduce -> store chains overlap
        for i in gl.static_range(ROWS):
            row = start + i
            mask = (offs < HIDDEN) & (row < n_rows)
            base = gl.multiple_of(row * stride, 16)
            h = gl.load(h_ptr + base + offs, mask=mask, other=0.0, eviction_policy="evict_first")
            r = gl.load(r_ptr + base + offs, mask=mask, other=0.0, eviction_policy="evict_first")
            x = h.to(gl.float32) + r.to(gl.float32)
            rstd = gl.rsqrt(gl.sum(x * x, axis=0) / HIDDEN + eps)
            y = (x * rstd * w).to(out_ptr.dtype.element_ty)
            gl.store(out_ptr + base + offs, y, mask=mask, eviction_policy="evict_first")


# each thread owns 8 contiguous bf16 = one 16-byte vector per access
ROW_LAYOUT = gl.BlockedLayout(size_per_thread=[8], threads_per_warp=[32], warps_per_cta=[4], order=[0])

_NUM_SMS = {}


def _num_sms(device):
    if device not in _NUM_SMS:
        _NUM_SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _NUM_SMS[device]


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    assert hidden_states.is_contiguous() and residual.is_contiguous() and output.is_contiguous()
    rows = 2 if batch_size <= SMALL_BATCH else 1
    grid = (min(triton.cdiv(batch_size, rows), _num_sms(hidden_states.device) * CTAS_PER_SM),)
    _fused_add_rmsnorm_kernel_persistent[grid](
        hidden_states, residual, weight, output, batch_size, hidden_states.stride(0), EPS,
        HIDDEN=HIDDEN, ROWS=rows, layout=ROW_LAYOUT, num_warps=NUM_WARPS)
    return output
