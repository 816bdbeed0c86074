"""Layer norm over the last dimension, two passes over each row in BLOCK-wide chunks.

    tunegate tune examples/layernorm.py:TASK
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import IntRange, Parameter, PowerOfTwo, Space

interpret_without_gpu()


@triton.jit
def layernorm(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr,
              STAGES: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=0) / n_cols
    var = tl.sum(acc2, axis=0) / n_cols - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def space(low: int, high: int, max_warps: int = 8) -> Space:
    return Space(parameters={
        "BLOCK": Parameter(domain=PowerOfTwo(low=low, high=high)),
        "STAGES": Parameter(domain=IntRange(low=1, high=3), features=["range_num_stages"]),
        "num_warps": Parameter(domain=PowerOfTwo(low=1, high=max_warps, default=min(4, max_warps))),
    })


def inputs(rows: int, cols: int, dtype=torch.float32):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        return {"x_ptr": (torch.randn(rows, cols, generator=g, device=device) + 0.5).to(dtype),
                "w_ptr": torch.randn(cols, generator=g, device=device).to(dtype),
                "b_ptr": torch.randn(cols, generator=g, device=device).to(dtype),
                "y_ptr": torch.empty(rows, cols, device=device, dtype=dtype),
                "n_cols": cols, "eps": 1e-5}
    return make


def reference(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps):
    y = torch.nn.functional.layer_norm(x_ptr.double(), (n_cols,), w_ptr.double(),
                                       b_ptr.double(), eps)
    return y.to(y_ptr.dtype)


def grid(meta):
    return (meta["x_ptr"].shape[0],)


TASK = Task(name="layernorm", kernel=layernorm, space=space(16, 64, 2), grid=grid,
            make_inputs=inputs(8, 80), outputs=("y_ptr",), reference=reference)

TASK_LARGE = Task(name="layernorm", kernel=layernorm, space=space(256, 4096, 16), grid=grid,
                  make_inputs=inputs(16384, 8192, torch.float16), outputs=("y_ptr",),
                  reference=reference)
