"""Row-wise softmax: each program handles ROWS rows in a (pipelined) tl.range loop.

A memory-bound kernel: on a GPU its time is compared against a device-to-device copy.

    tunegate tune examples/softmax.py:TASK
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import IntRange, Parameter, PowerOfTwo, Space

interpret_without_gpu()


@triton.jit
def softmax(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, ROWS: tl.constexpr,
            STAGES: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for r in tl.range(0, ROWS, num_stages=STAGES):
        row = pid * ROWS + r
        if row < n_rows:
            x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
            x = x - tl.max(x, axis=0)
            e = tl.exp(x)
            tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def space(n_cols: int, max_warps: int = 8) -> Space:
    block = triton.next_power_of_2(n_cols)
    return Space(parameters={
        "BLOCK": Parameter(domain=PowerOfTwo(low=block, high=block)),
        "ROWS": Parameter(domain=PowerOfTwo(low=1, high=8)),
        "STAGES": Parameter(domain=IntRange(low=1, high=3), features=["range_num_stages"]),
        "num_warps": Parameter(domain=PowerOfTwo(low=1, high=max_warps, default=min(4, max_warps))),
    })


def inputs(rows: int, cols: int, dtype=torch.float32):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        return {"x_ptr": (3 * torch.randn(rows, cols, generator=g, device=device)).to(dtype),
                "y_ptr": torch.empty(rows, cols, device=device, dtype=dtype),
                "n_rows": rows, "n_cols": cols}
    return make


def reference(x_ptr, y_ptr, n_rows, n_cols):
    return torch.softmax(x_ptr.double(), dim=-1).to(y_ptr.dtype)


def grid(meta):
    return (triton.cdiv(meta["n_rows"], meta["ROWS"]),)


TASK = Task(name="softmax", kernel=softmax, space=space(96, 4), grid=grid,
            make_inputs=inputs(16, 96), outputs=("y_ptr",), reference=reference)

TASK_LARGE = Task(name="softmax", kernel=softmax, space=space(4096, 16), grid=grid,
                  make_inputs=inputs(32768, 4096), outputs=("y_ptr",), reference=reference)
