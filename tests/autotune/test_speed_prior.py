"""The search tries first the configs that ranked best at other problem sizes of the kernel."""

from __future__ import annotations

import textwrap

import pytest

from tunegate.autotune import Store, Tuner
from tunegate.autotune.pool import close_idle_workers
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.policy import Policy

pytestmark = pytest.mark.interpreter

KERNEL = '''
import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Parameter, PowerOfTwo, Space


@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def inputs(size):
    def make_inputs(seed, device):
        g = torch.Generator().manual_seed(seed)
        return {"x_ptr": torch.randn(size, generator=g).to(device),
                "y_ptr": torch.empty(size, device=device), "n": size}
    return make_inputs


def task(size):
    return Task(name="double", kernel=kernel,
                space=Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=16, high=128))}),
                grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                make_inputs=inputs(size), outputs=("y_ptr",),
                reference=lambda x_ptr, y_ptr, n: x_ptr * 2)


LARGE, SMALL = task(256), task(64)
'''


def test_candidates_come_in_the_order_of_their_rank_at_another_size(tmp_path):
    path = tmp_path / "double.py"
    path.write_text(textwrap.dedent(KERNEL))
    module, store = load_module(path), Store(tmp_path / "s.sqlite")
    large = Tuner(module.LARGE, TaskRef(str(path), "LARGE"), policy=Policy([]),
                  store=store).run()
    small = Tuner(module.SMALL, TaskRef(str(path), "SMALL"), policy=Policy([]),
                  store=store).run()
    close_idle_workers()
    ranked = [t.config for t in sorted(large.trials, key=lambda t: t.time_ms)]
    assert len(ranked) == 4 and small.problem != large.problem
    assert ranked != [t.config for t in large.trials]  # not the space's own order already
    assert [t.config for t in small.trials] == ranked
