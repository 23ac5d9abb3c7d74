"""v10: Gluon port of v8 (same persistent single-pass algorithm), perf parity."""

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

HIDDEN = 4096
EPS = 1e-5
NUM_WARPS = 8
CTAS_PER_SM = 4


@gluon.jit
def _fused_add_rmsnorm_kernel_persistent(h_ptr, r_ptr, w_ptr, out_ptr, n_rows, stride, eps,
                                         HIDDEN: gl.constexpr, layout: gl.constexpr):
    pid = gl.program_id(0)
    nprog = gl.num_programs(0)
    offs = gl.arange(0, HIDDEN, layout=layout)
    w = gl.load(w_ptr + offs, eviction_policy="evict_last").to(gl.float32)
    for row in range(pid, n_rows, nprog):
        base = gl.multiple_of(row * stride, 16)
        h = gl.load(h_ptr + base + offs, eviction_policy="evict_first").to(gl.float32)
        r = gl.load(r_ptr + base + offs, eviction_policy="evict_first").to(gl.float32)
        x = h + r
        rstd = gl.rsqrt(gl.sum(x * x, axis=0) / HIDDEN + eps)
        y = (x * rstd * w).to(out_ptr.dtype.element_ty)
        gl.store(out_ptr + base + offs, y, eviction_policy="evict_first")


# mirrors the layout the Triton compiler picked for v8 (4 elements per thread, 8 warps)
ROW_LAYOUT = gl.BlockedLayout(size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[NUM_WARPS], order=[0])

_NUM_SMS = {}


def _num_sms(device):
    if device not in _NUM_SMS:
        _NUM_SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _NUM_SMS[device]


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    assert hidden_states.is_contiguous() and residual.is_contiguous() and output.is_contiguous()
    grid = (min(batch_size, _num_sms(hidden_states.device) * CTAS_PER_SM),)
    _fused_add_rmsnorm_kernel_persistent[grid](
        hidden_states, residual, weight, output, batch_size, hidden_states.stride(0), EPS,
        HIDDEN=HIDDEN, layout=ROW_LAYOUT, num_warps=NUM_WARPS)
    return output
