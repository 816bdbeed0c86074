"""Matmul in the style of Triton's tutorial 03: grouped program ordering, pointer increments.

fp16 inputs, fp32 accumulation, fp16 output. TASK_ANCHOR is the 64-config list of issue 10:
4096^3, GROUP_SIZE_M 8, BLOCK_SIZE_M, BLOCK_SIZE_N in {64, 128, 256} with M*N <= 32768,
BLOCK_SIZE_K in {32, 64}, num_warps {4, 8}, num_stages {3, 4}.

    tunegate tune examples/tutorial_matmul.py:TASK
"""

import itertools

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import Choice, Parameter, Space

interpret_without_gpu()


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    # Programs walk the output in groups of GROUP_SIZE_M block-rows, column by column, so
    # neighbouring programs share rows of A and columns of B in the L2 cache.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_SIZE_M)
    blocks_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * blocks_n
    group_first_m = (pid // per_group) * GROUP_SIZE_M
    group_rows = min(blocks_m - group_first_m, GROUP_SIZE_M)
    pid_m = group_first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rows = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M  # wrap: loads stay in bounds
    cols = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    ks = tl.arange(0, BLOCK_SIZE_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        left = K - k * BLOCK_SIZE_K
        a = tl.load(a_tile, mask=ks[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_SIZE_K * stride_ak
        b_tile += BLOCK_SIZE_K * stride_bk

    out_rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    out_cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_tile = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(tl.float16), mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


def space(blocks: tuple[int, ...], ks: tuple[int, ...], warps: tuple[int, ...],
          stages: tuple[int, ...]) -> Space:
    def choice(values: tuple[int, ...]) -> Choice:
        return Choice(choices=values, default=values[0])

    return Space(parameters={
        "BLOCK_SIZE_M": Parameter(domain=choice(blocks)),
        "BLOCK_SIZE_N": Parameter(domain=choice(blocks)),
        "BLOCK_SIZE_K": Parameter(domain=choice(ks)),
        "GROUP_SIZE_M": Parameter(domain=choice((8,))),
        "num_warps": Parameter(domain=choice(warps)),
        "num_stages": Parameter(domain=choice(stages), features=["num_stages"]),
    })


def candidates(space: Space, max_tile: int) -> tuple:
    """Every point of `space` whose output tile has at most `max_tile` elements."""
    names = list(space.parameters)
    domains = [space.parameters[n].domain.choices for n in names]
    points = (dict(zip(names, combo)) for combo in itertools.product(*domains))
    return tuple(space.complete(p) for p in points
                 if p["BLOCK_SIZE_M"] * p["BLOCK_SIZE_N"] <= max_tile)


def inputs(m: int, n: int, k: int, dtype=torch.float16):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        a = torch.randn(m, k, generator=g, device=device).to(dtype)
        b = torch.randn(k, n, generator=g, device=device).to(dtype)
        c = torch.empty(m, n, device=device, dtype=dtype)
        return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": m, "N": n, "K": k,
                "stride_am": a.stride(0), "stride_ak": a.stride(1),
                "stride_bk": b.stride(0), "stride_bn": b.stride(1),
                "stride_cm": c.stride(0), "stride_cn": c.stride(1)}
    return make


def reference(a_ptr, b_ptr, c_ptr, **_):
    return (a_ptr.double() @ b_ptr.double()).to(c_ptr.dtype)


def grid(meta):
    return (triton.cdiv(meta["M"], meta["BLOCK_SIZE_M"])
            * triton.cdiv(meta["N"], meta["BLOCK_SIZE_N"]),)


# fp16 output of a sum of K products of N(0,1) values: |c| ~ sqrt(K); a few fp16 ulps there.
TOLERANCES = {"float16": (1e-2, 1e-1)}


def _task(size: int, blocks: tuple[int, ...], ks: tuple[int, ...], warps: tuple[int, ...],
          stages: tuple[int, ...], max_tile: int) -> Task:
    s = space(blocks, ks, warps, stages)
    return Task(name="tutorial_matmul", kernel=matmul_kernel, space=s, grid=grid,
                make_inputs=inputs(size, size, size), outputs=("c_ptr",), reference=reference,
                tolerances=TOLERANCES, configs=candidates(s, max_tile))


TASK = _task(64, (16, 32), (16,), (4,), (1, 2), 32 * 32)
TASK_SMOKE = _task(48, (16,), (16,), (4,), (1, 2), 16 * 16)
TASK_ANCHOR = _task(4096, (64, 128, 256), (32, 64), (4, 8), (3, 4), 32768)
