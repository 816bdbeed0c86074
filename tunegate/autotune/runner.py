"""Running one task's configs in the current process: check against the expected output, stress,
and time (what a timing's launches leave is checked too, unless asked not to: `time`).

This runs inside an isolated worker (see `worker`), so a crash or hang here costs one config.
Before every launch: every tensor argument is restored to its drawn value, outputs the kernel
only writes are poisoned, `reset_to_zero` outputs are zeroed; after it, every tensor is compared.

Without a reference the baseline config's output is expected, made by two launches poisoned
differently: an element that follows the poison (poison A after launch A, poison B after launch
B) is not written for this call and is not compared; an output left wholly so (a store behind a
constexpr the call does not set) is no output of this call (a config that writes it disputes
the baseline: `baseline.coverage_vote`), unless the baseline writes it when given its drawn
contents (it adds into it): then it is restored, not poisoned, as is a tensor
the baseline writes that the source reading did not find written. A tensor whose written elements
differ between the two launches (tie-broken indices, a workspace) has unspecified contents and is
not compared either; nor are the task's `scratch` arguments. `not_compared` records why.
"""

from __future__ import annotations

import os
import statistics
import time
from functools import cached_property
from typing import Any, Callable, Sequence

import torch

from ..space.space import Config
from . import trace
from .check import Bound, Mismatch, bits_differ, compare, follows_poison, holds_poison, \
    judged_tolerance, perturb, perturbation, poison, sensitivity, working_dtype, \
    written_beyond, written_outside
from .copies import copy_tensors, margins, overlapping, restore
from .partials import compare_partials
from .device import device_facts, device_kind, sync
from .expected import BaselineError, Expected, reference_outputs, tensors_of
from .inputs import CallerData
from .messages import CheckResult, TimeResult
from .stress import StressCheck, StressReport
from .task import Args, Task, split_config

__all__ = ["BaselineError", "Runner", "device_facts", "device_kind"]

FRESH_DRAWS = 1_000_000  # stress draws start here: never the draws the quick checks used
# The short timing every candidate gets on a GPU: the median of ~10 ms of launches (each after
# an L2 flush), enough to rank configs, since contenders are timed again in rounds (see search).
SHORT_WARMUP_MS, SHORT_REP_MS = 3, 10
# A tuning's stress draws are made once and kept for its next stress check while they take no
# more memory than this (else each check makes its own, as a big problem's would not fit twice).
KEPT_STRESS_BYTES = 1 << 30
# Tolerance bounds of draw 0's expected floats are kept for the compares of every timing while
# they take no more memory than this (see `check.Bound`).
KEPT_BOUND_BYTES = 1 << 30


