"""A library-style split reduction: `reset_to_zero` for its atomic output, `@triton.heuristics`
for an EVEN flag, in both decorator orders."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 16, "SPLIT": 1}),
                          triton.Config({"BLOCK": 16, "SPLIT": 2}),
                          triton.Config({"BLOCK": 32, "SPLIT": 2})],
                 key=["n"], reset_to_zero=["out_ptr"])
@triton.heuristics({"EVEN": lambda args: args["n"] % (args["BLOCK"] * args["SPLIT"]) == 0})
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr,
                   EVEN: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(part * BLOCK, n, BLOCK * SPLIT):
        offs = start + tl.arange(0, BLOCK)
        if EVEN:
            acc += tl.load(x_ptr + row * n + offs)
        else:
            acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(acc, axis=0))


@triton.heuristics({"SCALE": lambda args: 2.0 if args["double"] else 1.0})
@triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=1),
                          triton.Config({"BLOCK": 32}, num_warps=2)],
                 key=["n"], restore_value=["x_ptr"])
@triton.jit
def scale_in_place_kernel(x_ptr, n, double, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    rows, n = x.shape
    out = torch.zeros(rows, dtype=torch.float32, device=x.device)
    row_sum_kernel[lambda meta: (rows, meta["SPLIT"])](x, out, n)
    return out


def scale_in_place(x: torch.Tensor, double: bool) -> torch.Tensor:
    n = x.numel()
    scale_in_place_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, n, double)
    return x
