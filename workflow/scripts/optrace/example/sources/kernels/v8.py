"""v8 (episode 7): persistent single pass with 16-byte vector loads and eviction hints, BLOCK 2048."""

import torch
import triton
import triton.language as tl

HIDDEN = 4096
EPS = 1e-5
BLOCK = 2048
CTAS_PER_SM = 4


@triton.jit
def _fused_add_rmsnorm_kernel_persistent(h_ptr, r_ptr, w_ptr, out_ptr, n_rows, stride, eps,
                                         N_BLOCKS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, N_BLOCKS)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    # the weight stays in L2 for the whole launch; the streamed rows should not displace it
    w = tl.load(w_ptr + offs, eviction_policy="evict_last").to(tl.float32)
    for row in range(pid, n_rows, nprog):
        base = tl.multiple_of(row * stride, 16)  # row starts are 16-byte aligned -> 128-bit accesses
        h = tl.load(h_ptr + base + offs, eviction_policy="evict_first").to(tl.float32)
        r = tl.load(r_ptr + base + offs, eviction_policy="evict_first").to(tl.float32)
        x = h + r
        rstd = tl.rsqrt(tl.sum(tl.sum(x * x, axis=1), axis=0) / (N_BLOCKS * BLOCK) + eps)
        y = (x * rstd * w).to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + base + offs, y, eviction_policy="evict_first")


_NUM_SMS = {}


def _num_sms(device):
    if device not in _NUM_SMS:
        _NUM_SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _NUM_SMS[device]


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    # the alignment hint above is a promise: strided views would break it
    assert hidden_states.is_contiguous() and residual.is_contiguous() and output.is_contiguous()
    grid = (min(batch_size, _num_sms(hidden_states.device) * CTAS_PER_SM),)
    _fused_add_rmsnorm_kernel_persistent[grid](
        hidden_states, residual, weight, output, batch_size, hidden_states.stride(0), EPS,
        N_BLOCKS=hidden // BLOCK, BLOCK=BLOCK, num_warps=8)
    return output
