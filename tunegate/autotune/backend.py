"""Choosing where kernels run: the GPU when there is one, else Triton's CPU interpreter."""

from __future__ import annotations

import os

__all__ = ["interpret_without_gpu"]


def interpret_without_gpu() -> bool:
    """Set TRITON_INTERPRET=1 when no GPU is usable; True if kernels will be interpreted.

    Call it before any `@triton.jit` runs: Triton reads the variable when it decorates.
    """
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True
    import torch

    if torch.cuda.is_available():
        return False
    os.environ["TRITON_INTERPRET"] = "1"
    return True
