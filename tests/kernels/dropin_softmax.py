"""Triton's fused-softmax tutorial kernel with one line changed: the import of triton."""

import torch

import tunegate.triton as triton  # was: import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=2),
                          triton.Config({}, num_warps=2, num_stages=4)],
                 key=["n_cols"])
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out_row = out_ptr + row * out_row_stride
    tl.store(out_row + cols, num / tl.sum(num, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                              BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y
