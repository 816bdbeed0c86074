"""`@triton.jit` helpers in a module of their own: trait detection must follow calls into them."""

import triton
import triton.language as tl


@triton.jit
def store_row(ptr, offs, value, mask):
    tl.store(ptr + offs, value, mask=mask)


@triton.jit
def pipelined_sum(ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(ptr + offs, mask=offs < n, other=0.0)
    return acc
