"""A test-only reproducer wrong on every backend, the interpreter included: a split-K row sum
whose partial sums are added atomically into an output nobody zeroed (no `reset_to_zero`), so
every SPLIT_K > 1 config adds onto the poison the check writes there."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.space import Choice, Parameter, Space


@triton.jit
def splitk_row_sum(x_ptr, out_ptr, K, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    per = K // SPLIT_K
    offs = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k in range(part * per, (part + 1) * per, BLOCK_K):
        acc += tl.load(x_ptr + row * K + k + offs)
    total = tl.sum(acc, axis=0)
    if SPLIT_K == 1:
        tl.store(out_ptr + row, total)
    else:
        tl.atomic_add(out_ptr + row, total)


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(4, 128, generator=g).to(device),
            "out_ptr": torch.empty(4, device=device), "K": 128}


SPACE = Space(parameters={
    "BLOCK_K": Parameter(domain=Choice(choices=(32,), default=32)),
    "SPLIT_K": Parameter(domain=Choice(choices=(1, 2, 4), default=1), features=["split_k"]),
})

TASK = Task(name="repro_splitk_row_sum", kernel=splitk_row_sum, space=SPACE,
            grid=lambda meta: (4, meta["SPLIT_K"]), make_inputs=make_inputs,
            outputs=("out_ptr",), reference=lambda x_ptr, out_ptr, K: x_ptr.double().sum(1),
            tolerances={"float32": (1e-4, 1e-4)})

# For `policy suggest`: two block sizes, so the wrong configs share only SPLIT_K > 1.
TASK_WIDE = TASK.model_copy(update={"space": Space(parameters={
    "BLOCK_K": Parameter(domain=Choice(choices=(16, 32), default=32)),
    "SPLIT_K": SPACE.parameters["SPLIT_K"]})})

REPRODUCER = Reproducer(task=TASK, shows=("wrong",), backends=("gpu", "interpreter"), draws=1)
