"""The checks' device kernels loaded before the first timing needs them.

On a GPU, each torch operation's kernel is loaded into a process at its first launch there
(lazy module loading): a tuning's first compare, the first to run the Bound and the 16-bit
comparison, took 40-90 ms on an H100 where the next took ~1 ms, and the first stress draws paid
the same for the perturbation and the baseline's checks. Here the checks run once on small
slices of draw 0's tensors, in the run worker while it waits for the first compile
(`worker_child.build_ahead`), so that those loads are off the tuning's path. Nothing is kept:
the runner's bounds, draws and findings are left as they were.
"""

from __future__ import annotations

from typing import Any

import torch

from .check import bits_differ, compare, follows_poison, poison
from .copies import copy_tensors, margins
from .inputs import CallerData

__all__ = ["warm_checks"]

SLICE = 1 << 12  # elements of each tensor: enough for every kernel the checks launch
_COMPARED_WITHIN = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # a tolerance


def warm_checks(runner: Any) -> None:
    """Run the comparisons, poisons and (for a program's own data) the perturbation of later
    draws on slices of draw 0, each output with its dtype and tolerance."""
    pristine, expected = runner.draw(0)
    flags = []
    for name, want in expected.tensors.items():
        out = pristine.get(name)
        if not isinstance(out, torch.Tensor) or not want.numel() or name in runner.not_compared:
            continue
        e = want.detach().reshape(-1)[:SLICE].to(device=out.device, dtype=out.dtype)
        got = e.clone()
        kept = None
        if out.dtype in _COMPARED_WITHIN:
            got.mul_(1.0 + 1e-3)  # other bits, inside the tolerance: the bound's path
            kept = runner.bound_for(e, out.dtype)
        for bound in (kept, None):
            compare(name, got, e, runner.task.tolerances, working=runner.working, bound=bound)
        first, second = torch.empty_like(e), torch.empty_like(e)
        poison(first)
        poison(second, second=True)
        flags += [bits_differ(first, second), follows_poison(first, second).all()]
    if flags:
        torch.stack(flags).tolist()
    small = {n: t.reshape(-1)[:SLICE].clone()  # storages of their own: CallerData draws
             for n, t in pristine.items() if isinstance(t, torch.Tensor)}  # whole storages
    margins(copy_tensors(small))
    if isinstance(runner.draws_from, CallerData):
        floats = {n: t for n, t in small.items() if t.dtype.is_floating_point}
        CallerData(floats, seed=0)(1, runner.device)
