"""triton-lang/triton#6691's shape: one loop accumulating tl.sum(a) and tl.dot(tl.trans(a), b).

On an H200 (Triton 3.6.0), fp16, N=5000, D=128, block 64, 4 warps: num_stages=2 was wrong in
every launch, num_stages=3 and 4 in about 2% of launches (shared/evidence/race_6691_h200.json).
"""

import torch

from tunegate.autotune import Task
from tunegate.reproducers.sum_trans_dot import sum_and_trans_dot  # the shipped reproducer's
from tunegate.space import Choice, Parameter, Space


def inputs(n: int, d: int = 128):
    def make(seed: int, device: str) -> dict:
        g = torch.Generator(device).manual_seed(seed)
        return {"a_ptr": torch.randn(n, d, generator=g, device=device).half(),
                "b_ptr": torch.randn(n, d, generator=g, device=device).half(),
                "out_a_ptr": torch.empty(d, device=device),
                "out_ab_ptr": torch.empty(d, d, device=device), "N": n, "D": d}
    return make


def reference(a_ptr, b_ptr, out_a_ptr, out_ab_ptr, N, D):
    a, b = a_ptr.double(), b_ptr.double()
    return a.sum(0), a.T @ b


SPACE = Space(parameters={
    "BLOCK": Parameter(domain=Choice(choices=(64,), default=64)),
    "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
    "num_stages": Parameter(domain=Choice(choices=(1, 2, 3, 4), default=1),
                            features=["num_stages"]),
})

# Sums of 5000 fp16 products of magnitude ~1 in fp32: the evidence's tolerances.
TASK = Task(name="sum_and_trans_dot", kernel=sum_and_trans_dot, space=SPACE, grid=(1,),
            make_inputs=inputs(5000), outputs=("out_a_ptr", "out_ab_ptr"), reference=reference,
            tolerances={"float32": (1e-2, 1e-1)})

SMALL = TASK.model_copy(update={"make_inputs": inputs(200)})  # for the interpreter
