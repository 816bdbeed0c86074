"""Helion's config fields as a built-in space, and configs written the way Helion users write them.

`helion.Config(block_sizes=[128], indexing='tensor_descriptor', ...)`, `block_sizes=[128], ...`
and JSON all parse to the same `Config`. The text is read with `ast` and literal evaluation only:
nothing is executed.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any, Mapping

from pydantic import ValidationError

from .domains import Boolean, Choice, IntRange, Permutation, PerLoop, PowerOfTwo
from .space import InvalidConfig, Parameter, Space

__all__ = ["HELION_FIELDS", "UnknownHelionField", "field_element", "helion_space",
           "helion_space_for", "parse_config_text"]


class UnknownHelionField(UserWarning):
    """A config field tunegate does not know: kept as given, with no features, and shown."""


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
    # Fields of newer or older Helion releases; AMD-only knobs are plain parameters.
    "flatten_loops": ("flatten", Boolean(), ()),
    "num_sm_multiplier": (None, PowerOfTwo(low=1, high=128, default=1), ("persistent",)),
    "matrix_instr_nonkdim": (None, Choice(choices=(0, 4, 16, 32)), ()),
    "waves_per_eu": (None, IntRange(low=0, high=16, default=0), ()),
    "advanced_controls_file": (None, None, ()),  # a path: any string, or None
}

# Fields that only some Helion releases or backends have: in a space only when a config names them.
_OPTIONAL = frozenset({"flatten_loops", "num_sm_multiplier", "matrix_instr_nonkdim",
                       "waves_per_eu", "advanced_controls_file"})

HELION_FIELDS: tuple[str, ...] = tuple(_SCHEMA)
"""Every Helion config field tunegate knows, in Helion's order."""


def field_element(name: str) -> tuple[Any, tuple[str, ...]]:
    """A known field's element domain (None where any value goes) and the features it carries:
    what a policy check needs to tell a comparison that can hold from one that cannot."""
    _, element, features = _SCHEMA[name]
    return element, features


def helion_space(
    *, blocks: int = 1, loops: int = 0, reductions: int = 0, groupings: int = 0,
    loads: int = 0, orders: int = 0, order_dims: int = 2,
) -> Space:
    """The Helion config space of a kernel with the given numbers of blocks, loops, loads…"""
    sizes = dict(blocks=blocks, loops=loops, reductions=reductions, groupings=groupings,
                 loads=loads, orders=orders)
    params = {}
    for name, (group, element, features) in _SCHEMA.items():
        if name in _OPTIONAL:
            continue
        if name == "loop_orders":
            element = Permutation(n=order_dims)
        domain = element if group is None else PerLoop(element=element, loops=sizes[group])
        params[name] = Parameter(domain=domain, features=features)
    return Space(parameters=params)


def helion_space_for(values: Mapping[str, Any]) -> Space:
    """The smallest Helion space the given values fit: each list's length is read off the config.

    Lists of one group may differ in length (Helion drops trailing entries it does not need),
    `indexing` may be one value or one per load, and an unknown field is kept as given, with no
    features, after an `UnknownHelionField` warning.
    """
    try:
        return Space(parameters={name: _parameter_for(name, value)
                                 for name, value in values.items()})
    except ValidationError as e:
        first = e.errors()[0]
        raise InvalidConfig(f"invalid Helion config: {first['msg']}") from None


def _parameter_for(name: str, value: Any) -> Parameter:
    if name not in _SCHEMA:
        warnings.warn(f"unknown Helion config field {name!r} = {value!r}: kept as given; no rule "
                      f"can see it (known: {', '.join(HELION_FIELDS)})", UnknownHelionField,
                      stacklevel=3)
        return Parameter(domain=_as_given(name, value))
    group, element, features = _SCHEMA[name]
    if name == "indexing" and isinstance(value, (list, tuple)):
        group = "loads"
    if name == "advanced_controls_file":
        element = Choice(choices=(None,) if value is None else (None, _scalar(name, value)))
    if group is None:
        return Parameter(domain=element, features=features)
    if not isinstance(value, (list, tuple)):
        raise InvalidConfig(f"parameter {name!r}: expected a list, got {value!r}")
    if name == "loop_orders":
        dims = {len(v) if isinstance(v, (list, tuple)) else -1 for v in value} or {2}
        if len(dims) != 1 or min(dims) < 1:
            raise InvalidConfig(f"parameter 'loop_orders': each entry must be a non-empty list of "
                                f"loop indices, all of one length, got {value!r}")
        element = Permutation(n=dims.pop())
    return Parameter(domain=PerLoop(element=element, loops=len(value)), features=features)


def _scalar(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise InvalidConfig(f"parameter {name!r}: expected a number, string or None, got "
                            f"{value!r}")
    return value


def _as_given(name: str, value: Any) -> Any:
    """A domain holding just `value` (or a list of such values)."""
    if isinstance(value, (list, tuple)):
        items = list(dict.fromkeys(_scalar(name, v) for v in value)) or [None]
        return PerLoop(element=Choice(choices=tuple(items), default=items[0]), loops=len(value))
    return Choice(choices=(_scalar(name, value),), default=value)


def _literal(node: ast.expr, source: str) -> Any:
    """A literal value; a bare word (`indexing=pointer`) reads as a string."""
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except (RecursionError, MemoryError):
        raise InvalidConfig("a config value is nested too deeply to read") from None
    except ValueError as e:
        if "digits" in str(e):  # int() refuses very long literals
            raise InvalidConfig(f"a config value is too long: {e}") from None
        snippet = ast.get_source_segment(source, node) or ast.dump(node)
        raise InvalidConfig(f"not a literal value: {snippet!r}") from None


_CALL = re.compile(r"\s*[A-Za-z_][\w.]*\s*\(")


def _parse_call_text(text: str) -> dict[str, Any]:
    stripped = text.strip()
    wrapped = not _CALL.match(stripped)
    source = f"Config({stripped})" if wrapped else stripped
    try:
        tree = ast.parse(source, mode="eval")
    except (RecursionError, MemoryError, ValueError):
        raise InvalidConfig("config text is nested too deeply to read") from None
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
        if kw.arg in out:
            raise InvalidConfig(f"parameter {kw.arg!r} is given twice in the config text")
        out[kw.arg] = _literal(kw.value, source)
    return out


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members; a key written twice is an error, not the last one winning."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidConfig(f"parameter {key!r} is given twice in the config text")
        out[key] = value
    return out


def parse_config_text(text: str) -> dict[str, Any]:
    """Parameter values from `helion.Config(...)`, `key=value, ...` or JSON text."""
    if text.lstrip().startswith("{"):
        try:
            values = json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as e:
            raise InvalidConfig(f"invalid JSON config at line {e.lineno}, column {e.colno}: "
                                f"{e.msg}") from None
        except (ValueError, RecursionError, MemoryError) as e:  # huge integers, deep nesting
            raise InvalidConfig(f"invalid JSON config: {str(e) or type(e).__name__}") from None
        if not isinstance(values, dict):
            raise InvalidConfig("a JSON config must be an object")
        return values
    return _parse_call_text(text)
