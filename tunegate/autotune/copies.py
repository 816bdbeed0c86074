"""Copies of a launch's tensors laid out as the caller's.

A kernel is given each tensor's strides and reaches its elements through them: a copy must keep
them, with the gaps between the elements of a view that is not dense (a slice of a wider
buffer: `out[:, :n]`, `buf[1::3]`), or the kernel reads and writes outside the copy (heap
corruption under the interpreter, an illegal address on a GPU). Views of one storage stay views
of one copy, so a kernel that writes through one argument and reads through another sees what
it would see in the caller's tensors.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch

__all__ = ["copy_tensors", "overlapping", "restore"]


def copy_tensors(args: dict[str, Any], unread: Collection[str] = ()) -> dict[str, Any]:
    """`args` with every tensor copied into a new storage per storage (and dtype) it shares
    with others, each at its own shape, strides and offset there. A storage whose every tensor
    is in `unread` (overwritten next: poisoned, zeroed) is left uninitialised, not copied."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, value in args.items():
        if isinstance(value, torch.Tensor):
            where = (value.untyped_storage().data_ptr(), value.dtype, value.device)
            groups.setdefault(where, []).append(name)
    out = dict(args)
    for names in groups.values():
        tensors = [args[n] for n in names]
        low = min(t.storage_offset() for t in tensors)
        high = max(t.storage_offset() + _extent(t) for t in tensors)
        region = tensors[0].detach().as_strided((high - low,), (1,), low)
        fresh = torch.empty_like(region) if all(n in unread for n in names) else region.clone()
        for name, t in zip(names, tensors):
            out[name] = fresh.as_strided(t.shape, t.stride(), t.storage_offset() - low)
    return out


def restore(dst: torch.Tensor, src: torch.Tensor) -> None:
    """Copy `src` into `dst`, a tensor laid out alike (`copy_tensors`). A broadcast dimension
    (stride 0: `expand`) is copied once, since torch refuses to write an element twice."""
    _once(dst).copy_(_once(src))


def _once(t: torch.Tensor) -> torch.Tensor:
    """`t` with each broadcast dimension cut to its first index: each element of its memory
    once."""
    return t[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in t.stride())]


def overlapping(args: dict[str, Any], names: Collection[str]) -> list[str]:
    """The tensors among `names` whose part of their storage overlaps that of a tensor of
    `args` not among `names` (the same tensor passed as input and output, say)."""
    def span(t: torch.Tensor) -> tuple[Any, ...]:
        return (t.untyped_storage().data_ptr(), t.device, t.storage_offset() * t.element_size(),
                (t.storage_offset() + _extent(t)) * t.element_size())

    others = [span(v) for n, v in args.items() if isinstance(v, torch.Tensor) and n not in names]
    found = []
    for name in names:
        value = args.get(name)
        if isinstance(value, torch.Tensor) and value.numel():
            ptr, device, low, high = span(value)
            if any(p == ptr and d == device and lo < high and low < hi
                   for p, d, lo, hi in others):
                found.append(name)
    return found


def _extent(t: torch.Tensor) -> int:
    """How many elements of its storage `t` spans from its offset on."""
    if t.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
