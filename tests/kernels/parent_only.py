"""An autotuned kernel whose module imports only in the process that set a flag first (as a
module that needs the program's own sys.path or state would): no worker process can load it."""

import builtins

import torch

import tunegate.triton as triton
import triton.language as tl

if not getattr(builtins, "_tunegate_test_parent", False):
    raise ImportError("parent_only imports only in the test process")


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                 key=["n"])
@triton.jit
def negate_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def negate(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    negate_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                 key=["n"])
@triton.jit
def negate_first_unbuildable_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK != 32)  # the first config, the baseline, cannot be built
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def negate_first_unbuildable(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    negate_first_unbuildable_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](
        x, y, x.numel())
    return y
