"""The seed's store-then-load kernel as a task whose space binds no features by hand."""

import torch

from tests.kernels.loop_kernels import seed_store_load
from tunegate.autotune import Task
from tunegate.space import Boolean, Choice, IntRange, Parameter, Space

N = 16


def space(features: bool = False) -> Space:
    """OUTER_STAGES, INNER_STAGES in 1..3, UNROLL in 1..2, FLATTEN, num_warps in {1, 4}."""
    def bound(*names: str) -> tuple[str, ...]:
        return names if features else ()

    return Space(parameters={
        "OUTER_STAGES": Parameter(domain=IntRange(low=1, high=3),
                                  features=bound("range_num_stages")),
        "INNER_STAGES": Parameter(domain=IntRange(low=1, high=3),
                                  features=bound("range_num_stages")),
        "UNROLL": Parameter(domain=IntRange(low=1, high=2), features=bound("range_unroll")),
        "FLATTEN": Parameter(domain=Boolean(), features=bound("range_flatten")),
        "num_warps": Parameter(domain=Choice(choices=(1, 4), default=4)),
    })


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(N * N, generator=g).to(device),
            "scratch_ptr": torch.randn(N * N, generator=g).to(device),
            "diff_ptr": torch.empty(N * N, device=device), "N": N, "BLOCK": 8}


def reference(x_ptr, scratch_ptr, diff_ptr, N, BLOCK):
    return torch.zeros_like(diff_ptr)


TASK = Task(name="seed_store_load", kernel=seed_store_load, space=space(), grid=(2,),
            make_inputs=make_inputs, outputs=("diff_ptr",), reference=reference)
