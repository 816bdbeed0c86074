"""The environment variables that steer a worker, split by when the worker reads them.

Variables of CUDA, torch, Triton and tunegate change what a worker does. Some are read as it
starts (the CUDA driver's at its initialisation, torch's allocator settings, the switch to
Triton's interpreter): a live worker started under other values cannot take a new task. The
others are read while it compiles and runs (Triton's knobs and cache, TorchInductor's settings,
the compiler's debug switches): a kept worker takes them from each new task (`Setup`), so that
a library setting one at import (Liger-Kernel's imports set TORCHINDUCTOR_CACHE_DIR) no longer
leaves every spare worker unusable.
"""

from __future__ import annotations

import os

__all__ = ["at_start", "late", "take_late"]

_PREFIXES = ("TRITON", "CUDA", "TUNEGATE", "TORCH", "PYTORCH", "NVIDIA", "MLIR", "LLVM")
_LATE_PREFIXES = ("TRITON_", "TORCHINDUCTOR_", "MLIR_", "LLVM_")
_READ_AT_START = frozenset({"TRITON_INTERPRET"})


def _is_late(name: str) -> bool:
    return name.startswith(_LATE_PREFIXES) and name not in _READ_AT_START


def at_start() -> tuple[tuple[str, str], ...]:
    """The steering variables a worker reads as it starts, as they are now."""
    return tuple(sorted((k, v) for k, v in os.environ.items()
                        if k.startswith(_PREFIXES) and not _is_late(k)))


def late() -> tuple[tuple[str, str], ...]:
    """The steering variables a worker reads while it works, as they are now."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if _is_late(k)))


def take_late(values: tuple[tuple[str, str], ...]) -> None:
    """Make this process's late-read variables exactly `values` (in a worker, for its task)."""
    wanted = dict(values)
    for name in [n for n in os.environ if _is_late(n) and n not in wanted]:
        del os.environ[name]
    os.environ.update(wanted)
