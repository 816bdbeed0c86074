"""Problem facts of one call: each argument's dtype, element size and shape, and descriptor tiles.

A rule's `match` may read them (`dtypes`, `element_bytes`, `tile_bytes`): a bug that bites only
fp16 operands or tiles under 128 bytes is then scoped to those calls. They are known only where
the kernel is called (the drop-in, `tune`); elsewhere each reads as `Unknown`, which a
predicate treats as holding (fail closed) and says so. Nothing here imports torch or triton.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ._arith import evaluate
from .predicate import MISSING, Unknown

__all__ = ["CALL_FACTS", "ArgFacts", "CallFacts", "DescriptorSite", "call_fact"]

CALL_FACTS: dict[str, str] = {
    "dtypes": "dtype names ('float16', 'bfloat16', 'float32', ...) of the kernel's tensor "
              "arguments (of a tensor descriptor's base tensor)",
    "element_bytes": "element sizes in bytes of the same tensors",
    "tile_bytes": "bytes of one block of each tensor descriptor: block elements x element size",
}
"""The problem facts a predicate may name; each reads as a list matched if any element is."""


@dataclass(frozen=True)
class DescriptorSite:
    """A `tl.make_tensor_descriptor(base, shape, strides, block_shape)` in the kernel's source."""

    base: str | None  # the kernel parameter it is made from, if it is one
    block_shape: tuple[str, ...] | None  # each dimension's expression; None: not a literal list
    line: int


@dataclass(frozen=True)
class ArgFacts:
    """What a call's argument says of the problem: dtype and shape, or a descriptor's block."""

    dtype: str | None = None
    itemsize: int | None = None
    shape: tuple[int, ...] | None = None
    block_shape: tuple[int, ...] | None = None  # a host-side tensor descriptor's block
    value: Any = None  # an int or bool scalar (a constexpr the caller passes)

    @classmethod
    def of(cls, value: Any) -> "ArgFacts | None":
        """The facts of one argument value (a tensor, a tensor descriptor, a scalar) or None."""
        base = getattr(value, "base", None)
        if hasattr(value, "block_shape") and hasattr(base, "dtype"):
            facts = cls.of(base)
            block = _ints(getattr(value, "block_shape", None))
            return None if facts is None else ArgFacts(facts.dtype, facts.itemsize,
                                                       facts.shape, block)
        dtype = getattr(value, "dtype", None)
        if dtype is not None and hasattr(value, "shape"):
            size = getattr(dtype, "itemsize", None)
            return cls(dtype=str(dtype).removeprefix("torch."),
                       itemsize=size if isinstance(size, int) else None,
                       shape=_ints(value.shape))
        if isinstance(value, (bool, int)):
            return cls(value=value)
        return None


def _ints(seq: Any) -> tuple[int, ...] | None:
    try:
        out = tuple(int(x) for x in seq)
    except (TypeError, ValueError):
        return None
    return out


BlockShapes = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Given a config's values, the block shape each host descriptor argument gets for it (what the
config's pre_hook sets), as the caller that launches the kernel knows it."""


@dataclass(frozen=True)
class CallFacts:
    """The facts of one call's arguments, by parameter name."""

    args: dict[str, ArgFacts] = field(default_factory=dict)
    block_shapes: BlockShapes | None = field(default=None, compare=False)

    @classmethod
    def of(cls, args: Mapping[str, Any], block_shapes: BlockShapes | None = None
           ) -> "CallFacts":
        facts = {n: f for n, v in args.items() if (f := ArgFacts.of(v)) is not None}
        return cls(facts, block_shapes)

    def tensors(self) -> list[ArgFacts]:
        return [f for f in self.args.values() if f.dtype is not None]

    def scalars(self) -> dict[str, Any]:
        return {n: f.value for n, f in self.args.items() if f.value is not None}


def call_fact(name: str, call: CallFacts | None, descriptors: tuple[DescriptorSite, ...],
              values: Mapping[str, Any], why_unknown: str) -> Any:
    """The value of problem fact `name` for a config: a tuple, `MISSING` or `Unknown`."""
    if call is None:
        return Unknown(f"{name} unknown ({why_unknown})")
    if name == "dtypes":
        return tuple(f.dtype for f in call.tensors()) or MISSING
    if name == "element_bytes":
        sizes = [f.itemsize for f in call.tensors()]
        if any(s is None for s in sizes):
            return Unknown("element_bytes unknown: an argument's dtype has no itemsize")
        return tuple(sizes) or MISSING
    return _tile_bytes(call, descriptors, values)


def _tile_bytes(call: CallFacts, descriptors: tuple[DescriptorSite, ...],
                values: Mapping[str, Any]) -> Any:
    out: list[int] = []
    env = {**call.scalars(), **values}
    for d in descriptors:
        base = call.args.get(d.base or "")
        where = f"the descriptor at line {d.line}"
        if base is None or base.itemsize is None:
            return Unknown(f"tile_bytes unknown: the dtype of {where}'s base is not known")
        try:
            dims = [evaluate(e, env) for e in d.block_shape or ()]
        except ValueError:
            dims = []
        if d.block_shape is None or not all(isinstance(x, int) for x in dims):
            return Unknown(f"tile_bytes unknown: the block_shape of {where} could not be "
                           "evaluated from the config")
        out.append(math.prod(dims) * base.itemsize)
    hooked = call.block_shapes(values) if call.block_shapes is not None else {}
    for name, f in call.args.items():
        if f.dtype is None or (f.block_shape is None and name not in hooked):
            continue
        block = _ints(hooked.get(name, f.block_shape))
        if block is None or f.itemsize is None:
            return Unknown(f"tile_bytes unknown: descriptor argument {name}'s block or dtype")
        out.append(math.prod(block) * f.itemsize)
    if not out:  # e.g. made in a helper function: not read, so not known to be large
        return Unknown("tile_bytes unknown: no tensor descriptor was found in the kernel's "
                       "own source or its arguments")
    return tuple(out)
