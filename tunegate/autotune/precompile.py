"""Compile a `@triton.jit` kernel for a GPU target in a process that never touches a GPU.

Triton's on-disk cache key is made of the kernel's source (and the jit functions it calls), the
argument specialisation (dtypes, 16-byte alignment, integers equal to 1), the compile options,
the target, the compiler's own hash and the code-generation environment variables: nothing
that needs a CUDA context. A process that shows Triton a stand-in driver for the target and
calls the kernel's own `warmup` therefore writes exactly the cache entry that a later
`kernel[grid](...)` on the GPU looks up, and that launch loads the binary instead of compiling.
Run it with `TRITON_CACHE_DIR` shared with the GPU process and without `TRITON_INTERPRET=1`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator, Mapping

from ..errors import TunegateError
from .nested import assemble

__all__ = ["Precompiled", "PrecompileError", "TaskCompiler", "TensorSpec", "gpu_target",
           "parse_target", "precompile", "target_text"]


class PrecompileError(RuntimeError, TunegateError):
    """The kernel cannot be compiled ahead of its launch; the message says why."""


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument as Triton specialises it: its dtype name ('float16', …) only.

    Tensors are assumed 16-byte aligned, as every fresh allocation of PyTorch's allocators is;
    a launch with a misaligned view specialises differently and misses the cache.
    """

    dtype: str

    @classmethod
    def of(cls, tensor: Any) -> "TensorSpec":
        """A real tensor's spec; PrecompileError where it is not 16-byte aligned."""
        if tensor.data_ptr() % 16:
            raise PrecompileError("a tensor argument is not 16-byte aligned; its launch would "
                                  "specialise differently: pass it to the GPU process as is")
        return cls(str(tensor.dtype).removeprefix("torch."))

    def data_ptr(self) -> int:
        return 0  # aligned to everything, as a fresh allocation is aligned to 16


class _DtypeName(str):
    """A dtype that prints as torch's does, so Triton maps it without importing torch."""

    def __str__(self) -> str:
        return f"torch.{str.__str__(self)}"


@dataclass(frozen=True)
class Precompiled:
    """What one compilation produced: the cache key it was stored under, and its cost."""

    hash: str
    name: str
    shared_bytes: int
    seconds: float


@dataclass(frozen=True)
class _CompileOnlyDriver:
    """Just enough of a Triton driver to compile for `target`: device 0, no stream."""

    target: Any

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target


def gpu_target(capability: int | tuple[int, int], backend: str = "cuda",
               warp_size: int = 32) -> Any:
    """Triton's target for a GPU, e.g. `gpu_target((9, 0))` for an H100/H200 (sm_90)."""
    from triton.backends.compiler import GPUTarget

    arch = capability[0] * 10 + capability[1] if isinstance(capability, tuple) else capability
    return GPUTarget(backend, arch, warp_size)


@contextmanager
def _compiling_for(target: Any, kernel: Any) -> Iterator[None]:
    """Triton's active driver replaced by a compile-only one; the kernel's per-device state
    made for it is dropped afterwards, so a later real launch in this process is unaffected."""
    from triton.runtime.driver import driver

    previous = driver._active  # None until something asked for the real driver
    had_device = 0 in kernel.device_caches
    driver.set_active(_CompileOnlyDriver(target))
    try:
        yield
    finally:
        driver._active = previous
        if not had_device:
            kernel.device_caches.pop(0, None)


def _stand_in(value: Any) -> Any:
    """What Triton specialises on, for one argument: tensors become dtype-only stand-ins."""
    from triton.runtime.jit import MockTensor

    if hasattr(value, "data_ptr") and hasattr(value, "dtype") \
            and not isinstance(value, TensorSpec):
        value = TensorSpec.of(value)
    if isinstance(value, TensorSpec):
        return MockTensor(_DtypeName(value.dtype))
    return value


def precompile(kernel: Any, args: Mapping[str, Any], config: Mapping[str, Any],
               target: Any) -> Precompiled:
    """Compile `kernel` for `target` as `kernel[grid](**args, **config)` would, into the cache.

    `args` are the kernel's run-time arguments (tensors, `TensorSpec`s or scalars, by name);
    `config` the constexpr values and launch options (`num_warps`, `num_stages`, …).
    """
    if not hasattr(kernel, "warmup") or not hasattr(kernel, "device_caches"):
        raise PrecompileError(f"{kernel!r} is not a compiled @triton.jit kernel (is "
                              "TRITON_INTERPRET=1 set in this process?)")
    start = time.perf_counter()
    stand_ins = assemble({name: _stand_in(value) for name, value in args.items()})
    with _compiling_for(target, kernel):
        compiled = kernel.warmup(grid=(1,), **stand_ins, **config)
    return Precompiled(hash=compiled.hash, name=compiled.metadata.name,
                       shared_bytes=int(compiled.metadata.shared),
                       seconds=time.perf_counter() - start)


def parse_target(text: str) -> Any:
    """The target named 'backend:arch:warp_size' (as `target_text` writes it)."""
    backend, arch, warp = text.split(":")
    return gpu_target(int(arch), backend, int(warp))


def target_text(target: Any) -> str:
    return f"{target.backend}:{target.arch}:{target.warp_size}"


class TaskCompiler:
    """Compiles one task's configs in a compile worker (no GPU, no CUDA context), for the
    target each request names, with the argument specialisation each request brings (the
    run worker's draw 0, see `Runner.arg_specs`), else that of inputs it makes once: on
    torch's meta device (shapes and dtypes, no contents), or on the CPU where `make_inputs`
    needs real data (a generator seeded on the device, a value read back). Fifteen compile
    workers each drawing an 8192^2 input on the CPU held up a tuning's start by a second."""

    kind = "compile"

    def __init__(self, task: Any, *, seed: int, inputs: Any) -> None:
        if task.launch is not None and task.compile_kwargs is None:
            raise PrecompileError(f"{task.name} launches through its own function: its "
                                  "arguments are only known there")
        self.task, self.seed, self._make = task, seed, inputs or task.make_inputs

    @cached_property
    def own_args(self) -> dict[str, Any]:
        """Draw 0's arguments made here, for requests that bring none."""
        try:
            return self._make(self.seed, "meta")
        except Exception:  # noqa: BLE001 - it needs real data: made on the CPU instead
            return self._make(self.seed, "cpu")

    def compile(self, config: Any, target: str, arg_specs: Mapping[str, Any] | None = None
                ) -> int:
        """Compile one config for `target` ('cuda:90:32') into the cache, specialised on
        `arg_specs` if given; the shared memory it needs per block, in bytes."""
        from .task import split_config

        if self.task.compile_kwargs is not None:
            kwargs = self.task.compile_kwargs(config)
        else:
            kernel_kwargs, options = split_config(config)
            kwargs = {**kernel_kwargs, **options}
        given = arg_specs if arg_specs is not None else self.own_args
        args = {k: v for k, v in given.items() if k not in kwargs}
        return precompile(self.task.kernel, args, kwargs, parse_target(target)).shared_bytes
