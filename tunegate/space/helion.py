"""Helion's config fields as a built-in space, and configs written the way Helion users write them.

`helion.Config(block_sizes=[128], indexing='tensor_descriptor', ...)`, `block_sizes=[128], ...`
and JSON all parse to the same `Config`. The text is read with `ast` and literal evaluation only:
nothing is executed.
"""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING, Any, Mapping

from pydantic import ValidationError

from .domains import Boolean, Choice, IntRange, Permutation, PerLoop, PowerOfTwo
from .space import Config, InvalidConfig, Parameter, Space

if TYPE_CHECKING:
    import logging

__all__ = ["HELION_FIELDS", "field_element", "helion_config", "helion_space", "helion_space_for",
           "is_triton_name", "parse_config_text"]


def _log() -> logging.Logger:
    """This module's logger: `logging` is imported only for a config that needs a note."""
    import logging

    return logging.getLogger(__name__)


_POW2_OR_NONE = (None,) + tuple(2**i for i in range(4, 13))
_TRISTATE = (None, False, True)
_INDEXING = Choice(choices=("pointer", "tensor_descriptor", "block_ptr"))

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
    "indexing": (None, _INDEXING, ("tensor_descriptor", "block_ptr")),
    "maxnreg": (None, Choice(choices=(None, 32, 64, 128, 256)), ("maxnreg",)),
    # Fields of newer or older Helion releases (1.5: helion/autotuner/config_spec.py VALID_KEYS).
    "flatten_loops": ("flatten", Boolean(), ()),
    "num_sm_multiplier": (None, PowerOfTwo(low=1, high=128, default=1), ("persistent",)),
    # One indexing per atomic op: a descriptor there is the same TMA hardware as in `indexing`.
    "atomic_indexing": (None, _INDEXING, ("tensor_descriptor", "block_ptr")),
    "num_threads": ("threads", IntRange(low=0, high=65536, default=0), ()),
    "load_cache_modifiers": ("loads", Choice(choices=("", ".cg"), default=""), ()),
    "store_cache_modifiers": ("stores", Choice(choices=("", ".cs", ".wt"), default=""), ()),
    "num_ctas": (None, PowerOfTwo(low=1, high=16, default=1), ("num_ctas",)),
    "occupancy": (None, IntRange(low=0, high=64, default=0), ()),
    "host_tensor_descriptors": (None, Choice(choices=_TRISTATE), ()),
    "reduction_fusion": (None, Choice(choices=_TRISTATE), ()),
    "xcd_remap": (None, Choice(choices=_TRISTATE), ()),
    "epilogue_subtile": (None, Choice(choices=(None, 2, 4)), ()),
    # `hl.register_tunable("split_k", ...)`: the name Helion's split-K examples tune it by.
    "split_k": (None, PowerOfTwo(low=1, high=65536, default=1), ("split_k",)),
    "matrix_instr_nonkdim": (None, Choice(choices=(0, 4, 16, 32)), ()),
    "waves_per_eu": (None, IntRange(low=0, high=16, default=0), ()),
    "advanced_controls_file": (None, None, ()),  # a path: any string, or None
}

# Fields that only some Helion releases, backends or kernels have: in a space only when named.
_OPTIONAL = frozenset(list(_SCHEMA)[list(_SCHEMA).index("flatten_loops"):])
# Fields written as one value for all, or one per load / atomic op / axis.
_ONE_OR_PER = {"indexing": "loads", "atomic_indexing": "atomics", "num_threads": "threads",
               "load_eviction_policies": "loads"}
# Explicit configs may go past what the autotuner searches (Helion bounds a block by the tensor,
# not by a constant; `block_sizes=[3]` is legal): the domains a written value outside the
# searched one is checked against.
_WRITTEN = {
    "block_sizes": PowerOfTwo(low=1, high=2**24, default=32),
    "reduction_loops": Choice(choices=(None,) + tuple(2**i for i in range(25))),
}
# Backend knobs (CuTe, tcgen05, Pallas, Triton's private ones): Helion's, but no rule reads them.
_BACKEND_PREFIXES = ("cute_", "tcgen05_", "pallas_", "_triton_")
_SINGULAR = ("block_size", "loop_order", "reduction_loop", "l2_grouping", "flatten_loop",
             "range_unroll_factor", "range_warp_specialize", "range_num_stage",
             "range_multi_buffer", "range_flatten", "static_range")
_TRITON_NAME = re.compile(r"[A-Z][A-Z0-9_]*")

