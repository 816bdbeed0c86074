"""The closed, versioned list of code-generation features and what it means to use one.

A policy names features; a typo must be an error, not a rule that silently never fires, so the
list lives here in code and grows only with `FEATURES_VERSION`. Version 2 added `atomics` and
made `tensor_descriptor`, `block_ptr` and `atomics` features a kernel's own code can use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable
from ..errors import TunegateError

__all__ = ["FEATURES", "FEATURES_VERSION", "Feature", "UnknownFeature", "feature", "uses"]

FEATURES_VERSION = 2


class UnknownFeature(ValueError, TunegateError):
    """A feature name that is not in `FEATURES`."""


@dataclass(frozen=True)
class Feature:
    """A named knob; `is_on(value)` says whether one value of its parameter uses it."""

    name: str
    summary: str
    on_when: str
    is_on: Callable[[Any], bool]


def _gt1(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1


def _true(v: Any) -> bool:
    return v is True


def _set(v: Any) -> bool:
    return v is not None


_ALL = [
    Feature("range_num_stages", "software pipelining of a tl.range loop", "num_stages > 1", _gt1),
    Feature("num_stages", "kernel-wide software pipelining", "num_stages > 1", _gt1),
    Feature("range_flatten", "flattening a tl.range loop nest", "flatten is true", _true),
    Feature(
        "range_multi_buffer",
        "explicit accumulator multi-buffering of a tl.range loop",
        "set to true or false (not left to the compiler)",
        _set,
    ),
    Feature("range_unroll", "unrolling a tl.range loop", "unroll factor > 1", _gt1),
    Feature("range_warp_specialize", "warp specialization of a loop", "true", _true),
    Feature(
        "tensor_descriptor",
        "TMA tensor-descriptor loads and stores",
        "indexing is 'tensor_descriptor'",
        lambda v: v == "tensor_descriptor" or v is True,
    ),
    Feature(
        "block_ptr",
        "tl.make_block_ptr / tl.advance indexing",
        "indexing is 'block_ptr'",
        lambda v: v == "block_ptr" or v is True,
    ),
    Feature(
        "persistent",
        "persistent kernels looping over tiles",
        "pid_type starts with 'persistent'",
        lambda v: (isinstance(v, str) and v.startswith("persistent")) or v is True,
    ),
    Feature("maxnreg", "a register cap per thread", "set", _set),
    Feature("atomics", "atomic read-modify-write operations", "the kernel calls tl.atomic_*",
            _true),
    Feature("num_ctas", "thread-block clusters", "num_ctas > 1", _gt1),
    Feature(
        "split_k",
        "splitting a reduction across programs that combine partial results",
        "split factor > 1",
        _gt1,
    ),
]

FEATURES: dict[str, Feature] = {f.name: f for f in _ALL}


def feature(name: str) -> Feature:
    """The feature called `name`; an error that lists the known names otherwise."""
    try:
        return FEATURES[name]
    except KeyError:
        known = ", ".join(sorted(FEATURES))
        raise UnknownFeature(f"unknown feature {name!r} (known: {known})") from None


def uses(name: str, value: Any) -> list[int] | bool:
    """Whether `value` uses the feature; for a per-loop list, the indices of loops that do."""
    on = feature(name).is_on
    if isinstance(value, (list, tuple)):
        return [i for i, v in enumerate(value) if on(v)]
    return on(value)
