"""Fused softmax in the style of Triton's tutorial 02: programs stride over the rows.

Each program keeps one row in registers (BLOCK_SIZE columns), so the kernel reads the input
once and writes the output once; the row loop is software-pipelined by the launch's
`num_stages`. TASK_ANCHOR is the 16-config list of issue 10 (8192 x 8192 fp16).

    tunegate tune examples/tutorial_softmax.py:TASK
"""

import itertools

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import Choice, Parameter, Space

interpret_without_gpu()

ROWS_PER_PROGRAM = 8  # the grid: one program per 8 rows, each striding over the matrix


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    first_row = tl.program_id(0)
    row_step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    for row in tl.range(first_row, n_rows, row_step):
        x = tl.load(input_ptr + row * input_row_stride + cols, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        numerator = tl.exp(x - tl.max(x, axis=0))
        y = numerator / tl.sum(numerator, axis=0)
        tl.store(output_ptr + row * output_row_stride + cols, y, mask=mask)


def space(n_cols: int, warps: tuple[int, ...], stages: tuple[int, ...]) -> Space:
    block = triton.next_power_of_2(n_cols)
    return Space(parameters={
        "BLOCK_SIZE": Parameter(domain=Choice(choices=(block,), default=block)),
        "num_warps": Parameter(domain=Choice(choices=warps, default=warps[0])),
        "num_stages": Parameter(domain=Choice(choices=stages, default=stages[0]),
                                features=["num_stages"]),
    })


def candidates(space: Space, warps: tuple[int, ...], stages: tuple[int, ...]) -> tuple:
    """Every (num_warps, num_stages) pair, as points of `space`."""
    return tuple(space.complete({"num_warps": w, "num_stages": s})
                 for w, s in itertools.product(warps, stages))


def inputs(rows: int, cols: int, dtype=torch.float16):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        x = (3 * torch.randn(rows, cols, generator=g, device=device)).to(dtype)
        y = torch.empty(rows, cols, device=device, dtype=dtype)
        return {"output_ptr": y, "input_ptr": x, "input_row_stride": x.stride(0),
                "output_row_stride": y.stride(0), "n_rows": rows, "n_cols": cols}
    return make


def reference(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols):
    return torch.softmax(input_ptr.double(), dim=-1).to(output_ptr.dtype)


def grid(meta):
    return (triton.cdiv(meta["n_rows"], ROWS_PER_PROGRAM),)


def _task(rows: int, cols: int, warps: tuple[int, ...], stages: tuple[int, ...]) -> Task:
    s = space(cols, warps, stages)
    return Task(name="tutorial_softmax", kernel=softmax_kernel, space=s, grid=grid,
                make_inputs=inputs(rows, cols), outputs=("output_ptr",), reference=reference,
                configs=candidates(s, warps, stages))


TASK = _task(24, 96, (1, 2), (1, 2))
TASK_SMOKE = _task(16, 64, (1, 2), (1,))
TASK_ANCHOR = _task(8192, 8192, (4, 8, 16, 32), (1, 2, 3, 4))