class Runner:
    """Inputs, expected results and measurements for one task, cached per input draw."""

    def __init__(self, task: Task, *, seed: int, baseline: Config | None,
                 inputs: Any = None, deterministic: bool = True) -> None:
        self.task, self.seed, self.baseline = task, seed, baseline
        self.deterministic = deterministic  # repeated launches must agree bit for bit
        self.kind = device_kind()
        self.device = "cuda" if self.kind == "gpu" else "cpu"
        self._inputs = inputs  # a callable(seed, device) replacing task.make_inputs: the
        # drop-in's copies of a program's own call, never checked for random data
        self._inputs_cache: dict[int, Args] = {}
        self._expected_cache: dict[int, Expected] = {}
        self.not_compared: dict[str, str] = {n: "scratch" for n in task.scratch}  # name: why
        self._fresh = FRESH_DRAWS
        self._stress_kept: list[tuple[Args, Expected]] = []  # see `_stress_draws`
        self.ahead_failure: BaselineError | None = None  # see `stress_draws_ahead`
        self._groups: list[tuple[str, dict[str, torch.Tensor]]] = []  # see `vote`
        self._bounds: dict[tuple[str, torch.dtype], Bound | None] = {}  # see `_bound`
        self._bound_bytes = 0
        if task.reference is None and baseline is None:
            raise BaselineError("no reference function and no baseline config")
        self.in_place = task.written_in_place()
        self.zeroed = tuple(task.reset_to_zero)
        self.poisoned = tuple(n for n in task.outputs
                              if n not in self.in_place and n not in self.zeroed)
        self._validate_names()
        drawn = self.inputs(0)  # what the source names but the task does not pass is no argument
        self.in_place = tuple(n for n in self.in_place if isinstance(drawn.get(n), torch.Tensor))
        aliased = overlapping(drawn, self.poisoned)  # poisoned, they would poison what the
        self.poisoned = tuple(n for n in self.poisoned if n not in aliased)  # kernel reads
        self.in_place += tuple(aliased)
        self.draw(0)  # fail fast: a raising reference or a broken baseline stops the run now

    def _validate_names(self) -> None:
        args = self.inputs(0)
        for field, names in (("outputs", self.task.outputs),
                             ("restore_value", self.task.restore_value),
                             ("reset_to_zero", self.task.reset_to_zero),
                             ("scratch", self.task.scratch)):
            for name in names:
                if not isinstance(args.get(name), torch.Tensor):
                    raise BaselineError(f"{field} names {name!r}, which is not a tensor argument "
                                        f"made by make_inputs (arguments: {', '.join(args)})")

    # -- inputs and expectations -----------------------------------------------------------
    def _make(self, draw: int) -> Args:
        make = self.draws_from
        try:
            if isinstance(make, CallerData):  # what is poisoned is not drawn
                args = make(self.seed + draw, self.device, unread=self.poisoned)
            else:
                args = make(self.seed + draw, self.device)
        except Exception as e:
            raise BaselineError(f"make_inputs raised {type(e).__name__} on draw {draw}: "
                                f"{str(e)[:300]}") from e
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            raise BaselineError(f"make_inputs returned {type(args).__name__}, not a dict of "
                                "argument names to values")
        if self._inputs is not None:
            return args  # a program's own data (the drop-in's) may hold zeros: a state, a bias
        # Zeroed, restored, written or scratch arguments may be all zeros: not read as data.
        exempt = {*self.task.outputs, *self.task.reset_to_zero, *self.task.restore_value,
                  *self.task.scratch}
        for name, value in args.items():
            if (isinstance(value, torch.Tensor) and value.dtype.is_floating_point
                    and name not in exempt and value.numel()
                    and not bool(value.ne(0).any())):
                raise BaselineError(f"input {name!r} of draw {draw} is all zeros: the check "
                                    "needs random data, or it cannot see wrong indexing")
        return args

    def prepare(self, pristine: Args, into: Args | None = None, second: bool = False,
                keep: frozenset[str] = frozenset()) -> Args:
        """Arguments for one launch: tensors restored (copied into `into` if given, but for
        those in `keep`, known to hold their pristine bits there), write-only outputs
        poisoned (with the `second` poison if asked), `reset_to_zero` outputs zeroed; what is
        poisoned or zeroed is not copied first."""
        overwritten = {*self.poisoned, *self.zeroed}
        if into is None:
            args = copy_tensors(pristine, unread=overwritten)
        else:
            args = into
            for k, v in pristine.items():
                if isinstance(v, torch.Tensor) and k not in overwritten and k not in keep:
                    restore(args[k], v)
        for name in self.poisoned:
            poison(args[name], second)
        for name in self.zeroed:
            args[name].zero_()
        return args

    def reset(self, pristine: Args, args: Args) -> None:
        """What triton.autotune's restore_value and reset_to_zero do before each launch it
        times, and no more: outputs written in place copied back, zeroed outputs zeroed. An
        input that a config writes stays written (the check of what the timing left sees it),
        and an output is not poisoned again (what no launch wrote still holds the poison)."""
        for name in self.in_place:
            restore(args[name], pristine[name])
        for name in self.zeroed:
            args[name].zero_()

    def _launch(self, pristine: Args, config: Config, into: Args | None = None,
                second: bool = False) -> Args:
        return self._run(self.prepare(pristine, into, second), config)

    def _run(self, args: Args, config: Config) -> Args:
        self.task.run(args, config)
        sync()
        return args

    def _expected(self, pristine: Args) -> Expected:
        if self.task.reference is not None:
            args = copy_tensors(pristine)
            untouched = margins(args)  # as every launch finds it
            expected = reference_outputs(self.task, args, self.zeroed)
            return Expected(tensors={n: t for n, t in expected.items()
                                     if n not in self.not_compared}, margins=untouched,
                            drawn=pristine)
        assert self.baseline is not None
        settling = not self._expected_cache  # what each tensor is, settled on draw 0 only
        try:
            args = self.prepare(pristine)
            untouched = margins(args)
            first = self._run(args, self.baseline)
            second = self._launch(pristine, self.baseline, second=True)
            read = [n for n in self.poisoned if settling
                    and bool(follows_poison(first[n], second[n]).all())
                    and self._reads_old_contents(pristine, n)]
        except Exception as e:
            raise BaselineError(f"the baseline config {self.baseline.text()} raised "
                                f"{type(e).__name__}: {e}") from e
        if read:  # outputs it adds into (in a helper the source reading did not follow)
            self.poisoned = tuple(n for n in self.poisoned if n not in read)
            self.in_place = (*self.in_place, *read)
            return self._expected(pristine)
        if settling:
            self.in_place += tuple(self._written_inputs(pristine, first))
        tensors, written = {}, {}
        for name, t in tensors_of(first).items():
            if name in self.task.scratch:
                continue
            mask = self._written_mask(name, t, second[name])
            if name in self.not_compared:
                continue
            if mask is not None:
                written[name] = mask
            tensors[name] = t
        return Expected(tensors=tensors, written=written,
                        margins=self._left_alone(untouched, first), drawn=pristine)

    def _left_alone(self, untouched: dict[tuple[str, ...], torch.Tensor], launched: Args
                    ) -> dict[tuple[str, ...], torch.Tensor]:
        """The memory outside the tensors (`copies.margins`) that the baseline's launch left
        as it was: what no config may write. Where the baseline writes outside a tensor too,
        that memory is not compared (`not_compared`)."""
        kept = {}
        for names, after in margins(launched).items():
            if written_outside(names, after, untouched[names]) is None:
                kept[names] = untouched[names]
            else:
                self.not_compared[f"memory outside {names[0]}"] = "the baseline config " \
                    "writes there too"
        return kept

    def _written_inputs(self, pristine: Args, launched: Args) -> list[str]:
        """Tensors that are neither outputs nor known to be written in place, which the
        baseline's launch wrote all the same (in a helper the source reading did not follow):
        restored before timing launches too, so that each is judged on one launch's writes."""
        known = {*self.poisoned, *self.zeroed, *self.in_place}
        candidates = [(n, t, pristine[n]) for n, t in tensors_of(launched).items()
                      if n not in known]
        return _differing(candidates)

    def _reads_old_contents(self, pristine: Args, name: str) -> bool:
        """Whether the baseline, which left output `name` wholly holding either poison, writes
        it once it is given the drawn contents instead: it reads what it writes there (`y +=`
        in a helper), so the output is restored, not poisoned; else it is unwritten here."""
        poisoned = self.poisoned
        self.poisoned = tuple(n for n in poisoned if n != name)
        try:
            args = self._launch(pristine, self.baseline)  # type: ignore[arg-type]
        finally:
            self.poisoned = poisoned
        return bool(bits_differ(args[name], pristine[name]))

    def _written_mask(self, name: str, first: torch.Tensor, second: torch.Tensor
                      ) -> torch.Tensor | None:
        """The elements of `name` that both baseline launches wrote (None: all; none for an
        output it leaves wholly unwritten); records in `not_compared` a tensor written
        differently by the two."""
        mask = None
        if name in self.poisoned:
            unwritten = follows_poison(first, second)
            if bool(unwritten.all()):  # no output of this call, unless a config writes it
                return ~unwritten  # (`baseline.coverage_vote`)
            mask = ~unwritten if bool(unwritten.any()) else None
        got = first if mask is None else torch.where(mask, first, second)
        # Row-scaled: an output whose two launches differ by the order of atomic additions
        # (elements near cancellation) is no output of unspecified contents: it is compared
        if self._compare(name, got, second, row_scaled=self.task.reference is None) is not None:
            self.not_compared[name] = ("unspecified contents: two launches of the baseline on "
                                       "the same input differ")
        return mask

    def inputs(self, i: int) -> Args:
        """The pristine arguments of draw `i` (made once)."""
        if i not in self._inputs_cache:
            with trace.span("inputs", draw=i):
                self._inputs_cache[i] = self._make(i)
        return self._inputs_cache[i]

    def draw(self, i: int) -> tuple[Args, Expected]:
        """Draw `i`'s pristine arguments and the expected state of every tensor after a run."""
        if i not in self._expected_cache:
            pristine = self.inputs(i)
            with trace.span("expected", draw=i):
                self._expected_cache[i] = self._expected(pristine)
        return self.inputs(i), self._expected_cache[i]

    def _fresh_draw(self, i: int) -> tuple[Args, Expected]:
        """An uncached draw, for checks that must not reuse the quick checks' inputs."""
        pristine = self._make(i)
        return pristine, self._expected(pristine)

    def _stress_draws(self, n: int) -> list[tuple[Args, Expected]]:
        """`n` fresh draws for a stress check, the earlier checks' first: every config of a
        tuning is stressed on the same draws (never the quick checks'), made once while they
        fit in `_stress_room` (an fla tuning that stressed five configs spent a third of
        its checking making twelve draws for each)."""
        draws = self._stress_kept[:n]
        if len(draws) < n and self.ahead_failure is not None:
            raise self.ahead_failure  # the next draw, as it failed when made ahead
        while len(draws) < n:
            draws.append(self._fresh_draw(self._fresh))
            self._fresh += 1
        if len(draws) > len(self._stress_kept) and _nbytes(draws) <= self._stress_room:
            self._stress_kept = list(draws)
        return draws

    def stress_draws_ahead(self, n: int, due: Callable[[], bool]) -> int:
        """Make the first `n` stress draws now, as `_stress_draws` would make and keep them,
        one at a time until `due()` says that other work waits, they no longer fit
        `_stress_room`, or the device has less than a quarter of its memory free; the number
        kept. For a run worker waiting for its first compile: the stress check of a tuning's
        winner then finds its draws made (12 draws of an 8192^2 softmax took 0.03 s of a 1.3 s
        tuning). A draw whose inputs, reference or baseline fail is not made again: a stress
        check that needs it raises that failure (`_stress_draws`), one that needs fewer draws
        never sees it."""
        while (len(self._stress_kept) < n and self.ahead_failure is None and not due()
               and self._room_to_spare()):
            try:
                draw = self._fresh_draw(self._fresh)
            except BaselineError as e:
                if "out of memory" not in str(e).lower():  # room now may be room later
                    self.ahead_failure = e
                break
            if _nbytes([*self._stress_kept, draw]) > self._stress_room:
                break
            self._stress_kept.append(draw)
            self._fresh += 1
        return len(self._stress_kept)

    @cached_property
    def _stress_room(self) -> int:
        """The memory a tuning's kept stress draws may take: KEPT_STRESS_BYTES, or on a GPU a
        sixteenth of its memory where that is more (12 draws of an 8192^2 float16 softmax,
        inputs and expected outputs, take 3 GB)."""
        if self.kind != "gpu":
            return KEPT_STRESS_BYTES
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        return max(KEPT_STRESS_BYTES, total // 16)

    def _room_to_spare(self) -> bool:
        """Whether the device has at least a quarter of its memory free (always, off a GPU):
        draws made ahead must leave the timings room."""
        if self.kind != "gpu":
            return True
        free, total = torch.cuda.mem_get_info()
        return free >= total // 4

    def problem_key(self) -> str:
        return self.task.problem_key(self.inputs(0))

    def arg_specs(self) -> dict[str, Any] | None:
        """Draw 0's arguments as Triton specialises a launch on them, for compile workers (so
        that they make no inputs of their own): each tensor's dtype, the other values as they
        are. None where that is not the whole story: a tensor that is not 16-byte aligned (its
        launch specialises otherwise), a value that cannot be sent to another process as a
        worker sends it (a tensor descriptor over the caller's GPU tensor, which this process
        received from the caller's: torch refuses to pass such a tensor on, and the worker
        died sending its answer)."""
        from multiprocessing.reduction import ForkingPickler

        from .precompile import TensorSpec

        try:
            specs = {name: TensorSpec.of(value) if isinstance(value, torch.Tensor) else value
                     for name, value in self.inputs(0).items()}
            ForkingPickler.dumps(specs)
        except Exception:  # noqa: BLE001 - a misaligned tensor (PrecompileError), or whatever
            return None  # pickling an unknown value raises
        return specs

    def _compare(self, name: str, got: torch.Tensor, want: torch.Tensor,
                 slack: torch.Tensor | None = None, row_scaled: bool = False
                 ) -> Mismatch | None:
        """`compare` with the task's tolerances, element by element, with `slack` on top
        where given (`_slack`). A zeroed buffer of partial sums whose layout depends on the
        config is compared by its sums, row-scaled against a baseline (see `partials`)."""
        if name in self.zeroed:
            return compare_partials(name, got, want, self.task.tolerances,
                                    row_scaled=self.task.reference is None,
                                    working=self.working)
        if row_scaled:
            return compare(name, got, want, self.task.tolerances, row_scaled=True,
                           working=self.working)
        return compare(name, got, want, self.task.tolerances, working=self.working,
                       bound=self._bound(name, got, want, slack), slack=slack,
                       perturbed=self._perturbation if slack is not None else 0.0)

    def _bound(self, name: str, got: torch.Tensor, want: torch.Tensor,
               slack: torch.Tensor | None = None) -> Bound | None:
        """The kept `check.Bound` of `want` (with `slack`, if given) where it is draw 0's
        expected `name` (what every timing's output is compared with) and a launch writes
        `name`, while the kept bounds fit KEPT_BOUND_BYTES."""
        zero = self._expected_cache.get(0)
        if (name not in self._rewritten or zero is None or zero.tensors.get(name) is not want
                or got.device != want.device):
            return None
        key = (name, got.dtype, slack is not None)
        if key not in self._bounds:
            size = Bound.nbytes(want, got.dtype)
            if size is None or self._bound_bytes + size > KEPT_BOUND_BYTES:
                self._bounds[key] = None
            else:
                self._bounds[key] = self.bound_for(want, got.dtype, slack)
                self._bound_bytes += size
        return self._bounds[key]

    def bound_for(self, want: torch.Tensor, dtype: torch.dtype,
                  slack: torch.Tensor | None = None) -> Bound:
        """A Bound of `want` for outputs of `dtype`, with this task's tolerances (and `slack`),
        kept for many compares (`narrow`)."""
        rtol, atol = judged_tolerance(want, dtype, self.task.tolerances, self.working)
        return Bound(want, dtype, rtol, atol, row_scaled=False, narrow=True, slack=slack)

    @property
    def draws_from(self) -> Any:
        """What the draws are made by: the program's own data (the drop-in's `CallerData`,
        or what stands in for it), else the task's `make_inputs`."""
        return self._inputs or self.task.make_inputs

    @cached_property
    def working(self) -> torch.dtype | None:
        """The kernel's working precision: the narrowest float dtype among draw 0's tensors."""
        return working_dtype(self.inputs(0).values())

    def mismatch(self, args: Args, expected: Expected) -> Mismatch | None:
        """The first compared tensor that differs from its expected state, else the first
        output written where the baseline leaves it unwritten, else the first storage written
        outside its tensors, or None."""
        return self._first_mismatch(self._compared(args, expected), expected) or next(
            (bad for name, written in expected.written.items() if name not in self.not_compared
             and (bad := written_beyond(name, args[name], written)) is not None), None) \
            or self._outside(args, expected)

    def _outside(self, args: Args, expected: Expected) -> Mismatch | None:
        """The first storage of `args` whose memory outside its tensors a launch wrote."""
        return next((bad for names, got in margins(args).items() if names in expected.margins
                     and (bad := written_outside(names, got, expected.margins[names]))
                     is not None), None)

    def _first_mismatch(self, compared: dict[str, torch.Tensor], expected: Expected
                        ) -> Mismatch | None:
        """The first compared tensor that differs from its expected state; a float one that
        differs by finite amounts only is compared again allowing its `_slack`."""
        for name, got in compared.items():
            want = expected.tensors[name]
            slack = expected._slack.get(name) if expected._slack else None  # measured once
            bad = self._compare(name, got, want, slack)
            if (bad is not None and slack is None and expected._slack is None
                    and name not in self.zeroed
                    and bad.rtol > 0 and not bad.unwritten and bad.max_abs_error is not None):
                slack = self._slack(expected).get(name)
                if slack is not None:
                    bad = self._compare(name, got, want, slack)
            if bad is not None:
                return bad
        return None

    @cached_property
    def _perturbation(self) -> float:
        """The relative input perturbation a `_slack` stands for (`check.perturbation`)."""
        return perturbation(self.inputs(0).values())

    def _slack(self, expected: Expected) -> dict[str, torch.Tensor]:
        """Per compared float tensor, how far the expected state moves when the float inputs
        of the draw it was made from move by `_perturbation` (relative; `check.sensitivity`):
        measured once per draw, at its first failed comparison, by one more launch of the
        baseline (or call of the reference) on inputs moved by `check.perturb`."""
        if expected._slack is not None:
            return expected._slack
        reference = self.task.reference is not None
        args = copy_tensors(expected.drawn) if reference else self.prepare(expected.drawn)
        scale = perturb([t for n, t in tensors_of(args).items() if n not in self.poisoned
                         and n not in self.zeroed and n not in self.task.scratch],
                        self._perturbation, self.seed)
        try:
            state = reference_outputs(self.task, args, self.zeroed) if reference \
                else self._run(args, self.baseline)  # type: ignore[arg-type]
        except Exception:  # nothing measured: the comparison stands without a slack
            expected._slack = {}
            return expected._slack
        expected._slack = {n: sensitivity(expected.tensors[n], t).mul_(scale)
                           for n, t in expected.compared(state).items()
                           if t.dtype.is_floating_point and n not in self.not_compared}
        return expected._slack

    def _vote_of(self, bad: Mismatch, args: Args) -> str | None:
        """The vote of a wrong output, unless it left elements unwritten that the baseline
        wrote: such an output is wrong whatever the baseline is, and two configs that skip the
        same tail agree on nothing that speaks against it; nor one that only wrote wider than
        the baseline (its dispute is over what is written: `baseline.coverage_vote`), nor one
        that wrote outside its tensors."""
        return None if bad.unwritten or bad.beyond or bad.outside else self.vote(args)

    def vote(self, args: Args) -> str | None:
        """Without a reference: which group of agreeing wrong outputs (on draw 0) this one
        joins, so that the tuner can see a baseline that the other configs outvote."""
        if self.task.reference is not None:
            return None
        outputs = {n: t.clone() for n, t in self._compared(args, self.draw(0)[1]).items()}
        for gid, kept in self._groups:
            if all(self._compare(n, outputs[n], kept[n]) is None
                   for n in outputs):
                return gid
        if len(self._groups) >= 8:  # bounded memory; a ninth distinct output votes alone
            return None
        gid = f"{os.getpid()}-{len(self._groups)}"
        self._groups.append((gid, outputs))
        return gid

    def _compared(self, args: Args, expected: Expected) -> dict[str, torch.Tensor]:
        """Every compared tensor of a launch (unwritten elements as expected; views of `args`
        where nothing is masked): the outputs and what the kernel writes in place, so an
        in-place kernel votes too; not those found unspecified on a later draw."""
        return {n: t for n, t in expected.compared(args).items() if n not in self.not_compared}

    # -- operations ------------------------------------------------------------------------
    def warm(self, config: Config) -> None:
        """Launch once, so that loading the compiled kernel is not counted as checking it."""
        self._launch(self.inputs(0), config)

    def check(self, config: Config, draws: int, first: int = 0) -> CheckResult:
        """The first mismatch over `draws` input draws from `first`, on which draw, and (on
        draw 0 without a reference) the vote of the wrong output. The first draw is launched
        again under the second poison where an element left unwritten could pass under the
        first (`hides_unwritten`): then it fails whatever its right value."""
        start, launches = time.perf_counter(), 0
        for i in range(first, first + draws):
            pristine, expected = self.draw(i) if i < FRESH_DRAWS else self._fresh_draw(i)
            twice = i == first and self.hides_unwritten(pristine, expected)
            for second in (False, True) if twice else (False,):
                args = self._launch(pristine, config, second=second)
                launches += 1
                bad = self.mismatch(args, expected)
                if bad is not None:
                    return CheckResult(bad, i, self._vote_of(bad, args) if i == 0 else None,
                                       time.perf_counter() - start, launches)
        return CheckResult(None, first + draws, None, time.perf_counter() - start, launches)

    def hides_unwritten(self, pristine: Args, expected: Expected) -> bool:
        """Whether an element a launch leaves unwritten could pass for right under the first
        poison: a poisoned output's expected state holds that poison somewhere (a NaN it
        should hold, an element the baseline leaves unwritten), and only a launch under the
        second poison shows it. Elsewhere, an element holding anything but the first poison
        after a launch poisoned with it was written by that launch."""
        return any(bool(holds_poison(want if want.dtype == pristine[n].dtype
                                     else want.to(pristine[n].dtype), False).any())
                   for n, want in expected.tensors.items()
                   if n in self.poisoned and n not in self.not_compared)

    def stress(self, config: Config, settings: StressCheck) -> StressReport:
        """Many launches over fresh draws (`_stress_draws`), each restored, poisoned (each
        round over the draws alternates the two poisons) and compared bit for bit with the
        draw's first launch: the same bits get that launch's verdict, other bits (a race, an
        unwritten element holding the other poison, an atomic's order) a full comparison of
        their own. A round's launches (one per draw, each into its own buffers) are queued
        back to back and their bit comparisons read with one synchronisation: per launch, the
        device's work alone. A draw never launched under the second poison gets one such
        launch at the end where the first could hide an unwritten element
        (`hides_unwritten`). An input the draw's first launch left with its pristine bits is
        neither copied nor compared again (`_kept_after_first`) until a launch on the draw
        goes wrong: what a launch writes there stays, so the launches after it read it, and
        the last comparison sees it (`_kept_changed`)."""
        s = settings.resolved(self.kind)
        assert s.min_launches and s.max_launches and s.draws and s.seconds is not None
        start = time.perf_counter()
        under_second: set[int] = set()  # the draws launched under the second poison
        draws = []
        with trace.span("stress draws", draws=s.draws):
            for pristine, expected in self._stress_draws(s.draws):  # buffers laid out as
                # the draw's, filled by each launch's `prepare`: the first restores them all
                draws.append((pristine, expected, copy_tensors(pristine, unread=tuple(pristine))))
        firsts: list[dict[str, torch.Tensor] | None] = [None] * len(draws)
        launched = [0] * len(draws)  # per draw
        verdicts: list[Mismatch | None] = [None] * len(draws)  # of each draw's first launch
        kept: list[frozenset[str]] = [frozenset()] * len(draws)  # see `prepare`
        launches = wrong = differing = 0
        first_bad: Mismatch | None = None
        first_bad_draw: int | None = None
        while True:
            if launches < s.max_launches and (
                    launches < s.min_launches or time.perf_counter() - start < s.seconds):
                rounds: Sequence[int] = range(min(len(draws), s.max_launches - launches))
                second = bool(launches // len(draws) % 2)
            else:  # the second poison where the first could hide an unwritten element
                rounds = [d for d, (pristine, expected, _) in enumerate(draws)
                          if d not in under_second and self.hides_unwritten(pristine, expected)]
                second = True
                if not rounds:
                    break
            if second:
                under_second.update(rounds)
            for d in rounds:
                pristine, _, work = draws[d]
                first = firsts[d]
                if first is not None and launched[d] == 1:  # its first outputs leave its
                    # buffers before they are written again (a draw launched once needs no copy)
                    firsts[d] = {n: t.clone() for n, t in first.items()}
                self.task.run(self.prepare(pristine, into=work, second=second, keep=kept[d]),
                              config)
                launched[d] += 1
            # By draw: a round of the second poison may launch some draws only (`rounds`)
            outputs = {d: self._compared(draws[d][2], draws[d][1]) for d in rounds}
            changed = dict(zip(rounds, self._changed(
                [{n: t for n, t in outputs[d].items() if n not in kept[d]} for d in rounds],
                [firsts[d] for d in rounds], [draws[d][0] for d in rounds])))
            for d in rounds:
                launches += 1
                if firsts[d] is None:
                    kept[d] = self._kept_after_first(outputs[d], changed[d])
                if firsts[d] is not None and not changed[d]:
                    bad = verdicts[d]  # the bits of the draw's first launch: its verdict
                else:
                    bad = self._first_mismatch(outputs[d], draws[d][1])
                    if firsts[d] is None:
                        firsts[d] = outputs[d]  # views of the draw's buffers, until cloned
                        verdicts[d] = bad
                    else:
                        differing += 1
                        if bad is not None:  # it may have written an input: from now on each
                            kept[d] = frozenset()  # is restored and compared on this draw
                if bad is not None:
                    wrong += 1
                    if first_bad is None:
                        first_bad, first_bad_draw = bad, d
        once = frozenset()  # a draw launched once: its first launch's check saw its kept inputs
        for d, bad in [*self._kept_changed(draws, [k if launched[d] > 1 else once
                                                   for d, k in enumerate(kept)]), *(
                (d, bad) for d, (_, expected, work) in enumerate(draws)
                if (bad := self._outside(work, expected)) is not None)]:  # written since
            wrong += 1
            if first_bad is None:
                first_bad, first_bad_draw = bad, d
        return StressReport(launches=launches, draws=len(draws), wrong=wrong,
                            differing=differing, deterministic=self.deterministic,
                            first_mismatch=first_bad,
                            first_wrong_draw=first_bad_draw,
                            seconds=time.perf_counter() - start,
                            not_compared=dict(self.not_compared))

    def _changed(self, outputs: list[dict[str, torch.Tensor]],
                 firsts: list[dict[str, torch.Tensor] | None],
                 pristines: list[Args]) -> list[set[str]]:
        """Per launch of a round, its compared tensors whose bits differ from the draw's first
        launch; for a draw's first launch, those that differ from the pristine draw (so its
        inputs left as they were are known; what every launch rewrites is not asked). Read
        back with one synchronisation."""
        changed: list[set[str]] = [set() for _ in outputs]
        for d, n in _differing([((d, n), t, (first if first is not None else pristine)[n])
                                for d, (out, first, pristine)
                                in enumerate(zip(outputs, firsts, pristines))
                                for n, t in out.items()
                                if first is not None or n not in self._rewritten]):
            changed[d].add(n)
        return changed

    def _kept_after_first(self, compared: dict[str, torch.Tensor], changed: set[str]
                          ) -> frozenset[str]:
        """The tensors a draw's later launches neither restore nor compare: neither poisoned,
        zeroed nor written in place, and left with their pristine bits by its first launch."""
        return frozenset(n for n in compared if n not in self._rewritten and n not in changed)

    def _kept_changed(self, draws: list[tuple[Args, Expected, Args]],
                      kept: list[frozenset[str]]) -> list[tuple[int, Mismatch]]:
        """Per draw, the first kept input a launch wrote (never restored, it still holds what
        was written), as the mismatch it is; read back with one synchronisation."""
        found: dict[int, Mismatch] = {}
        for d, n in _differing([((d, n), work[n], pristine[n])
                                for d, (pristine, _, work) in enumerate(draws)
                                for n in sorted(kept[d])]):
            bad = None if d in found else self._first_mismatch({n: draws[d][2][n]}, draws[d][1])
            if bad is not None:
                found[d] = bad
        return sorted(found.items())

    @cached_property
    def _rewritten(self) -> frozenset[str]:
        """What every launch restores, poisons or zeroes whatever it held."""
        return frozenset((*self.poisoned, *self.zeroed, *self.in_place))

    def time(self, config: Config, draw: int = 0, full: bool = True, compare: bool = True
             ) -> TimeResult:
        """Median milliseconds per launch on one draw, and (if `compare`) the check of the
        output the timing launches left (free: no extra launch), with the seconds comparing
        took. Not `full`: a short measurement on a GPU (L2 still flushed), to pick contenders."""
        pristine, expected = self.draw(draw)
        args = self.prepare(pristine)
        restore = bool(self.in_place or self.zeroed)
        launched: list[bool] = []

        def launch() -> None:
            if restore:  # part of the call, as in triton.autotune
                self.reset(pristine, args)
            if launched:
                self.task.run(args, config)
                return
            launched.append(True)
            with trace.span("first launch"):  # where loading the compiled kernel shows
                self.task.run(args, config)

        if self.kind == "gpu" and not full:
            import triton.testing

            with trace.span("bench"):
                ms = float(triton.testing.do_bench(launch, warmup=SHORT_WARMUP_MS,
                                                   rep=SHORT_REP_MS, return_mode="median"))
        elif self.kind == "gpu" and self.task.do_bench is not None:
            ms = float(self.task.do_bench(launch, quantiles=(0.5, 0.2, 0.8))[0])
        elif self.kind == "gpu":
            import triton.testing

            with trace.span("bench"):
                ms = float(triton.testing.do_bench(launch, warmup=25, rep=100,
                                                   return_mode="median"))
        else:
            samples = []
            for _ in range(3):
                start = time.perf_counter()
                launch()
                samples.append((time.perf_counter() - start) * 1e3)
            ms = statistics.median(samples)
        sync()
        if not compare:
            return TimeResult(ms, None, None, 0.0, compared=False)
        start = time.perf_counter()
        with trace.span("compare"):
            bad = self.mismatch(args, expected)
        vote = self._vote_of(bad, args) if bad is not None and draw == 0 else None
        return TimeResult(ms, bad, vote, time.perf_counter() - start)

    def compile(self, config: Config, target: Any = None, arg_specs: Any = None) -> None:
        """Compile without running (GPU only, for this GPU and draw 0's arguments: `target`
        and `arg_specs` are not used), so compile errors surface in a compile worker."""
        if self.kind != "gpu" or self.task.launch is not None:
            return
        args = self.inputs(0)
        kernel_kwargs, options = split_config(config)
        meta = {**args, **config.values}
        grid = self.task.grid(meta) if callable(self.task.grid) else self.task.grid
        self.task.kernel.warmup(**args, **kernel_kwargs, **options, grid=grid)


def _differing(pairs: list[tuple[Any, torch.Tensor, torch.Tensor]]) -> list[Any]:
    """The keys of the pairs whose two tensors differ in any bit, read back with one
    synchronisation however many pairs there are."""
    flags = torch.stack([bits_differ(a, b) for _, a, b in pairs]).tolist() if pairs else []
    return [key for (key, _, _), flag in zip(pairs, flags) if flag]


def _nbytes(draws: list[tuple[Args, Expected]]) -> int:
    """The memory the tensors of `draws` take: their inputs and expected states."""
    return sum(t.numel() * t.element_size()
               for pristine, expected in draws
               for t in (*tensors_of(pristine).values(), *expected.tensors.values(),
                         *expected.written.values(), *expected.margins.values()))
