"""The store-then-load hazard of DESIGN.md: a tl.range loop that stores to an address and loads it
back. Pipelined (num_stages >= 2) on an H200 the load reads stale data (triton-lang/triton#8259;
shared/evidence/store_load_h200.json: wrong in every such config). Every element of `diff` must
be 0. The kernel has the `store_then_load` trait, so the built-in `pipelined-store-load` rule
removes INNER_STAGES > 1 from the region before anything is compiled.

Under the CPU interpreter the loop runs sequentially and every config is right; on a GPU the
rule is what keeps the tuner away from the wrong ones.

    tunegate tune examples/store_load.py:TASK
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import Boolean, IntRange, Parameter, PowerOfTwo, Space

interpret_without_gpu()


@triton.jit
def store_then_load(x_ptr, scratch_ptr, diff_ptr, n, OUTER: tl.constexpr, INNER: tl.constexpr,
                    BLOCK: tl.constexpr, INNER_STAGES: tl.constexpr, UNROLL: tl.constexpr,
                    FLATTEN: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bad = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(OUTER):
        for j in tl.range(0, INNER, num_stages=INNER_STAGES, loop_unroll_factor=UNROLL,
                          flatten=FLATTEN):
            value = x + (i * INNER + j)
            tl.store(scratch_ptr + offs, value, mask=mask)
            back = tl.load(scratch_ptr + offs, mask=mask, other=0.0)
            bad += tl.where(back == value, 0.0, 1.0)
    tl.store(diff_ptr + offs, bad, mask=mask)


def space(max_block: int = 128) -> Space:
    return Space(parameters={
        "BLOCK": Parameter(domain=PowerOfTwo(low=32, high=max_block)),
        "INNER_STAGES": Parameter(domain=IntRange(low=1, high=3), features=["range_num_stages"]),
        "UNROLL": Parameter(domain=IntRange(low=1, high=2), features=["range_unroll"]),
        "FLATTEN": Parameter(domain=Boolean(), features=["range_flatten"]),
        "num_warps": Parameter(domain=PowerOfTwo(low=1, high=4, default=4)),
    })


def inputs(n: int, outer: int, inner: int):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        return {"x_ptr": torch.randn(n, generator=g, device=device),
                "scratch_ptr": torch.randn(n, generator=g, device=device),
                "diff_ptr": torch.empty(n, device=device), "n": n,
                "OUTER": outer, "INNER": inner}
    return make


def reference(x_ptr, scratch_ptr, diff_ptr, n, OUTER, INNER):
    scratch_ptr.copy_(x_ptr + (OUTER * INNER - 1))  # the last value the loop stores
    return torch.zeros_like(diff_ptr)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


TASK = Task(name="store_then_load", kernel=store_then_load, space=space(), grid=grid,
            make_inputs=inputs(256, 2, 4), outputs=("diff_ptr",), reference=reference)

TASK_LARGE = Task(name="store_then_load", kernel=store_then_load, space=space(1024), grid=grid,
                  make_inputs=inputs(4096 * 132, 4, 64), outputs=("diff_ptr",),
                  reference=reference)
