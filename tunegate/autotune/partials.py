"""Partial sums in a zeroed buffer whose layout depends on the config, judged by their sums.

A kernel may write one partial sum per program into a `reset_to_zero` buffer that the caller
then adds up (Liger-Kernel's DyT backward: one slot per column block, so BLOCK_N decides which
slots hold what). Two right configs then disagree slot by slot. When the zeroed buffer's
nonzero slots differ between the config and what is expected, it is compared by its sums over
the axes along which the written slots differ (all axes if none alone does), with the dtype's
tolerance scaled by the sum of |expected| there: a config whose partials add up wrong still
fails, and the evidence says the buffer was compared as sums.
"""

from __future__ import annotations

import math
from typing import Mapping

import torch

from .check import compare
from .mismatch import Mismatch

__all__ = ["compare_partials"]


def _layout_axes(got: torch.Tensor, expected: torch.Tensor) -> tuple[int, ...] | None:
    """The axes along which the written (nonzero) slots of the two differ; None where the
    tensors are not float partial sums of one shape or hold the same slots."""
    if (got.shape != expected.shape or got.dim() == 0 or not got.dtype.is_floating_point
            or got.element_size() == 1 or not bool(got.isfinite().all())
            or not bool(expected.isfinite().all())):
        return None
    written, want = got != 0, expected != 0
    if torch.equal(written, want):
        return None
    axes = tuple(a for a in range(got.dim()) if not torch.equal(
        written.any(dim=[d for d in range(got.dim()) if d != a]) if got.dim() > 1 else written,
        want.any(dim=[d for d in range(got.dim()) if d != a]) if got.dim() > 1 else want))
    return axes or tuple(range(got.dim()))


def compare_partials(name: str, got: torch.Tensor, expected: torch.Tensor,
                     overrides: Mapping[str, tuple[float, float]] | None = None,
                     row_scaled: bool = False, working: torch.dtype | None = None
                     ) -> Mismatch | None:
    """`compare` for a zeroed (`reset_to_zero`) buffer: slot by slot where both hold the same
    slots, else by sums over the axes whose slots differ (see the module docstring)."""
    bad = compare(name, got, expected, overrides, row_scaled, working)
    if bad is None:
        return None
    expected = expected.detach().to(device=got.device)
    axes = _layout_axes(got.detach(), expected)
    if axes is None:
        return bad
    rtol, atol = bad.rtol, bad.atol
    g, e = got.detach().to(torch.float64), expected.to(torch.float64)
    sums, want, scale = g.sum(dim=axes), e.sum(dim=axes), e.abs().sum(dim=axes)
    count = math.prod(got.shape[a] for a in axes)
    diff = (sums - want).abs()
    off = diff > atol * count + rtol * scale
    if not bool(off.any()):
        return None
    flat = int(off.flatten().nonzero()[0])
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(off.shape))] \
        if off.dim() else []
    return Mismatch(argument=name, mismatched=int(off.sum()), total=off.numel(), unwritten=0,
                    max_abs_error=float(diff[off].max()),
                    max_rel_error=float((diff / scale.clamp_min(1e-30))[off].max()),
                    first_index=index, got=f"{float(sums.flatten()[flat]):.6g}",
                    expected=f"{float(want.flatten()[flat]):.6g}", rtol=rtol, atol=atol,
                    dtype=str(got.dtype).removeprefix("torch."), summed_over=axes,
                    working=bad.working)
