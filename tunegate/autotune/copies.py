"""Copies of a launch's tensors laid out as the caller's.

A kernel is given each tensor's strides and reaches its elements through them: a copy must keep
them, with the gaps between the elements of a view that is not dense (a slice of a wider
buffer: `out[:, :n]`, `buf[1::3]`), or the kernel reads and writes outside the copy (heap
corruption under the interpreter, an illegal address on a GPU). A view's storage is copied whole
where that costs little more than the view (WHOLE_STORAGE_SLACK), so that a config that stores
past the end of `buf[:n]` stays inside memory it may write, as it does in the caller's buffer,
instead of corrupting the heap of the process that tunes it. Each copy also has a guard of
GUARD_BYTES before and after it, poisoned. A store past the end of a tensor (a block's missing
mask) lands there, or in the copied part of the storage outside every view: `margins` reads
what lies outside the views, so that the runner can tell a config that writes outside its
tensors, memory that in the program is the caller's other data. Views of one storage stay
views of one copy, so a kernel that writes through one argument and reads through another sees
what it would see in the caller's tensors; each keeps its address's alignment (16 bytes for a
tensor-memory descriptor, and Triton specialises pointers on it).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch

from .._kept import Kept
from .check import poison

__all__ = ["copy_tensors", "margins", "overlapping", "restore"]

# A storage is copied whole if what lies outside its views is at most this many bytes, or at
# most twice what the views span: a slice of a padded buffer, not a window on a large cache
# (copied, and its margins read, at every checked launch: 64 MiB made a 256-element copy of a
# 60 MB buffer's view take 11 s a call under the interpreter).
WHOLE_STORAGE_SLACK = 1 << 20
ALIGNMENT = 128  # bytes: a copy's offsets keep the caller's address modulo this
GUARD_BYTES = 64 << 10  # poisoned memory before and after each copy (a multiple of ALIGNMENT)


def copy_tensors(args: dict[str, Any], unread: Collection[str] = ()) -> dict[str, Any]:
    """`args` with every tensor copied into a new storage per storage (and dtype) it shares
    with others, each at its own shape, strides and offset there, between two poisoned guards.
    A storage held by one dense tensor in `unread` (overwritten next: poisoned, zeroed) is left
    uninitialised, not copied."""
    out = dict(args)
    for names in _storages(args):
        tensors = [args[n] for n in names]
        low, high = _region(tensors)
        region = tensors[0].detach().as_strided((high - low,), (1,), low)
        guard = max(1, GUARD_BYTES // region.element_size())
        fresh = torch.empty(guard + (high - low) + guard, dtype=region.dtype,
                            device=region.device)
        poison(fresh[:guard])
        poison(fresh[guard + (high - low):])
        inside = fresh[guard:guard + (high - low)]
        if not (len(names) == 1 and names[0] in unread and tensors[0].is_contiguous()
                and tensors[0].numel() == high - low):
            inside.copy_(region)  # all but a dense output poisoned next: its gaps too
        for name, t in zip(names, tensors):
            out[name] = fresh.as_strided(t.shape, t.stride(), guard + t.storage_offset() - low)
    return out


def margins(args: dict[str, Any]) -> dict[tuple[str, ...], torch.Tensor]:
    """Per storage of `args`' tensors (their names), the elements of it that none of them
    covers, in order: for copies made by `copy_tensors`, the guards and what the views skip
    or leave beyond their ends, which a right kernel never writes."""
    found = {}
    for names in _storages(args):
        tensors = [args[n].detach() for n in names]
        flat = tensors[0].as_strided((tensors[0].untyped_storage().nbytes()
                                      // tensors[0].element_size(),), (1,), 0)
        found[tuple(names)] = flat.index_select(0, _uncovered(flat, tensors))
    return found


_UNCOVERED = Kept(64)  # by layout: the same for every launch; a long program's many: the oldest go


def _uncovered(flat: torch.Tensor, tensors: list[torch.Tensor]) -> torch.Tensor:
    """The positions in `flat` (a storage) that none of `tensors` (views of it) covers."""
    key = (flat.numel(), str(flat.device),
           tuple((tuple(t.shape), t.stride(), t.storage_offset()) for t in tensors))
    if key not in _UNCOVERED:
        covered = torch.zeros(flat.shape, dtype=torch.bool, device=flat.device)
        for t in tensors:
            covered.as_strided(t.shape, t.stride(), t.storage_offset()).fill_(True)
        small = torch.int32 if flat.numel() < 2**31 else torch.int64  # a few MB at most
        _UNCOVERED.keep(key, (~covered).nonzero().reshape(-1).to(small))
    return _UNCOVERED[key]


def _storages(args: dict[str, Any]) -> list[list[str]]:
    """The names of `args`' tensors, grouped by the storage (and dtype) they are views of."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, value in args.items():
        if isinstance(value, torch.Tensor):
            where = (value.untyped_storage().data_ptr(), value.dtype, value.device)
            groups.setdefault(where, []).append(name)
    return list(groups.values())


def _region(tensors: list[torch.Tensor]) -> tuple[int, int]:
    """The elements of the tensors' common storage to copy: all of it where the views span
    most of it (see WHOLE_STORAGE_SLACK), else what they span, from an offset that keeps
    their alignment."""
    low = min(t.storage_offset() for t in tensors)
    high = max(t.storage_offset() + _extent(t) for t in tensors)
    size = tensors[0].element_size()
    whole = tensors[0].untyped_storage().nbytes() // size
    if (whole - (high - low)) * size <= max(WHOLE_STORAGE_SLACK, 2 * (high - low) * size):
        return 0, max(whole, high)
    step = max(1, ALIGNMENT // size)
    return low - low % step, high


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
