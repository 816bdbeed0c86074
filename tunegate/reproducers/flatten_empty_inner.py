"""triton-lang/triton#11656: `tl.range(..., flatten=True)` over a nest whose run-time inner range
is empty because its upper bound is below its lower bound (`tl.range(5, end)` with end = 3)
runs the inner body once per outer iteration anyway (seen on 3.6.0, 3.7.1 and 3.8.0; an inner
range of length exactly 0 is handled). Each row's sum over the empty range must stay 0."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.outcome import Outcome
from tunegate.space import Boolean, Choice, Parameter, Space

ROWS, START, END = 4, 5, 3


@triton.jit
def row_sums(x_ptr, out_ptr, end, ROWS: tl.constexpr, START: tl.constexpr,
             BLOCK: tl.constexpr, FLATTEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for row in tl.range(0, ROWS, flatten=FLATTEN):
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for _ in tl.range(START, end):
            acc += tl.load(x_ptr + row * BLOCK + offs)
        tl.store(out_ptr + row * BLOCK + offs, acc)


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(ROWS * 32, generator=g).to(device),
            "out_ptr": torch.empty(ROWS * 32, device=device), "end": END, "ROWS": ROWS,
            "START": START}


def reference(x_ptr, out_ptr, end, ROWS, START):
    return x_ptr * max(0, end - START)  # the inner body runs end - START times, if any


TASK = Task(
    name="repro_flatten_empty_inner", kernel=row_sums,
    space=Space(parameters={
        "BLOCK": Parameter(domain=Choice(choices=(32,), default=32)),
        "FLATTEN": Parameter(domain=Boolean(), features=["range_flatten"]),
    }),
    grid=(1,), make_inputs=make_inputs, outputs=("out_ptr",), reference=reference)

REPRODUCER = Reproducer(task=TASK, shows=(Outcome.WRONG,))
