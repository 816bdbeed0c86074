"""The drop-in decorator's arguments, checked when decorating, so a mistake is not found at the
first launch; each error names the argument and the value."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import triton

from ..errors import TunegateError

__all__ = ["DropInError", "TUNER_OPTIONS", "validate"]

TUNER_OPTIONS = ("policy", "env", "store", "strategy", "budget", "seed", "draws", "timeout",
                 "progress")
_PRUNE_KEYS = ("perf_model", "top_k", "early_config_prune")


class DropInError(ValueError, TunegateError):
    """An argument of the drop-in decorator is invalid; the message names it and the value."""


def validate(fn: Any, arg_names: Sequence[str], configs: Any, key: Any, reset_to_zero: Any,
              restore_value: Any, prune_configs_by: Any, hooks: dict[str, Any], warmup: Any,
              rep: Any, use_cuda_graph: Any, cache_results: Any) -> None:
    """Check every option when decorating."""
    if not hasattr(fn, "arg_names") or not hasattr(fn, "run"):
        raise DropInError(f"autotune decorates a @triton.jit function (or a @triton.heuristics "
                          f"of one), got {fn!r}")
    if configs is not None:
        bad = [c for c in configs if not isinstance(c, triton.Config)]
        if isinstance(configs, (str, bytes)) or bad:
            raise DropInError("configs must be a list of triton.Config, got "
                              f"{bad[:1] or configs!r}")
    for param, names in (("key", key), ("reset_to_zero", reset_to_zero or []),
                         ("restore_value", restore_value or [])):
        if names is None or isinstance(names, str) or not all(isinstance(k, str) for k in names):
            raise DropInError(f"{param} must be a list of argument names, got {names!r}")
        unknown = [n for n in names if n not in arg_names]
        if unknown:
            raise DropInError(f"{param} contains names that are not kernel arguments: "
                              f"{', '.join(unknown)}. Valid argument names are: "
                              f"{', '.join(arg_names)}.")
    if prune_configs_by is not None:
        if not isinstance(prune_configs_by, Mapping):
            raise DropInError(f"prune_configs_by must be a dict, got {prune_configs_by!r}")
        unknown = sorted(set(prune_configs_by) - set(_PRUNE_KEYS))
        if unknown:
            raise DropInError(f"prune_configs_by has unknown keys {unknown}; it takes "
                              f"{', '.join(_PRUNE_KEYS)}")
        for name in ("perf_model", "early_config_prune"):
            if prune_configs_by.get(name) is not None and not callable(prune_configs_by[name]):
                raise DropInError(f"prune_configs_by[{name!r}] must be callable")
        top_k = prune_configs_by.get("top_k", 1.0)
        if isinstance(top_k, bool) or not (isinstance(top_k, int) and top_k >= 1 or
                                           isinstance(top_k, float) and 0 < top_k <= 1.0):
            raise DropInError(f"prune_configs_by['top_k'] must be an int >= 1 or a float in "
                              f"(0, 1], got {top_k!r}")
    for name, value in hooks.items():
        if value is not None and not callable(value):
            raise DropInError(f"{name} must be callable, got {value!r}")
    for name, value in (("warmup", warmup), ("rep", rep)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not value >= 0):  # 0: as Triton's, one launch
            raise DropInError(f"{name} must be a number of milliseconds >= 0, got {value!r}")
    for name, value in (("use_cuda_graph", use_cuda_graph), ("cache_results", cache_results)):
        if not (isinstance(value, int) and value in (0, 1)):  # a bool, or 0 or 1 as Triton
            raise DropInError(f"{name} must be True or False, got {value!r}")  # takes them
