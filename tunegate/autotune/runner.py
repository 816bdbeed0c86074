"""Running one task's configs in the current process: check against the expected output, stress,
and time (the timing launches' output is checked too).

This runs inside an isolated worker (see `worker`), so a crash or hang here costs one config.
Before every launch: every tensor argument is restored to its drawn value, outputs the kernel
only writes are poisoned, `reset_to_zero` outputs are zeroed; after it, every tensor is compared.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch

from ..space.space import Config
from .check import Mismatch, compare, poison, same_bits
from .stress import StressCheck, StressReport
from .task import Args, Task, split_config
from ..errors import TunegateError

__all__ = ["BaselineError", "Runner", "device_kind"]

FRESH_DRAWS = 1_000_000  # stress draws start here: never the draws the quick checks used
SHORT_WARMUP_MS, SHORT_REP_MS = 5, 20  # the short timing every candidate gets on a GPU


class BaselineError(RuntimeError, TunegateError):
    """The reference or baseline config itself failed: nothing can be checked against it."""


def device_kind() -> str:
    """'gpu' when kernels run on a GPU, 'interpreter' under TRITON_INTERPRET=1 or without one."""
    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return "interpreter"
    return "gpu"


def device_facts() -> tuple[str, int] | None:
    """On a CUDA GPU: its compile target ('cuda:90:32', for compile workers) and the shared
    memory a block may use on it, in bytes; None elsewhere."""
    if device_kind() != "gpu" or torch.version.hip:
        return None
    from .precompile import gpu_target, target_text

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    limit = int(getattr(props, "shared_memory_per_block_optin", 0) or 0)
    return target_text(gpu_target((props.major, props.minor))), limit


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _tensors(args: Args) -> dict[str, torch.Tensor]:
    return {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}


class Runner:
    """Inputs, expected results and measurements for one task, cached per input draw."""

    def __init__(self, task: Task, *, seed: int, baseline: Config | None,
                 inputs: Any = None, deterministic: bool = True) -> None:
        self.task, self.seed, self.baseline = task, seed, baseline
        self.deterministic = deterministic  # repeated launches must agree bit for bit
        self.kind = device_kind()
        self.device = "cuda" if self.kind == "gpu" else "cpu"
        self._inputs = inputs  # a callable(seed, device) replacing task.make_inputs
        self._inputs_cache: dict[int, Args] = {}
        self._expected_cache: dict[int, dict[str, torch.Tensor]] = {}
        self._fresh = FRESH_DRAWS
        self._groups: list[tuple[str, dict[str, torch.Tensor]]] = []  # see `vote`
        if task.reference is None and baseline is None:
            raise BaselineError("no reference function and no baseline config")
        self.in_place = task.written_in_place()
        self.zeroed = tuple(task.reset_to_zero)
        self.poisoned = tuple(n for n in task.outputs
                              if n not in self.in_place and n not in self.zeroed)
        self._validate_names()
        self.draw(0)  # fail fast: a raising reference or a broken baseline stops the run now

    def _validate_names(self) -> None:
        args = self.inputs(0)
        for field, names in (("outputs", self.task.outputs),
                             ("restore_value", self.task.restore_value),
                             ("reset_to_zero", self.task.reset_to_zero)):
            for name in names:
                if not isinstance(args.get(name), torch.Tensor):
                    raise BaselineError(f"{field} names {name!r}, which is not a tensor argument "
                                        f"made by make_inputs (arguments: {', '.join(args)})")

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

    def prepare(self, pristine: Args, into: Args | None = None) -> Args:
        """Arguments for one launch: tensors restored (copied into `into` if given), write-only
        outputs poisoned, `reset_to_zero` outputs zeroed."""
        if into is None:
            args = {k: v.clone() if isinstance(v, torch.Tensor) else v
                    for k, v in pristine.items()}
        else:
            args = into
            for k, v in pristine.items():
                if isinstance(v, torch.Tensor):
                    args[k].copy_(v)
        for name in self.poisoned:
            poison(args[name])
        for name in self.zeroed:
            args[name].zero_()
        return args

    def _launch(self, pristine: Args, config: Config, into: Args | None = None) -> Args:
        args = self.prepare(pristine, into)
        self.task.run(args, config)
        _sync()
        return args

    def _expected(self, pristine: Args) -> dict[str, torch.Tensor]:
        if self.task.reference is not None:
            return self._from_reference(pristine)
        assert self.baseline is not None
        try:
            args = self._launch(pristine, self.baseline)
        except Exception as e:
            raise BaselineError(f"the baseline config {self.baseline.text()} raised "
                                f"{type(e).__name__}: {e}") from e
        for name in self.poisoned:
            if _unwritten(args[name]):
                raise BaselineError(f"the baseline config {self.baseline.text()} left elements "
                                    f"of {name!r} unwritten; give the task a reference")
        return _tensors(args)

    def _from_reference(self, pristine: Args) -> dict[str, torch.Tensor]:
        assert self.task.reference is not None
        args = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in pristine.items()}
        try:
            returned = self.task.reference(**args)
        except Exception as e:
            raise BaselineError(f"the reference function raised {type(e).__name__}: {e}") from e
        expected = _tensors(args)
        if isinstance(returned, torch.Tensor):
            returned = (returned,)
        if isinstance(returned, (tuple, list)):
            if len(returned) != len(self.task.outputs):
                raise BaselineError(f"the reference returned {len(returned)} tensors for "
                                    f"{len(self.task.outputs)} outputs {self.task.outputs}")
            returned = dict(zip(self.task.outputs, returned))
        for name, value in (returned or {}).items():
            if name not in expected:
                raise BaselineError(f"the reference returned {name!r}, which is not a tensor "
                                    "argument")
            if tuple(value.shape) != tuple(expected[name].shape):
                raise BaselineError(f"the reference's {name!r} has shape {tuple(value.shape)}, "
                                    f"but the argument has shape {tuple(expected[name].shape)}")
            expected[name] = value
        return expected

    def inputs(self, i: int) -> Args:
        """The pristine arguments of draw `i` (made once)."""
        if i not in self._inputs_cache:
            self._inputs_cache[i] = self._make(i)
        return self._inputs_cache[i]

    def draw(self, i: int) -> tuple[Args, dict[str, torch.Tensor]]:
        """Draw `i`'s pristine arguments and the expected state of every tensor after a run."""
        if i not in self._expected_cache:
            self._expected_cache[i] = self._expected(self.inputs(i))
        return self.inputs(i), self._expected_cache[i]

    def _fresh_draw(self, i: int) -> tuple[Args, dict[str, torch.Tensor]]:
        """An uncached draw, for checks that must not reuse the quick checks' inputs."""
        pristine = self._make(i)
        return pristine, self._expected(pristine)

    def problem_key(self) -> str:
        return self.task.problem_key(self.inputs(0))

    def mismatch(self, args: Args, expected: dict[str, torch.Tensor]) -> Mismatch | None:
        """The first tensor that differs from its expected state, or None."""
        for name, want in expected.items():
            bad = compare(name, args[name], want, self.task.tolerances)
            if bad is not None:
                return bad
        return None

    def vote(self, args: Args) -> str | None:
        """Without a reference: which group of agreeing wrong outputs (on draw 0) this one
        joins, so that the tuner can see a baseline that the other configs outvote."""
        if self.task.reference is not None:
            return None
        outputs = {n: args[n].clone() for n in self.task.outputs}
        for gid, kept in self._groups:
            if all(compare(n, outputs[n], kept[n], self.task.tolerances) is None
                   for n in outputs):
                return gid
        if len(self._groups) >= 8:  # bounded memory; a ninth distinct output votes alone
            return None
        gid = f"{os.getpid()}-{len(self._groups)}"
        self._groups.append((gid, outputs))
        return gid

    # -- operations ------------------------------------------------------------------------
    def warm(self, config: Config) -> None:
        """Launch once, so that loading the compiled kernel is not counted as checking it."""
        self._launch(self.inputs(0), config)

    def check(self, config: Config, draws: int, first: int = 0
              ) -> tuple[Mismatch | None, int, str | None]:
        """The first mismatch over `draws` input draws from `first`, on which draw, and (on
        draw 0 without a reference) the vote of the wrong output."""
        for i in range(first, first + draws):
            pristine, expected = self.draw(i) if i < FRESH_DRAWS else self._fresh_draw(i)
            args = self._launch(pristine, config)
            bad = self.mismatch(args, expected)
            if bad is not None:
                return bad, i, self.vote(args) if i == 0 else None
        return None, first + draws, None

    def stress(self, config: Config, settings: StressCheck) -> StressReport:
        """Many launches over fresh draws, each restored, poisoned and compared; where the
        kernel has no atomics, each also compared bit for bit with the draw's first launch."""
        s = settings.resolved(self.kind)
        assert s.min_launches and s.max_launches and s.draws and s.seconds is not None
        start = time.perf_counter()
        draws = []
        for _ in range(s.draws):
            pristine, expected = self._fresh_draw(self._fresh)
            self._fresh += 1
            work = self.prepare(pristine)
            draws.append((pristine, expected, work))
        firsts: list[dict[str, torch.Tensor] | None] = [None] * len(draws)
        launches = wrong = differing = 0
        first_bad: Mismatch | None = None
        first_bad_draw: int | None = None
        while launches < s.max_launches and (
                launches < s.min_launches or time.perf_counter() - start < s.seconds):
            d = launches % len(draws)
            pristine, expected, work = draws[d]
            args = self._launch(pristine, config, into=work)
            launches += 1
            bad = self.mismatch(args, expected)
            if bad is not None:
                wrong += 1
                if first_bad is None:
                    first_bad, first_bad_draw = bad, d
            outputs = {n: args[n] for n in self.task.outputs}
            first = firsts[d]
            if first is None:
                firsts[d] = {n: t.clone() for n, t in outputs.items()}
            elif not all(same_bits(t, first[n]) for n, t in outputs.items()):
                differing += 1
        return StressReport(launches=launches, draws=len(draws), wrong=wrong,
                            differing=differing, deterministic=self.deterministic,
                            first_mismatch=first_bad.model_dump() if first_bad else None,
                            first_wrong_draw=first_bad_draw,
                            seconds=time.perf_counter() - start)

    def time(self, config: Config, draw: int = 0, full: bool = True
             ) -> tuple[float, Mismatch | None, str | None, float]:
        """Median milliseconds per launch on one draw, and the check of the output the timing
        launches left (free: no extra launch): (ms, mismatch, vote, seconds comparing).
        Not `full`: a short measurement on a GPU (L2 still flushed), to pick contenders."""
        pristine, expected = self.draw(draw)
        args = self.prepare(pristine)
        restore = bool(self.in_place or self.zeroed)

        def launch() -> None:
            if restore:  # as triton.autotune's restore_value / reset_to_zero: part of the call
                self.prepare(pristine, into=args)
            self.task.run(args, config)

        if self.kind == "gpu" and not full:
            import triton.testing

            ms = float(triton.testing.do_bench(launch, warmup=SHORT_WARMUP_MS, rep=SHORT_REP_MS,
                                               return_mode="median"))
        elif self.kind == "gpu" and self.task.do_bench is not None:
            ms = float(self.task.do_bench(launch, quantiles=(0.5, 0.2, 0.8))[0])
        elif self.kind == "gpu":
            import triton.testing

            ms = float(triton.testing.do_bench(launch, warmup=25, rep=100,
                                               return_mode="median"))
        else:
            samples = []
            for _ in range(3):
                start = time.perf_counter()
                launch()
                samples.append((time.perf_counter() - start) * 1e3)
            ms = statistics.median(samples)
        _sync()
        start = time.perf_counter()
        bad = self.mismatch(args, expected)
        vote = self.vote(args) if bad is not None and draw == 0 else None
        return ms, bad, vote, time.perf_counter() - start

    def compile(self, config: Config, target: Any = None) -> None:
        """Compile without running (GPU only, for this GPU: `target` is not used), so compile
        errors surface in a compile worker."""
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
