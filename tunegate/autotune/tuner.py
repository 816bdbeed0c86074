"""The tuner: one run, top to bottom, over small parts in their own modules.

It gates the space by the policy, reuses a stored best when it may (reuse.py), else starts the
worker pool (schedule.py), searches (search.py), has the winner stress-checked (winner.py) and
stores every trial and the best (ledger.py). Without a reference the baseline config's output
is expected, and a vote can overrule it (baseline.py). A stored best is reused only under the
same task fingerprint, problem, environment and code-generation variables.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from typing import Any, Callable

from ..errors import UsageError
from ..policy import Environment, KernelTraits, Policy, Region, detect_environment, \
    detect_traits
from ..policy.verdict import match_rule
from ..space.space import Config
from .baseline import allowed_baseline, alternatives, baseline_config, coverage_vote, outvoted
from .evaluator import CheckFailed, Evaluator, Trial
from .facts import with_problem_facts
from .fingerprint import codegen_environment, digest
from .hazards import race_hazards
from . import trace
from .ledger import Ledger
from .pool import WorkerPool
from .results import BaselinesFailed, Budget, TuneError, TuneInterrupted, TuneResult
from .reuse import PROCESS_RECHECKED, Rechecked, check_here, in_process_runner, stored_best
from .schedule import Sizing
from .search import Search
from .store import Best, Store, TrialKey, open_store
from .strategies import whole_first_batch
from .stress import StressCheck
from .task import Task
from .winner import no_winner, stressed_winner, winner
from .worker import BaselineFailed, TaskRef, Worker, WorkerSetupError

__all__ = ["Budget", "TuneError", "TuneResult", "Trial", "Tuner", "baseline_config"]

log = logging.getLogger(__name__)

MAX_BASELINES = 4  # baselines tried before a run without a reference gives up: the usual + 3


class Tuner:
    """Tunes one task for one problem. Construct, then `run()`.

    `stress` sizes the stress check (see `StressCheck`); `retune` ignores a stored best;
    `recheck_reused` re-checks a stored best on a fresh draw before its first reuse by the
    tuners that share `rechecked` (by default every tuner of this process).
    `devices` is how many run workers measure configs side by side: one per GPU (each sees only
    its own), by default every visible GPU or TUNEGATE_DEVICES; under the interpreter N
    simulated devices. `compile_workers` defaults to the CPU cores this process may use, less
    one per run worker.
    `staged_timing` times every candidate briefly and only the contenders (see
    `search.NEAR`) with the full measurement; off, every candidate gets the full one.
    `traits` are the kernel's, with the problem facts of the call being tuned where the caller
    has them (the drop-in); by default they are read from the kernel and the task's inputs.
    `here` is the live object the task is made from (the drop-in's autotuner): should no
    worker process load the task (an import that works only in this process), it is tuned in
    this process instead (`local.LocalWorker`). On a Ctrl-C, what was measured is kept; then
    `on_interrupt="report"` ends the run with the best of it that passes the stress check (a
    command's), "raise" raises KeyboardInterrupt at once (a program's, which stops).
    """

    def __init__(self, task: Task, ref: TaskRef, *, policy: Policy | None = None,
                 env: Environment | None = None, store: Store | None = None,
                 strategy: str = "auto", budget: Budget = Budget(), seed: int = 0,
                 draws: int = 2, timeout: float | None = None, compile_workers: int | None = None,
                 stress: StressCheck = StressCheck(), retune: bool = False,
                 recheck_reused: bool = True, devices: int | None = None,
                 staged_timing: bool = True, rechecked: Rechecked | None = None,
                 traits: KernelTraits | None = None, here: Any = None,
                 on_interrupt: str = "report",
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        _check_options(draws=draws, timeout=timeout, compile_workers=compile_workers,
                       devices=devices, on_interrupt=on_interrupt)
        self.task, self.ref, self.here = task, ref, here
        self.on_interrupt = on_interrupt
        self.strategy_name, self.budget, self.seed, self.draws = strategy, budget, seed, draws
        self.stress, self.retune, self.recheck_reused = stress, retune, recheck_reused
        self.staged_timing = staged_timing
        self.rechecked = rechecked if rechecked is not None else PROCESS_RECHECKED
        self.traits = traits or detect_traits(task.kernel)  # the drop-in's has the call's facts
        self.deterministic = "atomics" not in self.traits.traits  # no atomics: bit for bit
        trace.event("tuner", task=task.name)
        with trace.span("environment"):
            self.env = env or detect_environment(probe_device=True)
        self.store = store or open_store()
        self.ledger = Ledger(self.store, progress or (lambda event: None))
        # The store's keys of this task and environment, computed once.
        self.task_fingerprint = task.fingerprint()
        self.env_key = digest([self.env.fingerprint(), repr(codegen_environment())])
        self.run_id = uuid.uuid4().hex[:12]
        self.reusable = not retune and self.store.has_best(self.task_fingerprint, self.env_key)
        self.sizing = Sizing(task, budget=budget.configs, timeout=timeout,
                             compile_workers=compile_workers, devices=devices)
        # With a reference no baseline is needed: the first run worker loads the task while
        # this process loads the policy and gates the space; a stored best that may be reused
        # is re-checked in this process instead, with no worker at all.
        self._early_pool = self._make_pool(None) if task.reference is not None \
            and not self.reusable else None
        if self._early_pool is not None:
            self._early_pool.launch(first_only=True)
        try:
            with trace.span("policy"):
                self.policy = policy or Policy.load()
                if traits is None:
                    self.traits = with_problem_facts(self.traits, task, self.policy, self.env,
                                                     seed)
                self.region: Region = self.policy.gate(task.space, self.env, self.traits)
        except BaseException:
            if self._early_pool is not None:
                self._early_pool.close()
            raise
        self.policy_fingerprint = self.policy.fingerprint()
        baseline, baseline_note = (None, None) if task.reference is not None else \
            allowed_baseline(self.region, task.configs)
        if baseline_note is not None:
            self.ledger.notes.append(baseline_note)
        self.baseline: Config | None = baseline
        self._failed_baselines: list[Config] = []  # that could not run here, or were overruled
        self._replaced = False  # a baseline out-written was replaced (once at most)

    @property
    def compared_with(self) -> str:
        """What the outputs are compared with, as the result and its notes say it."""
        if self.baseline is None:
            return "the reference function"
        return f"the baseline config {self.baseline.text()}, not ground truth"

    @property
    def trials(self) -> list[Trial]:
        """The trials of the run so far."""
        return self.ledger.trials

    @property
    def notes(self) -> list[str]:
        return self.ledger.notes

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> TuneResult:
        """Tune; raises TuneError (with the partial result) when no correct config is found."""
        with trace.span("run", task=self.task.name):
            return self._run()

    def _run(self) -> TuneResult:
        start = time.perf_counter()
        if self.task.reference is None and self.baseline is None:  # nothing allowed to compare with
            raise TuneError(no_winner(self.ledger, self.task, self.region, self.budget,
                                      self._removals()))
        turned_down = False  # the stored best was re-checked here and may not be reused
        # Against a baseline, a config found wrong (a stored best's re-check too) is stored as
        # not judged until the vote on the baseline (`Ledger.settle`, `unjudge`)
        self.ledger.provisional = self.baseline is not None
        if self._early_pool is None and self.reusable:
            runner = self._runner_here()
            if runner is not None:
                self._open(runner.problem_key(), runner.kind)
                stored = self._stored_best(lambda c, draw: check_here(runner, c, draw))
                if stored is not None:
                    return self._reused(start, [], stored)
                turned_down = True
        search_start = start
        while True:
            try:
                return self._run_with_pool(start, turned_down, search_start)
            except _BaselineReplaced:  # the search runs again, against the new baseline, with
                turned_down, search_start = True, time.perf_counter()  # a budget of its own

    def _run_with_pool(self, start: float, turned_down: bool, search_start: float
                       ) -> TuneResult:
        """Start the workers, reuse the stored best if it may be (unless `turned_down`
        already), else search (its seconds' budget counted from `search_start`)."""
        with self.ledger.phase("startup"):
            pool = self._start(first_only=not turned_down)
        evaluators = [self._evaluator(pool.run)]
        try:
            self._open(pool.run.problem_key or "", pool.run.kind or "interpreter")
            if self.baseline is not None:
                self.ledger.note(f"no reference: results are compared with {self.compared_with}")
            try:
                if not turned_down:
                    stored = self._stored_best(
                        lambda c, draw: evaluators[0].quick(c, 1, first=draw))
                    if stored is not None:
                        return self._reused(start, evaluators, stored)
                return self._search(pool, evaluators, start, search_start)
            except CheckFailed as e:
                raise TuneError(str(e), self._result(start, evaluators)) from None
        finally:
            pool.close()

    def _search(self, pool: WorkerPool, evaluators: list[Evaluator], start: float,
                search_start: float) -> TuneResult:
        """Search with every worker, vote on the baseline, pick, store and return the winner."""
        with self.ledger.phase("startup"):
            try:
                pool.start()  # the workers a search needs, if only the first one was started
            except WorkerSetupError as e:
                raise TuneError(f"cannot start tuning {self.task.name}: {e}") from None
        evaluators[1:] = [self._evaluator(w) for w in pool.runs[1:]]
        self.ledger.provisional = self.baseline is not None  # until the vote below
        search = Search(self.task, self.region, self.ledger, pool, evaluators,
                        strategy=self.strategy_name, budget=self.budget, seed=self.seed,
                        timeout=self.sizing.timeout, staged=self.staged_timing,
                        start=search_start)
        stopped: WorkerSetupError | None = None
        why_stopped: str | None = None  # why the run ended before its end, if it did
        try:
            with trace.span("search"):
                interrupted = search.run()
            if not interrupted:
                with trace.span("refine"):
                    search.refine()
        except WorkerSetupError as e:
            interrupted, stopped = True, e
        if interrupted and stopped is None and not self.ledger.trials:
            raise KeyboardInterrupt  # Ctrl-C before any config was measured: nothing to report
        if interrupted and stopped is None and self.on_interrupt == "raise":
            raise TuneInterrupted(self._result(start, evaluators, interrupted=True))
        if self.baseline is not None:
            self._vote_on_the_baseline(start, evaluators, interrupted)
        self.ledger.settle()
        try:
            if stopped is not None:  # no worker left to stress-check with
                raise stopped
            with trace.span("winner"):
                best, best_time = winner(self.ledger, evaluators[0], time.perf_counter() - start,
                                         self._race_hazards)
        except (KeyboardInterrupt, WorkerSetupError) as e:
            pool.run.stop()  # a request may be in flight: its answer must never be read
            interrupted, again = True, interrupted
            best, best_time = stressed_winner(self.ledger)
            if isinstance(e, KeyboardInterrupt) and self.on_interrupt == "raise":
                raise TuneInterrupted(self._result(start, evaluators, interrupted=True)) \
                    from None
            why_stopped = f"a worker could not be restarted: {e}" \
                if not isinstance(e, KeyboardInterrupt) else "a second Ctrl-C" if again else \
                "a Ctrl-C during the stress check"
            self.ledger.notes.append(
                f"the run was stopped before its end ({why_stopped}); "
                + ("the fastest config that had passed the stress check is reported"
                   if best is not None else "no config had passed the stress check"))
        if best is None:
            raise TuneError(no_winner(self.ledger, self.task, self.region, self.budget,
                                      self._removals(), stopped=why_stopped),
                            self._result(start, evaluators, interrupted=interrupted))
        self.ledger.save_best(best, best_time, interrupted, self._measurable())
        return self._result(start, evaluators, best=best, best_time_ms=best_time,
                            interrupted=interrupted)

    # -- the parts -------------------------------------------------------------------------
    def _vote_on_the_baseline(self, start: float, evaluators: list[Evaluator],
                              interrupted: bool) -> None:
        """The votes on the baseline (`coverage_vote`, `outvoted`): where it loses, the search
        runs again against the widest writer (`_BaselineReplaced`: once, and not after an
        interruption), or the run stops (TuneError)."""
        assert self.baseline is not None
        disputed = coverage_vote(self.ledger.trials, self.baseline, self.compared_with,
                                 self.region)
        if disputed is not None:
            why, new = disputed
            if new is not None and not self._replaced and not interrupted:
                self.ledger.restart(f"{why}: the search ran again, compared with {new.text()}")
                log.info("%s: %s", self.task.name, self.ledger.notes[-1])
                self._failed_baselines.append(self.baseline)  # never a baseline again
                self.baseline, self._replaced = new, True
                raise _BaselineReplaced
        wrong = disputed[0] if disputed is not None else outvoted(
            self.ledger.trials, self.baseline, self.compared_with)
        if wrong is not None:
            self.ledger.unjudge(wrong)
            raise TuneError(f"{wrong}; give the task a reference function (`reference=` of the "
                            "drop-in autotune, or a Task's `reference`)",
                            self._result(start, evaluators))

    def _measurable(self) -> int:
        """How many configs the run could measure: its budget, or the fewer its list or region
        holds (a 2-config list interrupted after one is 1 of 2, not 1 of 64)."""
        held = (sum(map(self.region.contains, self.task.configs))
                if self.task.configs is not None else self.region.upper_bound())
        return min(self.budget.configs, held)

    def _race_hazards(self, config: Config) -> tuple[str, ...]:
        """`race_hazards` of `config`; a drop-in's launch (`here`) runs only its kernel."""
        return race_hazards(self.region, config,
                            launch_unread=self.task.launch is not None and self.here is None)

    def _runner_here(self) -> Any:
        """A runner in this process for the re-check of a stored best; None if it cannot be
        made here (an isolated worker decides)."""
        with self.ledger.phase("startup"):
            return in_process_runner(self.task, self.ref, seed=self.seed,
                                     baseline=self.baseline, deterministic=self.deterministic)

    def _open(self, problem: str, timing: str) -> None:
        """The run's store key, made once the problem is known (by the re-check in this
        process, or by the first run worker)."""
        if self.ledger.key is not None and self.ledger.key.problem == problem:
            self.ledger.open(self.ledger.key, timing)
            return
        self.ledger.open(TrialKey(
            run=self.run_id, task=self.task_fingerprint, kernel=self.task.kernel_hash(),
            kernel_name=self.task.name, problem=problem, policy=self.policy_fingerprint,
            env=self.env_key), timing)

    def _stored_best(self, recheck: Callable[[Config, int], Trial]) -> Best | None:
        return stored_best(self.ledger, self.region, recheck, retune=self.retune,
                           recheck_reused=self.recheck_reused, rechecked=self.rechecked)

    def _make_pool(self, baseline: Config | None) -> WorkerPool:
        if self.sizing.note:
            self.ledger.note(self.sizing.note)
        return self.sizing.pool(self.ref, seed=self.seed, baseline=baseline,
                                deterministic=self.deterministic)

    def _start(self, first_only: bool) -> WorkerPool:
        """The pool, started: only the first run worker when a stored best may be reused
        (its re-check needs no more), every worker at once otherwise. A baseline config that
        cannot run here (out of resources on this GPU, say) gives way to the next one."""
        raised = True  # every baseline that failed raised (none crashed its worker)
        while True:
            try:
                return self._start_with(first_only)
            except BaselineFailed as e:
                raised &= e.raised
                nxt = self._next_baseline()
                if nxt is None:
                    raise BaselinesFailed(f"cannot check {self.task.name}, so nothing was "
                                          f"tuned: {e}", raised) from None
                self.ledger.notes.append(
                    f"the baseline config could not run here: {str(e).splitlines()[0][:300]}; "
                    f"results are compared with {nxt.text()} instead")
                self.baseline = nxt
            except WorkerSetupError as e:
                if self.here is None or self.ref.local is not None:
                    raise TuneError(f"cannot start tuning {self.task.name}: {e}") from None
                self.ledger.notes.append(
                    f"no worker process could load {self.task.name} "
                    f"({str(e).splitlines()[0][:300]}); it is tuned in this process instead")
                log.info("%s: %s", self.task.name, self.ledger.notes[-1])
                self.ref = self.ref.here(self.here)

    def _next_baseline(self) -> Config | None:
        """After the baseline failed to run: the next alternative, up to MAX_BASELINES."""
        if self.baseline is None:  # a reference failed: nothing stands in for it
            return None
        self._failed_baselines.append(self.baseline)
        if len(self._failed_baselines) >= MAX_BASELINES:
            return None
        return next((v.config for v in alternatives(self.region, self.task.configs)
                     if v.config not in self._failed_baselines), None)

    def _start_with(self, first_only: bool) -> WorkerPool:
        pool, self._early_pool = self._early_pool or self._make_pool(self.baseline), None
        try:
            if first_only and self.reusable:
                pool.start_first()
            else:
                pool.launch()
                self._compile_ahead(pool)
                pool.start()
        except WorkerSetupError:
            raise  # the pool closed itself (WorkerPool._wait)
        except BaseException:
            pool.close()
            raise
        return pool

    def _compile_ahead(self, pool: WorkerPool) -> None:
        """In a process that already uses its GPU, where the compile workers have the call's
        argument dtypes (a program through the drop-in): the configs the search will compile
        first (a list it takes whole), sent to the compile workers before the run worker is
        ready, which first compiles and launches the baseline config for the expected outputs
        (on a large kernel, seconds that the other configs' compiles now overlap). Other
        compile workers sent ahead of the run worker's draw 0 make one of their own: on the
        CPU where `make_inputs` needs real data, which made an 8192^2 softmax's tuning 1.5x
        slower (H100, 4a6da42)."""
        from .device import device_facts, gpu_in_use  # (torch, which this module does not need)

        if not pool.compilers or not pool.compilers_have_the_call or not gpu_in_use():
            return
        configs = whole_first_batch(self.strategy_name, self.region, self.task.configs,
                                    budget=self.budget.configs)
        facts = device_facts() if configs else None
        if configs and facts is not None:
            pool.compile_ahead(configs, self.sizing.timeout, facts[0])

    def _evaluator(self, worker: Worker) -> Evaluator:
        return Evaluator(worker, draws=self.draws, stress=self.stress,
                         timeout=self.sizing.timeout)

    def _removals(self) -> dict[str, int]:
        if self.task.configs is None:
            return {r.rule: r.count for r in self.region.removals()}
        binding = self.region.binding
        return {r.id: sum(1 for c in self.task.configs
                          if match_rule(r, c, self.task.space, binding=binding))
                for r in self.region.disabling}

    def _reused(self, start: float, evaluators: list[Evaluator], stored: Best) -> TuneResult:
        return self._result(start, evaluators, best=stored.config, best_time_ms=stored.time_ms,
                            reused=True)

    def _result(self, start: float, evaluators: list[Evaluator], **fields: Any) -> TuneResult:
        k, phases = self.ledger.keys, self.ledger.phases
        return TuneResult(
            task=self.task.name, problem=k.problem, timing=self.ledger.timing,
            removals=self._removals(), policy=k.policy, env=k.env, task_fingerprint=k.task,
            space_size=len(self.task.configs) if self.task.configs is not None
            else self.task.space.cardinality(),
            compared_with=self.compared_with, notes=self.ledger.notes,
            wall_seconds=time.perf_counter() - start,
            check_seconds=sum(e.seconds for e in evaluators) + phases["check"],
            startup_seconds=phases["startup"], compile_seconds=phases["compile"],
            timing_seconds=phases["timing"],
            **{"best": None, "best_time_ms": None, "trials": self.ledger.trials, **fields})


class _BaselineReplaced(Exception):
    """The search starts over against a new baseline (`Tuner._vote_on_the_baseline`)."""


def _check_options(*, draws: int, timeout: float | None, compile_workers: int | None,
                   devices: int | None, on_interrupt: str) -> None:
    """Refuse option values the CLI would refuse, before any worker starts: a NaN or infinite
    timeout reached the worker's wait and left its replies out of step for the next tuning."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise UsageError(f"draws must be a whole number of input draws, 1 or more, not {draws!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise UsageError(f"timeout must be a positive, finite number of seconds (or None for "
                         f"the default), not {timeout!r}")
    for name, value, low in (("compile_workers", compile_workers, 0), ("devices", devices, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < low):
            raise UsageError(f"{name} must be a whole number, {low} or more (or None for the "
                             f"default), not {value!r}")
    if on_interrupt not in ("report", "raise"):
        raise UsageError(f"on_interrupt must be 'report' or 'raise', not {on_interrupt!r}")
