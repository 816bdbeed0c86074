"""A real call's own tensors as tuning inputs, for tuning a kernel on the call it serves."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Collection

import torch

from .nested import flatten

__all__ = ["CallerData", "CallerSpecs"]

Args = dict[str, Any]

NOISE = 1 / 64  # relative size of the perturbation on draws other than the caller's own


@dataclass(frozen=True)
class _Layout:
    """Where one tensor argument lies in its storage, and which stored copy that storage is."""

    storage: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


class CallerData:
    """Picklable `make_inputs`: the call's own tensors on the tuner's seed, near them elsewhere.

    Draw `seed` (the tuner's draw 0) gives exact copies of the caller's tensors: same values,
    shapes, strides, storage offsets and dtypes; the caller's tensors are only read, here (those
    inside a descriptor or a tuple too: `nested`). Every
    other seed multiplies each float by `1 + d`, `d` seeded and uniform in [-NOISE, NOISE];
    integer and bool tensors (indices, sizes, masks) are kept. A multiplicative perturbation is
    used, not redrawn or permuted values, because saved activations (a reciprocal std, a
    log-sum-exp, a recurrent state) are only valid near what the program computed: signs and
    zeros, infinities and NaNs are kept exactly, each value's scale is kept, and each element
    stays paired with the elements of other tensors it was computed with (a permutation would
    give row i the std of another row). NOISE is 2 ulp of bfloat16, so even bf16 values differ
    between draws.

    One storage is kept per distinct storage and dtype of the call (views of one storage share
    it, and keep their aliasing in each draw). A GPU storage is the caller's own, not a copy: a
    worker on the same GPU opens it through CUDA IPC (torch's pickling of CUDA tensors) and
    copies it there, device to device, with no host round trip; it is only read, and only while
    the call that is being tuned waits. A worker that sees another GPU gets host copies
    (`on_host`). A host storage is copied at once, so that sending it (through shared memory)
    never moves the caller's own tensor.
    """

    def __init__(self, args: Args, *, seed: int) -> None:
        self.seed = seed
        self.storages: list[torch.Tensor] = []
        self.template: dict[str, _Layout | Any] = {}
        seen: dict[tuple[int, torch.dtype, int], int] = {}
        for name, value in flatten(args).items():  # a descriptor's tensor is copied too
            if not isinstance(value, torch.Tensor):
                self.template[name] = value
                continue
            size = value.untyped_storage().nbytes() // max(value.element_size(), 1)
            where = (value.untyped_storage().data_ptr(), value.dtype, size)
            if where not in seen:
                seen[where] = len(self.storages)
                flat = value.detach().as_strided((size,), (1,), 0)
                self.storages.append(flat if flat.is_cuda else flat.to("cpu", copy=True))
            self.template[name] = _Layout(seen[where], tuple(value.shape), tuple(value.stride()),
                                          value.storage_offset())

    def specs(self) -> "CallerSpecs":
        """The arguments as a compile worker sees them: dtypes and values, no contents."""
        return CallerSpecs({name: _Spec(str(self.storages[e.storage].dtype).removeprefix("torch."))
                            if isinstance(e, _Layout) else e for name, e in self.template.items()})

    def on_host(self) -> "CallerData":
        """This data with every storage in host memory: for a worker that cannot open this
        process's GPU memory (one that sees another GPU)."""
        host = copy.copy(self)
        host.storages = [flat.to("cpu", copy=True) for flat in self.storages]
        return host

    def __call__(self, seed: int, device: str, unread: Collection[str] = ()) -> Args:
        """Draw `seed` on `device`. `unread`: outputs that every launch poisons before it runs,
        so that no launch reads what they hold: on other draws than the caller's own, a
        storage that only they view is allocated, not drawn."""
        gen = torch.Generator(device=device).manual_seed(seed)
        skipped = self._viewed_only_by(unread) if seed != self.seed else set()
        storages = [torch.empty(flat.shape, dtype=flat.dtype, device=device) if i in skipped
                    else self._storage(flat, seed, gen, device)
                    for i, flat in enumerate(self.storages)]
        return {name: storages[e.storage].as_strided(e.shape, e.stride, e.offset)
                if isinstance(e, _Layout) else e for name, e in self.template.items()}

    def _viewed_only_by(self, names: Collection[str]) -> set[int]:
        """The storages that no tensor argument but those in `names` views."""
        viewers: dict[int, set[str]] = {}
        for name, e in self.template.items():
            if isinstance(e, _Layout):
                viewers.setdefault(e.storage, set()).add(name)
        return {i for i, seen in viewers.items() if seen <= set(names)}

    def _storage(self, flat: torch.Tensor, seed: int, gen: torch.Generator,
                 device: str) -> torch.Tensor:
        """One storage on `device` for draw `seed`: the caller's values, or perturbed floats
        (drawn on `device`, in a few passes: a 256 MB storage is perturbed once per draw)."""
        if seed == self.seed or not flat.dtype.is_floating_point:
            return flat.to(device, copy=True)
        exact = flat.to(device)  # the caller's own tensor where it is there already: only read
        wide = torch.promote_types(flat.dtype, torch.float32)
        moved = torch.empty(exact.shape, dtype=wide, device=device)
        moved.uniform_(1 - NOISE, 1 + NOISE, generator=gen).mul_(exact)
        # A finite value stays finite (mask fills such as finfo(float16).min must not become
        # -inf), an infinite one stays as it was (the clamp would make it finite).
        info = torch.finfo(flat.dtype)
        moved.clamp_(info.min, info.max)
        if bool(exact.isinf().any()):
            moved = moved.where(exact.isfinite(), exact.to(wide))
        return moved.to(dtype=flat.dtype)


class CallerSpecs:
    """What a compile worker needs of a call's arguments: each tensor's dtype (as a
    `TensorSpec`) and the other values, without the tensors' contents (`CallerData.specs`)."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.template = template

    def __call__(self, seed: int, device: str) -> Args:
        from .precompile import TensorSpec

        return {name: TensorSpec(v.dtype) if isinstance(v, _Spec) else v
                for name, v in self.template.items()}


@dataclass(frozen=True)
class _Spec:
    dtype: str  # torch's name without "torch."
