"""Tensors inside an argument: a host `TensorDescriptor`'s `base`, the items of a tuple.

A tuning copies, restores, poisons and compares the tensors among a call's arguments; one
inside another argument would be launched on as it is, the caller's own tensor, written by
every config and compared by none. `flatten` makes each such tensor an argument of its own,
named after where it sits (`desc.base`, `pair[1]`), and leaves a `Nested` in the container's
place; `assemble` puts the container back together around whatever tensors the arguments then
hold (the copies a launch is given), fresh for each launch, so that a config's pre_hook that
sets a descriptor's block shape changes that launch's descriptor alone.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

import torch

__all__ = ["Leaf", "Nested", "assemble", "flatten", "leaves_of"]


@dataclass(frozen=True)
class Leaf:
    """Where a tensor of a container was: the name of the argument that now holds it."""

    name: str


@dataclass(frozen=True)
class Nested:
    """A container argument with each of its tensors replaced by a `Leaf`."""

    value: Any

    def leaves(self) -> list[str]:
        return _leaves(self.value)


def flatten(args: Mapping[str, Any]) -> dict[str, Any]:
    """`args` with each tensor inside a tuple, a list or a tensor descriptor made an argument
    of its own (after the container, which becomes a `Nested`); other arguments as they are."""
    out: dict[str, Any] = {}
    for name, value in args.items():
        if isinstance(value, torch.Tensor) or not _holds_tensor(value):
            out[name] = value
            continue
        leaves: dict[str, torch.Tensor] = {}
        out[name] = Nested(_strip(value, name, leaves))
        out.update(leaves)
    return out


def assemble(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a launch passes: each `Nested` rebuilt around the tensors its leaves name
    in `args`, and the leaves left out. `args` as they are where nothing is nested."""
    nested = {n: v for n, v in args.items() if isinstance(v, Nested)}
    if not nested:
        return dict(args)
    used = {leaf for v in nested.values() for leaf in v.leaves()}
    return {n: _fill(v.value, args) if isinstance(v, Nested) else v
            for n, v in args.items() if n not in used}


def leaves_of(args: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` with each container among them replaced by the names of its tensors."""
    return tuple(leaf for n in names for leaf in (
        args[n].leaves() if isinstance(args.get(n), Nested) else [n]))


def _is_descriptor(value: Any) -> bool:
    """A host tensor-memory descriptor (triton.tools.tensor_descriptor.TensorDescriptor, or
    one like it): a `base` tensor with a block shape."""
    return isinstance(getattr(value, "base", None), torch.Tensor) and \
        hasattr(value, "block_shape")


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(v) for v in value)
    return _is_descriptor(value)


def _strip(value: Any, where: str, leaves: dict[str, torch.Tensor]) -> Any:
    """`value` with each tensor put in `leaves` under the name of its place, a `Leaf` left."""
    if isinstance(value, torch.Tensor):
        leaves[where] = value
        return Leaf(where)
    if isinstance(value, (tuple, list)):
        return _remade(value, [_strip(v, f"{where}[{i}]", leaves) for i, v in enumerate(value)])
    if _is_descriptor(value):
        stripped = copy.copy(value)
        object.__setattr__(stripped, "base", _strip(value.base, f"{where}.base", leaves))
        return stripped
    return value


def _fill(value: Any, args: Mapping[str, Any]) -> Any:
    """`value` (stripped) with each `Leaf` replaced by the argument it names; a copy."""
    if isinstance(value, Leaf):
        return args[value.name]
    if isinstance(value, (tuple, list)):
        return _remade(value, [_fill(v, args) for v in value])
    if isinstance(getattr(value, "base", None), Leaf):
        filled = copy.copy(value)
        for field in ("shape", "strides", "block_shape"):  # a pre_hook may change them in place
            if isinstance(getattr(filled, field, None), list):
                object.__setattr__(filled, field, list(getattr(filled, field)))
        object.__setattr__(filled, "base", args[value.base.name])
        return filled
    return value


def _leaves(value: Any) -> list[str]:
    if isinstance(value, Leaf):
        return [value.name]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    base = getattr(value, "base", None)
    return [base.name] if isinstance(base, Leaf) else []


def _remade(like: tuple | list, items: list[Any]) -> tuple | list:
    """A tuple, list or named tuple of `like`'s type holding `items`."""
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)
