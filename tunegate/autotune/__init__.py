"""How the best allowed config is found: search, accuracy check, timing, store.

Names are loaded on first use, so `tunegate tune --help` and the policy CLI do not pay for
importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "api": ("tune",),
    "refs": ("kernel_task", "resolve_task", "task_ref"),
    "dropin": ("Autotuner", "DropInError", "autotune"),
    "callsite": ("CallSite",),
    "dropin_report": ("Tuning", "tunings"),
    "inputs": ("CallerData",),
    "outputs": ("stored_arguments",),
    "backend": ("interpret_without_gpu",),
    "check": ("DEFAULT_TOLERANCES", "Mismatch", "compare", "poison"),
    "store": ("Store", "default_store_path", "open_store"),
    "strategies": ("STRATEGIES", "Strategy"),
    "task": ("Task", "kernel_hash", "space_from_triton_configs", "triton_config_values"),
    "tuner": ("Tuner",),
    "results": ("Budget", "TuneError", "TuneInterrupted", "TuneResult"),
    "evaluator": ("Trial",),
    "baseline": ("baseline_config",),
    "stress": ("StressCheck",),
    "worker": ("TaskRef",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tunegate.autotune' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
