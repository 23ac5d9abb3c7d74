"""v2: single pass. The residual sum stays in registers between the variance and the scale."""

import triton
import triton.language as tl

HIDDEN = 4096
EPS = 1e-5
BLOCK = 1024


@triton.jit
def _fused_add_rmsnorm_kernel(h_ptr, r_ptr, w_ptr, out_ptr, stride, eps,
                              N_BLOCKS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    # the whole row as an [N_BLOCKS, BLOCK] tile: each input is read exactly once
    offs = tl.arange(0, N_BLOCKS)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    h = tl.load(h_ptr + row * stride + offs).to(tl.float32)
    r = tl.load(r_ptr + row * stride + offs).to(tl.float32)
    x = h + r
    mean_sq = tl.sum(tl.sum(x * x, axis=1), axis=0) / (N_BLOCKS * BLOCK)
    rstd = tl.rsqrt(mean_sq + eps)
    w = tl.load(w_ptr + offs).to(tl.float32)
    tl.store(out_ptr + row * stride + offs, (x * rstd * w).to(out_ptr.dtype.element_ty))


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    n_blocks = hidden // BLOCK  # 4 tiles of 1024 cover the row
    _fused_add_rmsnorm_kernel[(batch_size,)](
        hidden_states, residual, weight, output, hidden_states.stride(0), EPS,
        N_BLOCKS=n_blocks, BLOCK=BLOCK, num_warps=4)
    return output
