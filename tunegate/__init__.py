"""tunegate: policy-driven, accuracy-checked autotuning for Triton kernels.

`tunegate.space` says what can be tuned, `tunegate.policy` what may be tuned here, and
`tunegate.autotune` finds the fastest allowed config that computes the right answer.
Importing `tunegate` or `tunegate.policy` imports neither torch nor triton.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Each public name is imported on first use, so `import tunegate.policy` pays only for itself.
_SOURCES = {
    "TunegateError": ".errors", "Reason": ".reasons",
    "install": ".routing", "installed": ".routing", "uninstall": ".routing", "wrap": ".routing",
    **dict.fromkeys(("Environment", "Policy", "PolicyError", "Verdict", "detect_environment",
                     "detect_traits"), ".policy"),
    **dict.fromkeys(("Config", "Parameter", "Space", "helion_space", "parse_config_text"),
                    ".space"),
}

# `tunegate.autotune` is the subpackage, so the drop-in decorator is re-exported as `autotuned`
# (and `import tunegate.triton as triton` gives it as `triton.autotune`).
_AUTOTUNE = {"Budget": "Budget", "Task": "Task", "TuneError": "TuneError",
             "TuneResult": "TuneResult", "Tuner": "Tuner", "autotuned": "autotune",
             "Autotuner": "Autotuner",
             "tune": "tune", "interpret_without_gpu": "interpret_without_gpu"}

__all__ = [
    "Autotuner", "Budget", "Config", "Environment", "Parameter", "Policy", "PolicyError",
    "Reason", "Space", "Task", "TuneError", "TuneResult", "Tuner", "TunegateError", "Verdict",
    "autotuned", "detect_environment", "detect_traits", "helion_space", "install", "installed",
    "interpret_without_gpu", "parse_config_text", "tune", "uninstall", "wrap",
]


def __getattr__(name: str) -> Any:
    if name in _AUTOTUNE:
        return getattr(importlib.import_module(".autotune", __name__), _AUTOTUNE[name])
    if name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name], __name__), name)
        globals()[name] = value  # cached: the next lookup is a plain attribute
        return value
    raise AttributeError(f"module 'tunegate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
