"""triton-lang/triton#9728 / #8311: `warp_specialize=True` in a tl.range on Hopper (sm_90) fails
inside the compiler ('PassManager::run failed', or an assertion that kills the process); on an
H200 with Triton 3.6.0 every block size failed (shared/evidence/known_bugs_h200.txt)."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.outcome import Outcome
from tunegate.space import Boolean, Choice, Parameter, Space


@triton.jit
def ws_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, WS: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=WS):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"a_ptr": torch.randn(512, 512, generator=g).to(device, torch.float16),
            "b_ptr": torch.randn(512, 512, generator=g).to(device, torch.float16),
            "c_ptr": torch.empty(512, 512, device=device, dtype=torch.float16),
            "M": 512, "N": 512, "K": 512}


TASK = Task(
    name="repro_warp_specialize", kernel=ws_matmul,
    space=Space(parameters={
        "BLOCK_M": Parameter(domain=Choice(choices=(64, 128), default=64)),
        "BLOCK_N": Parameter(domain=Choice(choices=(64,), default=64)),
        "BLOCK_K": Parameter(domain=Choice(choices=(64,), default=64)),
        "WS": Parameter(domain=Boolean(), features=["range_warp_specialize"]),
        "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
    }),
    grid=lambda meta: (meta["M"] // meta["BLOCK_M"], meta["N"] // meta["BLOCK_N"]),
    make_inputs=make_inputs, outputs=("c_ptr",),
    reference=lambda a_ptr, b_ptr, c_ptr, M, N, K: (a_ptr.double() @ b_ptr.double()).half(),
    tolerances={"float16": (1e-2, 1e-1)})

REPRODUCER = Reproducer(task=TASK, shows=(Outcome.COMPILE_ERROR, Outcome.CRASHED))
