"""Fresh random inputs shaped like a real call's, for tuning a kernel on the call it serves."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["RandomLike"]

Args = dict[str, Any]


class RandomLike:
    """Picklable `make_inputs`: floats redrawn, integers kept, every tensor's layout kept.

    Integer tensors usually hold indices or sizes, which random values would make invalid.
    Strides and storage offsets are kept because kernels take them as separate arguments.
    """

    def __init__(self, args: Args) -> None:
        self.template: dict[str, Any] = {}
        for name, value in args.items():
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage().nbytes() // max(value.element_size(), 1)
                kept = None if value.dtype.is_floating_point else \
                    value.detach().cpu().as_strided((storage,), (1,), 0).clone()
                self.template[name] = ("tensor", tuple(value.shape), tuple(value.stride()),
                                       value.storage_offset(), storage, value.dtype, kept)
            else:
                self.template[name] = ("value", value)

    def __call__(self, seed: int, device: str) -> Args:
        gen = torch.Generator().manual_seed(seed)
        out: Args = {}
        for name, entry in self.template.items():
            if entry[0] == "value":
                out[name] = entry[1]
                continue
            _, shape, stride, offset, storage, dtype, kept = entry
            if kept is not None:
                flat = kept.clone().to(device)
            else:
                flat = torch.randn(storage, generator=gen, dtype=torch.float32).to(
                    device=device, dtype=dtype)
            out[name] = flat.as_strided(shape, stride, offset)
        return out
