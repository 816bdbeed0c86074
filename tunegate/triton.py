"""`import tunegate.triton as triton`: the installed Triton, with `autotune` tuned by tunegate.

Every other name (`jit`, `Config`, `cdiv`, `heuristics`, `language`, …) is Triton's own, so
changing the import line is the whole migration.
"""

from __future__ import annotations

from typing import Any

import triton as _triton

from .autotune.dropin import Autotuner, autotune

__all__ = ["Autotuner", "autotune"]


def __getattr__(name: str) -> Any:
    return getattr(_triton, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_triton)) | set(__all__))