HELION_FIELDS: tuple[str, ...] = tuple(_SCHEMA)
"""Every Helion config field tunegate knows, in Helion's order."""


def is_triton_name(name: str) -> bool:
    """Whether `name` is written like a Triton constexpr (`BLOCK_M`), never a Helion field."""
    return bool(_TRITON_NAME.fullmatch(name))


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


def helion_config(values: Mapping[str, Any]) -> tuple[Config, Space]:
    """A written Helion config as a point of the smallest space it fits, and that space.

    Values tunegate's domains cannot hold are read the way Helion does, and logged: nested block
    sizes (Helion's older `[[32, 32], [16]]`) are flattened; a dict or nested list in a field
    tunegate does not know is kept as its JSON text.
    """
    read = {name: _readable(name, value) for name, value in _plural(values).items()}
    space = helion_space_for(read)
    return space.complete(read), space


def helion_space_for(values: Mapping[str, Any]) -> Space:
    """The smallest Helion space the given values fit: each list's length is read off the config.

    Lists of one group may differ in length (Helion drops trailing entries it does not need),
    `indexing` may be one value or one per load, and an unknown field is kept as given, with no
    features, after a warning in the log.
    """
    try:
        return Space(parameters={name: _parameter_for(name, value)
                                 for name, value in values.items()})
    except ValidationError as e:
        first = e.errors()[0]
        raise InvalidConfig(f"invalid Helion config: {first['msg']}") from None


def _plural(values: Mapping[str, Any]) -> dict[str, Any]:
    """Helion's one-loop spellings (`block_size=64`, `range_num_stage=3`) as their lists, the way
    Helion's `ConfigSpec.normalize` reads them, so that a rule sees the loop they set."""
    out = dict(values)
    for name in _SINGULAR:
        if name in out:
            if name + "s" in out:
                raise InvalidConfig(f"cannot give both {name!r} and {name + 's'!r} (Helion refuses "
                                    "it too)")
            _log().info("Helion config field %r read as %r (Helion's one-loop spelling)", name,
                        name + "s")
            out[name + "s"] = [out.pop(name)]
    return out


def _readable(name: str, value: Any) -> Any:
    if name == "block_sizes" and isinstance(value, (list, tuple)) and any(
            isinstance(v, (list, tuple)) for v in value):
        flat = [x for v in value for x in (v if isinstance(v, (list, tuple)) else [v])]
        _log().info("nested Helion block_sizes %r read flat as %r (Helion's older form)", value,
                    flat)
        return flat
    if name in _SCHEMA:
        return value
    if all(v is None or isinstance(v, (bool, int, float, str)) for v in _items(value)):
        return value
    text = json.dumps(value, sort_keys=True, default=repr)
    _log().info("Helion config field %r = %r is kept as its JSON text %r", name, value, text)
    return text


def _parameter_for(name: str, value: Any) -> Parameter:
    if name not in _SCHEMA:
        if name.startswith(_BACKEND_PREFIXES):
            _log().debug("Helion backend field %r = %r: kept as given; no rule reads it", name,
                         value)
        else:
            _log().warning("unknown Helion config field %r = %r: kept as given; no rule can see "
                           "it (known: %s)", name, value, ", ".join(HELION_FIELDS))
        return Parameter(domain=_as_given(name, value))
    group, element, features = _SCHEMA[name]
    if name in _WRITTEN:
        element = _widened(name, element, _items(value))
    if name in _ONE_OR_PER:
        group = _ONE_OR_PER[name] if isinstance(value, (list, tuple)) else None
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


def _widened(name: str, element: Any, items: list[Any]) -> Any:
    """The searched domain if the written values fit it, else the widest Helion accepts; a
    block size that is no power of two (`[3]`) widens to the integers up to the largest given."""
    for domain in (element, _WRITTEN[name]):
        if all(domain.contains(v) for v in items):
            return domain
    ints = [v for v in items if isinstance(v, int) and not isinstance(v, bool)]
    if name == "block_sizes" and items and len(ints) == len(items) and 1 <= min(ints) \
            and max(ints) <= 2**24:
        return IntRange(low=1, high=max(ints), default=1)
    return element  # the error names the domain Helion searches


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _scalar(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise InvalidConfig(f"parameter {name!r}: expected a number, string or None, got "
                            f"{value!r}")
    return value


def _as_given(name: str, value: Any) -> Any:
    """A domain holding just `value` (or a list of such values)."""
    if isinstance(value, (list, tuple)):
        items = list({repr(v): _scalar(name, v) for v in value}.values()) or [None]
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
