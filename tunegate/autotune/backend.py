"""Choosing where kernels run: the GPU when there is one, else Triton's CPU interpreter."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["COMPILE_ONLY", "interpret_without_gpu"]

# Set to 1 in a compile worker: it sees no GPU, compiles for the one the run worker reports.
COMPILE_ONLY = "TUNEGATE_COMPILE_ONLY"


def interpret_without_gpu() -> bool:
    """Set TRITON_INTERPRET=1 when no GPU is usable; True if kernels will be interpreted.
    Not in a compile worker (TUNEGATE_COMPILE_ONLY=1), which compiles for a GPU it lacks.

    Triton picks compiled or interpreted when `@triton.jit` decorates, so kernels decorated
    before this call (Triton imported first) are switched to the interpreter here, in place.
    """
    if os.environ.get(COMPILE_ONLY) == "1":
        return False  # a compile worker: it compiles for that GPU and never launches
    if os.environ.get("TRITON_INTERPRET") == "1":
        _interpret_existing()
        return True
    if _gpu_present():
        return False
    os.environ["TRITON_INTERPRET"] = "1"
    _interpret_existing()
    return True


def _gpu_present() -> bool:
    """Whether torch sees a GPU, counted through NVML where it can be (torch's fork-safe
    count): the CUDA driver is not initialised by asking, so this process may still fork the
    worker server (see `server_fork`)."""
    import torch

    return torch.cuda.device_count() > 0


def _interpret_existing() -> None:
    """Make kernels already decorated as compiled `JITFunction`s run under the interpreter.

    Their class cannot be swapped, so `JITFunction`'s launch and call delegate to an
    `InterpretedFunction` of the same Python function (made once per kernel). This is only
    done once no GPU is usable, when a compiled launch could not succeed anyway.
    """
    jit = sys.modules.get("triton.runtime.jit")
    if jit is None or getattr(jit.JITFunction, "_tunegate_interpreted", False):
        return  # nothing decorated yet (Triton reads the variable when it decorates), or done
    from triton.runtime.interpreter import InterpretedFunction

    def interpreted(self: Any) -> Any:
        if "_tunegate_interpreter" not in self.__dict__:
            self.__dict__["_tunegate_interpreter"] = InterpretedFunction(self.fn)
        return self.__dict__["_tunegate_interpreter"]

    jit.JITFunction.run = lambda self, *args, **kwargs: interpreted(self).run(*args, **kwargs)
    jit.JITFunction.__call__ = lambda self, *args, **kwargs: interpreted(self)(*args, **kwargs)
    jit.JITFunction._tunegate_interpreted = True
