"""Split-K matmul whose partial sums are added atomically into an output nobody zeroed.

With SPLIT_K == 1 every program stores its tile and the result is right. With SPLIT_K > 1 the
programs `tl.atomic_add` into C, which is right only if C started at zero; here the launcher
(like many real ones) forgot to zero it, so those configs are wrong on every backend, CPU
interpreter included. The built-in `split-k-atomics` rule makes SPLIT_K > 1 experimental, so
tunegate checks each such config before trusting its timing, and rejects them.

    tunegate tune examples/splitk.py:TASK
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task, interpret_without_gpu
from tunegate.space import Choice, Parameter, PowerOfTwo, Space

interpret_without_gpu()


@triton.jit
def splitk_matmul(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    rm = (pid // grid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % grid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc, mask=mask)
    else:
        tl.atomic_add(c_ptrs, acc, mask=mask)


def space(max_block: int = 32) -> Space:
    return Space(parameters={
        "BLOCK_M": Parameter(domain=PowerOfTwo(low=16, high=max_block)),
        "BLOCK_N": Parameter(domain=PowerOfTwo(low=16, high=max_block)),
        "BLOCK_K": Parameter(domain=PowerOfTwo(low=16, high=max_block)),
        "SPLIT_K": Parameter(domain=PowerOfTwo(low=1, high=4), features=["split_k"]),
        "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
    })


def inputs(m: int, n: int, k: int):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)  # drawn where the kernel runs
        return {
            "a_ptr": torch.randn(m, k, generator=g, device=device),
            "b_ptr": torch.randn(k, n, generator=g, device=device),
            "c_ptr": torch.empty(m, n, device=device),  # not zeroed: the bug under test
            "M": m, "N": n, "K": k,
        }
    return make


def reference(a_ptr, b_ptr, c_ptr, M, N, K):
    return (a_ptr.double() @ b_ptr.double()).to(c_ptr.dtype)


def grid(meta):
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"]),
            meta["SPLIT_K"])


TASK = Task(name="splitk_matmul", kernel=splitk_matmul, space=space(), grid=grid,
            make_inputs=inputs(32, 32, 64), outputs=("c_ptr",), reference=reference)

# fp32 sums of 4096 products of magnitude ~1: the rounding error of any summation order is
# about sqrt(K) * eps * |partial sum| ~ 3e-4 absolute, so outputs near zero need that atol
# (measured on an H200: 3.2e-4 for the unsplit, correct configs).
TASK_LARGE = Task(name="splitk_matmul", kernel=splitk_matmul, space=space(128), grid=grid,
                  make_inputs=inputs(1024, 1024, 4096), outputs=("c_ptr",), reference=reference,
                  tolerances={"float32": (1e-4, 2e-3)})
