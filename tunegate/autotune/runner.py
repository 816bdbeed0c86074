"""Running one task's configs in the current process: check against the baseline, then time.

This runs inside an isolated worker (see `worker`), so a crash or hang here costs one config.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch

from ..space.space import Config
from .check import Mismatch, compare, poison
from .task import Args, Task, split_config

__all__ = ["BaselineError", "Runner", "device_kind"]


class BaselineError(RuntimeError):
    """The reference or baseline config itself failed: nothing can be checked against it."""


def device_kind() -> str:
    """'gpu' when kernels run on a GPU, 'interpreter' under TRITON_INTERPRET=1 or without one."""
    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return "interpreter"
    return "gpu"


def _clone(args: Args) -> Args:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()}


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class Runner:
    """Inputs, expected results and measurements for one task, cached per input draw."""

    def __init__(self, task: Task, *, seed: int, baseline: Config | None,
                 inputs: Any = None) -> None:
        self.task, self.seed, self.baseline = task, seed, baseline
        self.kind = device_kind()
        self.device = "cuda" if self.kind == "gpu" else "cpu"
        self._inputs = inputs  # a callable(seed, device) replacing task.make_inputs
        self._inputs_cache: dict[int, Args] = {}
        self._expected_cache: dict[int, Args] = {}
        if task.reference is None and baseline is None:
            raise BaselineError("no reference function and no baseline config")

    # -- inputs and expectations -----------------------------------------------------------
    def _make(self, draw: int) -> Args:
        make = self._inputs or self.task.make_inputs
        args = make(self.seed + draw, self.device)
        for name, value in args.items():
            if (isinstance(value, torch.Tensor) and value.dtype.is_floating_point
                    and name not in self.task.outputs and value.numel()
                    and not bool(value.ne(0).any())):
                raise BaselineError(f"input {name!r} of draw {draw} is all zeros: the check "
                                    "needs random data, or it cannot see wrong indexing")
        return args

    def _run(self, pristine: Args, config: Config) -> Args:
        args = _clone(pristine)
        for name in self.task.outputs:
            poison(args[name])
        self.task.run(args, config)
        _sync()
        return args

    def _expected(self, pristine: Args) -> Args:
        if self.task.reference is not None:
            args = _clone(pristine)
            try:
                returned = self.task.reference(**args)
            except Exception as e:
                raise BaselineError(f"the reference function raised {type(e).__name__}: {e}") \
                    from e
            expected = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
            if isinstance(returned, torch.Tensor):
                returned = (returned,)
            if isinstance(returned, (tuple, list)):
                returned = dict(zip(self.task.outputs, returned))
            expected.update(returned or {})
            return expected
        assert self.baseline is not None
        try:
            args = self._run(pristine, self.baseline)
        except Exception as e:
            raise BaselineError(f"the baseline config {self.baseline.text()} raised "
                                f"{type(e).__name__}: {e}") from e
        for name in self.task.outputs:
            if _unwritten(args[name]):
                raise BaselineError(f"the baseline config {self.baseline.text()} left elements "
                                    f"of {name!r} unwritten; give the task a reference")
        return {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}

    def inputs(self, i: int) -> Args:
        """The pristine arguments of draw `i` (made once)."""
        if i not in self._inputs_cache:
            self._inputs_cache[i] = self._make(i)
        return self._inputs_cache[i]

    def draw(self, i: int) -> tuple[Args, Args]:
        """Draw `i`'s pristine arguments and the expected state of every tensor after a run."""
        if i not in self._expected_cache:
            self._expected_cache[i] = self._expected(self.inputs(i))
        return self.inputs(i), self._expected_cache[i]

    def problem_key(self) -> str:
        return self.task.problem_key(self.inputs(0))

    # -- operations ------------------------------------------------------------------------
    def warm(self, config: Config) -> None:
        """Launch once, so that loading the compiled kernel is not counted as checking it."""
        self._run(self.inputs(0), config)

    def check(self, config: Config, draws: int) -> tuple[Mismatch | None, int]:
        """The first mismatch over `draws` fresh input draws, and on which draw."""
        for i in range(draws):
            pristine, expected = self.draw(i)
            args = self._run(pristine, config)
            for name, want in expected.items():
                bad = compare(name, args[name], want, self.task.tolerances)
                if bad is not None:
                    return bad, i
        return None, draws

    def time(self, config: Config, draw: int = 0) -> float:
        """Median milliseconds per launch on one input draw, on the GPU or the interpreter."""
        args = _clone(self.inputs(draw))
        if self.kind == "gpu":
            import triton.testing

            return float(triton.testing.do_bench(lambda: self.task.run(args, config),
                                                 warmup=25, rep=100, return_mode="median"))
        samples = []
        for _ in range(3):
            start = time.perf_counter()
            self.task.run(args, config)
            samples.append((time.perf_counter() - start) * 1e3)
        return statistics.median(samples)

    def compile(self, config: Config) -> None:
        """Compile without running (GPU only), so compile errors surface in a compile worker."""
        if self.kind != "gpu" or self.task.launch is not None:
            return
        args = self.inputs(0)
        kernel_kwargs, options = split_config(config)
        meta = {**args, **config.values}
        grid = self.task.grid(meta) if callable(self.task.grid) else self.task.grid
        self.task.kernel.warmup(**args, **kernel_kwargs, **options, grid=grid)


def _unwritten(t: torch.Tensor) -> bool:
    probe = t.clone()
    poison(probe)
    if t.dtype.is_floating_point:
        return bool(t.isnan().any())
    return bool((t == probe).any())
