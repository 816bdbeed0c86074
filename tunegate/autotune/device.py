"""Which device kernels run on here: a GPU, or Triton's interpreter on the CPU, and its facts."""

from __future__ import annotations

import os

import torch

__all__ = ["device_facts", "device_kind", "gpu_in_use", "sync"]


def device_kind() -> str:
    """'gpu' when kernels run on a GPU, 'interpreter' under TRITON_INTERPRET=1 or without one."""
    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return "interpreter"
    return "gpu"


def gpu_in_use() -> bool:
    """Whether this process already works on a CUDA GPU (its CUDA state is initialised), so
    asking for the GPU's facts costs it nothing new."""
    return device_kind() == "gpu" and torch.cuda.is_initialized()


def device_facts() -> tuple[str, int] | None:
    """On a CUDA GPU: its compile target ('cuda:90:32', for compile workers) and the shared
    memory a block may use on it, in bytes; None elsewhere."""
    if device_kind() != "gpu" or torch.version.hip:
        return None
    from .precompile import gpu_target, target_text

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    limit = int(getattr(props, "shared_memory_per_block_optin", 0) or 0)
    return target_text(gpu_target((props.major, props.minor))), limit


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
