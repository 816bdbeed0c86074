"""triton-lang/triton#8259: a tl.range that stores to an address and loads it back reads stale
data once software-pipelined (inner num_stages >= 2). On an H200 with Triton 3.6.0 every such
config was wrong (shared/evidence/store_load_h200.json); every element of `diff` must be 0."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.outcome import Outcome
from tunegate.space import Choice, Parameter, Space


@triton.jit
def store_then_load(x_ptr, scratch_ptr, diff_ptr, n, OUTER: tl.constexpr, INNER: tl.constexpr,
                    BLOCK: tl.constexpr, INNER_STAGES: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bad = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(OUTER):
        for j in tl.range(0, INNER, num_stages=INNER_STAGES):
            value = x + (i * INNER + j)
            tl.store(scratch_ptr + offs, value, mask=mask)
            back = tl.load(scratch_ptr + offs, mask=mask, other=0.0)
            bad += tl.where(back == value, 0.0, 1.0)
    tl.store(diff_ptr + offs, bad, mask=mask)


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator(device).manual_seed(seed)
    n = 4096 * 132
    return {"x_ptr": torch.randn(n, generator=g, device=device),
            "scratch_ptr": torch.randn(n, generator=g, device=device),
            "diff_ptr": torch.empty(n, device=device), "n": n, "OUTER": 4, "INNER": 64}


def reference(x_ptr, scratch_ptr, diff_ptr, n, OUTER, INNER):
    scratch_ptr.copy_(x_ptr + (OUTER * INNER - 1))  # the last value the loop stores
    return torch.zeros_like(diff_ptr)


TASK = Task(
    name="repro_store_then_load", kernel=store_then_load,
    space=Space(parameters={
        "BLOCK": Parameter(domain=Choice(choices=(1024,), default=1024)),
        "INNER_STAGES": Parameter(domain=Choice(choices=(1, 2, 3), default=1),
                                  features=["range_num_stages"]),
        "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
    }),
    grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), make_inputs=make_inputs,
    outputs=("diff_ptr",), reference=reference)

REPRODUCER = Reproducer(task=TASK, shows=(Outcome.WRONG,))
