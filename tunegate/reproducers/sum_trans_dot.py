"""triton-lang/triton#6691: one loop accumulating tl.sum(a) and tl.dot(tl.trans(a), b). On an
H200 (Triton 3.6.0, fp16, N=5000, D=128, block 64, 4 warps) num_stages=2 was wrong in every
launch and num_stages=3 and 4 in about 2% of launches (shared/evidence/race_6691_h200.json), so
configs that pass their draws get 1000 poisoned launches: a 2% race escapes them with p < 1e-8.
On another H200 on 2026-12-04 the race showed in 1 of 2000 launches (benchmarks/race_6691.py),
which 1000 launches miss more often than not: `policy verify` then says "not reproduced"."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.outcome import Outcome
from tunegate.space import Choice, Parameter, Space


@triton.jit
def sum_and_trans_dot(a_ptr, b_ptr, out_a_ptr, out_ab_ptr, N, D: tl.constexpr,
                      BLOCK: tl.constexpr):
    cols = tl.arange(0, D)
    acc_a = tl.zeros((D,), dtype=tl.float32)
    acc_ab = tl.zeros((D, D), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        mask = rows[:, None] < N
        a = tl.load(a_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0)
        b = tl.load(b_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0)
        acc_a += tl.sum(a, axis=0)
        acc_ab += tl.dot(tl.trans(a), b)
    tl.store(out_a_ptr + cols, acc_a)
    tl.store(out_ab_ptr + cols[:, None] * D + cols[None, :], acc_ab)


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator(device).manual_seed(seed)
    n, d = 5000, 128
    return {"a_ptr": torch.randn(n, d, generator=g, device=device).half(),
            "b_ptr": torch.randn(n, d, generator=g, device=device).half(),
            "out_a_ptr": torch.empty(d, device=device),
            "out_ab_ptr": torch.empty(d, d, device=device), "N": n, "D": d}


def reference(a_ptr, b_ptr, out_a_ptr, out_ab_ptr, N, D):
    a, b = a_ptr.double(), b_ptr.double()
    return a.sum(0), a.T @ b


TASK = Task(
    name="repro_sum_and_trans_dot", kernel=sum_and_trans_dot,
    space=Space(parameters={
        "BLOCK": Parameter(domain=Choice(choices=(64,), default=64)),
        "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
        "num_stages": Parameter(domain=Choice(choices=(1, 2, 3, 4), default=1),
                                features=["num_stages"]),
    }),
    grid=(1,), make_inputs=make_inputs, outputs=("out_a_ptr", "out_ab_ptr"),
    reference=reference, tolerances={"float32": (1e-2, 1e-1)})  # the evidence's tolerances

REPRODUCER = Reproducer(task=TASK, shows=(Outcome.WRONG,), launches=1000)
