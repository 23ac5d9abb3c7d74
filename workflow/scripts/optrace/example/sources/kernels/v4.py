"""v4: persistent grid over rows (one wave of CTAs, each loops over rows), num_warps=8."""

import torch
import triton
import triton.language as tl

HIDDEN = 4096
EPS = 1e-5
BLOCK = 1024
CTAS_PER_SM = 4


@triton.jit
def _fused_add_rmsnorm_kernel_persistent(h_ptr, r_ptr, w_ptr, out_ptr, n_rows, stride, eps,
                                         N_BLOCKS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, N_BLOCKS)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    for row in range(pid, n_rows, nprog):
        h = tl.load(h_ptr + row * stride + offs).to(tl.float32)
        r = tl.load(r_ptr + row * stride + offs).to(tl.float32)
        x = h + r
        rstd = tl.rsqrt(tl.sum(tl.sum(x * x, axis=1), axis=0) / (N_BLOCKS * BLOCK) + eps)
        w = tl.load(w_ptr + offs).to(tl.float32)
        tl.store(out_ptr + row * stride + offs, (x * rstd * w).to(out_ptr.dtype.element_ty))


_NUM_SMS = {}


def _num_sms(device):
    if device not in _NUM_SMS:
        _NUM_SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _NUM_SMS[device]


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    grid = (min(batch_size, _num_sms(hidden_states.device) * CTAS_PER_SM),)
    _fused_add_rmsnorm_kernel_persistent[grid](
        hidden_states, residual, weight, output, batch_size, hidden_states.stride(0), EPS,
        N_BLOCKS=hidden // BLOCK, BLOCK=BLOCK, num_warps=8)
    return output
