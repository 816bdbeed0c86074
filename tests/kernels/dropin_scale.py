"""A doubling kernel behind the drop-in whose most conservative listed config has one warp, and
the same kernel with a lambda for its reference (which no worker process can be sent)."""

import torch

import tunegate.triton as triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1),
                          triton.Config({"BLOCK": 32}, num_warps=2),
                          triton.Config({"BLOCK": 64}, num_warps=4),
                          triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def double(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    scale_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


scale_with_lambda = triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
    reference=lambda x_ptr, y_ptr, n: {"y_ptr": 2 * x_ptr})(scale_kernel.fn)


def double_checked(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    scale_with_lambda[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y
