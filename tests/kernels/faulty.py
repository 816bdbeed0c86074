"""A kernel that hangs for one config (MODE=1) and fails to build for another (MODE=2)."""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, PowerOfTwo, Space


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MODE == 1:
        i = 0
        while i >= 0:  # never ends: a hung kernel
            i += 1
    if MODE == 2:
        x = x + tl.arange(0, 3)  # not a power of two: rejected when the kernel is built
    tl.store(y_ptr + offs, 2 * x, mask=mask)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(200, generator=g).to(device),
            "y_ptr": torch.empty(200, device=device), "n": 200}


TASK = Task(
    name="faulty_scale", kernel=scale,
    space=Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=32, high=64)),
                            "MODE": Parameter(domain=Choice(choices=(0, 1, 2), default=0))}),
    grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), make_inputs=make_inputs,
    outputs=("y_ptr",), reference=lambda x_ptr, y_ptr, n: 2 * x_ptr)
