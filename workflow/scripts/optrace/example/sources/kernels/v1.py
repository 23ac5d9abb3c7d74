"""v1: framework baseline (Triton). One program per row, three passes over the row."""

import triton
import triton.language as tl

HIDDEN = 4096
EPS = 1e-5
BLOCK = 1024


@triton.jit
def _fused_add_rmsnorm_kernel(h_ptr, r_ptr, w_ptr, out_ptr, stride, eps,
                              HIDDEN: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    h_row = h_ptr + row * stride
    r_row = r_ptr + row * stride
    o_row = out_ptr + row * stride
    # pass 1: x = hidden_states + residual, parked in the output buffer
    for off in range(0, HIDDEN, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(h_row + cols).to(tl.float32) + tl.load(r_row + cols).to(tl.float32)
        tl.store(o_row + cols, x.to(out_ptr.dtype.element_ty))
    # pass 2: mean of squares, reading x back from global memory
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, HIDDEN, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(o_row + cols).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / HIDDEN + eps)
    # pass 3: normalise and scale
    for off in range(0, HIDDEN, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(o_row + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
        tl.store(o_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty))


def run(hidden_states, residual, weight, output):
    batch_size, hidden = hidden_states.shape
    assert hidden == HIDDEN, "specialised for hidden_size 4096"
    _fused_add_rmsnorm_kernel[(batch_size,)](
        hidden_states, residual, weight, output, hidden_states.stride(0), EPS,
        HIDDEN=HIDDEN, BLOCK=BLOCK, num_warps=4)
    return output
