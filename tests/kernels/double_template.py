"""The one kernel-file template (y = 2 * x) for tests that need a task file of their own.

Workers import a task by file path, and the store, the warm start and the pool react to a file's
text, so these tests write a fresh copy per case; each knob below is one thing a test varies.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

TEMPLATE = Template('''\
import time

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Parameter, PowerOfTwo, Space


@triton.jit
def twice(x):
    return $helper


@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = twice(tl.load(x_ptr + offs, mask=mask))
    if BLOCK == $wrong_block:  # this config's output is wrong (no config when 0)
        y = y + 1
    tl.store(y_ptr + offs, y, mask=mask)


def inputs(size):
    def make_inputs(seed, device):
        time.sleep($sleep)
        g = torch.Generator().manual_seed(seed)
        return {"x_ptr": torch.randn(size, generator=g).to(device),
                "y_ptr": torch.empty(size, device=device), "n": size}
    return make_inputs


def task(size):
    return Task(name="double", kernel=kernel,
                space=Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=$low,
                                                                            high=$high))}),
                grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]) + $extra_programs,),
                make_inputs=inputs(size), outputs=("y_ptr",)$reference)


TASK = task($size)
make_inputs = TASK.make_inputs
LARGE, SMALL = task(256), task(64)  # one kernel at two problem sizes
''')


def write_double(folder: Path, name: str = "double", *, size: int = 128, low: int = 16,
                 high: int = 128, helper: str = "x * 2", wrong_block: int = 0,
                 sleep: float = 0.0, extra_programs: int = 0, reference: bool = True) -> Path:
    """Write folder/NAME.py from the template: TASK (`size` elements), LARGE and SMALL.

    `reference=False` leaves the task without one (the baseline config is the reference)."""
    text = TEMPLATE.substitute(
        size=size, low=low, high=high, helper=helper, wrong_block=wrong_block, sleep=repr(sleep),
        extra_programs=extra_programs,
        reference=", reference=lambda x_ptr, y_ptr, n: 2 * x_ptr" if reference else "")
    path = Path(folder) / f"{name}.py"
    path.write_text(text)
    return path
