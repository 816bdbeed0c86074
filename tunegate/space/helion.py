"""Helion's config fields as a built-in space, and configs written the way Helion users write them.

`helion.Config(block_sizes=[128], indexing='tensor_descriptor', ...)`, `block_sizes=[128], ...`
and JSON all parse to the same `Config`. The text is read with `ast` and literal evaluation only:
nothing is executed.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Mapping

from .domains import Boolean, Choice, IntRange, Permutation, PerLoop, PowerOfTwo
from .space import InvalidConfig, Parameter, Space

__all__ = ["HELION_FIELDS", "helion_space", "helion_space_for", "parse_config_text"]

_POW2_OR_NONE = (None,) + tuple(2**i for i in range(4, 13))
_TRISTATE = (None, False, True)

# field -> (per-loop group or None, element domain, features)
_SCHEMA: dict[str, tuple[str | None, Any, tuple[str, ...]]] = {
    "block_sizes": ("blocks", PowerOfTwo(low=1, high=4096, default=32), ()),
    "loop_orders": ("orders", None, ()),  # element: Permutation sized by the kernel
    "l2_groupings": ("groupings", PowerOfTwo(low=1, high=64, default=1), ()),
    "reduction_loops": ("reductions", Choice(choices=_POW2_OR_NONE), ()),
    "range_unroll_factors": ("loops", IntRange(low=0, high=4, default=0), ("range_unroll",)),
    "range_num_stages": ("loops", IntRange(low=0, high=4, default=0), ("range_num_stages",)),
    "range_multi_buffers": ("loops", Choice(choices=_TRISTATE), ("range_multi_buffer",)),
    "range_flattens": ("loops", Choice(choices=_TRISTATE), ("range_flatten",)),
    "range_warp_specializes": ("loops", Choice(choices=_TRISTATE), ("range_warp_specialize",)),
    "static_ranges": ("loops", Boolean(), ()),
    "load_eviction_policies": ("loads", Choice(choices=("", "first", "last"), default=""), ()),
    "num_warps": (None, PowerOfTwo(low=1, high=32, default=4), ()),
    "num_stages": (None, IntRange(low=1, high=8, default=1), ("num_stages",)),
    "pid_type": (
        None,
        Choice(choices=("flat", "xyz", "persistent_blocked", "persistent_interleaved")),
        ("persistent",),
    ),
    "indexing": (
        None,
        Choice(choices=("pointer", "tensor_descriptor", "block_ptr")),
        ("tensor_descriptor", "block_ptr"),
    ),
    "maxnreg": (None, Choice(choices=(None, 32, 64, 128, 256)), ("maxnreg",)),
}

HELION_FIELDS: tuple[str, ...] = tuple(_SCHEMA)
"""Every Helion config field tunegate knows, in Helion's order."""


def helion_space(
    *, blocks: int = 1, loops: int = 0, reductions: int = 0, groupings: int = 0,
    loads: int = 0, orders: int = 0, order_dims: int = 2,
) -> Space:
    """The Helion config space of a kernel with the given numbers of blocks, loops, loads…"""
    sizes = dict(blocks=blocks, loops=loops, reductions=reductions, groupings=groupings,
                 loads=loads, orders=orders)
    params = {}
    for name, (group, element, features) in _SCHEMA.items():
        if name == "loop_orders":
            element = Permutation(n=order_dims)
        domain = element if group is None else PerLoop(element=element, loops=sizes[group])
        params[name] = Parameter(domain=domain, features=features)
    return Space(parameters=params)


def helion_space_for(values: Mapping[str, Any]) -> Space:
    """The smallest Helion space the given values fit: list lengths are read off the config."""
    unknown = [k for k in values if k not in _SCHEMA]
    if unknown:
        raise InvalidConfig(
            f"unknown Helion config field {unknown[0]!r} (known: {', '.join(HELION_FIELDS)})"
        )
    sizes: dict[str, int] = {}
    for name, value in values.items():
        group = _SCHEMA[name][0]
        if group is not None:
            if not isinstance(value, (list, tuple)):
                raise InvalidConfig(f"parameter {name!r}: expected a list, got {value!r}")
            sizes[group] = max(sizes.get(group, 0), len(value))
    orders = values.get("loop_orders") or [[0, 1]]
    first = orders[0] if isinstance(orders[0], (list, tuple)) else [0, 1]
    return helion_space(
        blocks=sizes.get("blocks", 1), loops=sizes.get("loops", 0),
        reductions=sizes.get("reductions", 0), groupings=sizes.get("groupings", 0),
        loads=sizes.get("loads", 0), orders=sizes.get("orders", 0), order_dims=len(first),
    )


def _literal(node: ast.expr, source: str) -> Any:
    """A literal value; a bare word (`indexing=pointer`) reads as a string."""
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except ValueError:
        snippet = ast.get_source_segment(source, node) or ast.dump(node)
        raise InvalidConfig(f"not a literal value: {snippet!r}") from None


_CALL = re.compile(r"\s*[A-Za-z_][\w.]*\s*\(")


def _parse_call_text(text: str) -> dict[str, Any]:
    stripped = text.strip()
    wrapped = not _CALL.match(stripped)
    source = f"Config({stripped})" if wrapped else stripped
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        col = max((e.offset or 1) - (len("Config(") if wrapped else 0), 1)
        raise InvalidConfig(
            f"cannot parse config text at column {col}: {e.msg}\n  {stripped}\n  {' ' * (col - 1)}^"
        ) from None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args:
        raise InvalidConfig(
            "a config is written `key=value, ...`, `helion.Config(key=value, ...)` or as JSON"
        )
    out = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise InvalidConfig("`**` is not allowed in a config")
        out[kw.arg] = _literal(kw.value, source)
    return out


def parse_config_text(text: str) -> dict[str, Any]:
    """Parameter values from `helion.Config(...)`, `key=value, ...` or JSON text."""
    if text.lstrip().startswith("{"):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidConfig(f"invalid JSON config at line {e.lineno}, column {e.colno}: "
                                f"{e.msg}") from None
        if not isinstance(values, dict):
            raise InvalidConfig("a JSON config must be an object")
        return values
    return _parse_call_text(text)
