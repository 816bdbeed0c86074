"""Matmul with grouped program ordering; fp16 inputs, fp32 accumulation.

    tunegate tune examples/matmul.py:TASK
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import Choice, IntRange, Parameter, PowerOfTwo, Space

interpret_without_gpu()


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :],
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def space(low: int, high: int, stages: int = 1, warps: tuple = (4,)) -> Space:
    return Space(parameters={
        "BLOCK_M": Parameter(domain=PowerOfTwo(low=low, high=high)),
        "BLOCK_N": Parameter(domain=PowerOfTwo(low=low, high=high)),
        "BLOCK_K": Parameter(domain=PowerOfTwo(low=low, high=min(high, 64))),
        "GROUP_M": Parameter(domain=Choice(choices=(1, 8), default=8)),
        "num_warps": Parameter(domain=Choice(choices=warps, default=warps[0])),
        "num_stages": Parameter(domain=IntRange(low=1, high=stages), features=["num_stages"]),
    })


def inputs(m: int, n: int, k: int, dtype=torch.float16):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        return {"a_ptr": torch.randn(m, k, generator=g, device=device).to(dtype),
                "b_ptr": torch.randn(k, n, generator=g, device=device).to(dtype),
                "c_ptr": torch.empty(m, n, device=device, dtype=dtype),
                "M": m, "N": n, "K": k}
    return make


def reference(a_ptr, b_ptr, c_ptr, M, N, K):
    return (a_ptr.double() @ b_ptr.double()).to(c_ptr.dtype)


def grid(meta):
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"]),)


# fp16 output of a K=64 dot: values ~8, fp16 spacing there is 2**-7; allow a few ulps.
TOLERANCES = {"float16": (1e-2, 5e-2)}

TASK = Task(name="matmul", kernel=matmul, space=space(16, 32), grid=grid,
            make_inputs=inputs(48, 48, 64), outputs=("c_ptr",), reference=reference,
            tolerances=TOLERANCES)

TASK_LARGE = Task(name="matmul", kernel=matmul, space=space(64, 256, 5, (4, 8)), grid=grid,
                  make_inputs=inputs(4096, 4096, 4096), outputs=("c_ptr",), reference=reference,
                  tolerances={"float16": (1e-2, 1e-1)})
