"""The tuner: the search loop over an evaluator (evaluator.py) over a worker pool (pool.py).

It samples the policy's region, has each config checked and timed, stress-checks the fastest
before returning or storing it, and stores every rejection with its reason. A stored best is
reused only under the same task fingerprint, problem, environment and code-generation variables,
and is re-checked on a fresh draw once per process before its first reuse.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
import uuid
from collections import Counter
from typing import Any, Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from ..policy import Environment, KernelTraits, Policy, Region, detect_environment, detect_traits
from ..policy.binding import Binding, Driver, bind
from ..policy.call import CALL_FACTS
from ..policy.predicate import MISSING
from ..policy.verdict import match_rule, rule_state
from ..space.domains import PerLoop
from ..space.features import uses
from ..space.space import Config, InvalidConfig, Space
from .evaluator import CheckFailed, Evaluator, Trial, failure_reason
from .fingerprint import codegen_environment, digest
from .pool import WorkerPool, cpu_cores, device_count
from .store import Best, Store, StoreError, TrialKey, open_store
from .strategies import make_strategy
from .stress import StressCheck
from .task import Task
from .worker import BaselineFailed, TaskRef, WorkerSetupError
from ..errors import TunegateError
from ..reasons import Reason

__all__ = ["Budget", "TuneError", "TuneResult", "Trial", "Tuner", "baseline_config"]

log = logging.getLogger(__name__)

CONTENDERS = 1.3  # short timings within this factor of the fastest get the full timing

# Stored bests re-checked on a fresh draw in this process: (task, problem, env, config).
_RECHECKED: set[tuple[str, str, str, str]] = set()


class TuneError(RuntimeError, TunegateError):
    """Tuning cannot start or produced no correct config; the message says why, and `result`
    holds what was measured until then (None if nothing could start)."""

    def __init__(self, message: str, result: "TuneResult | None" = None) -> None:
        super().__init__(message)
        self.result = None if result is None else result.model_copy(update={"error": message})


class Budget(BaseModel):
    """How much tuning may cost: configs measured, and wall-clock seconds."""

    model_config = ConfigDict(frozen=True)

    configs: int = Field(default=64, ge=1)
    seconds: float | None = Field(default=None, gt=0)


class TuneResult(BaseModel):
    """What a run found, and how every other config lost."""

    task: str
    problem: str
    timing: str
    best: dict[str, Any] | None
    best_time_ms: float | None
    trials: list[Trial]
    removals: dict[str, int]
    space_size: int
    reused: bool = False
    interrupted: bool = False
    wall_seconds: float = 0.0
    startup_seconds: float = 0.0  # starting isolated workers (or the in-process re-check's set-up)
    compile_seconds: float = 0.0  # compiling ahead in the compile workers (their wall time)
    timing_seconds: float = 0.0  # the short and full timing stages (their output checks included)
    check_seconds: float = 0.0
    policy: str = ""
    env: str = ""
    task_fingerprint: str = ""
    compared_with: str = "the reference function"
    notes: list[str] = []
    error: str | None = None

    def count(self, status: str) -> int:
        return sum(1 for t in self.trials if t.status == status)


def baseline_config(space: Space, binding: Binding | None = None) -> Config:
    """The space default with every feature off: the most conservative config.

    `binding` (the region's) also switches off features the kernel's source binds to a
    parameter that declares none, such as `num_stages=INNER_STAGES` in a `tl.range`.
    """
    binding = binding or bind(space)
    values = {n: p.domain.default() for n, p in space.parameters.items()}
    for name, param in space.parameters.items():
        drivers = [d for d in binding.drivers if name in d.parameters]
        if isinstance(param.domain, PerLoop):
            features = tuple({*param.features, *(d.feature for d in drivers)})
            values[name] = tuple(_off(v, param.domain.element, features) for v in values[name])
            continue
        candidates = [values[name], *param.domain.values()]
        values[name] = next((v for v in candidates if not _drives_on(drivers, values, name, v)),
                            values[name])
    return space.validate_config(values)


def _drives_on(drivers: list[Driver], values: dict[str, Any], name: str, value: Any) -> bool:
    """Whether any driver turns its feature on when parameter `name` takes `value`."""
    trial = {**values, name: value}
    return any(bool(uses(d.feature, d.value(trial))) for d in drivers
               if d.value(trial) is not MISSING)


def _off(value: Any, domain: Any, features: tuple[str, ...]) -> Any:
    """`value` if it uses none of `features`, else the first value of `domain` that does not."""
    if not any(uses(f, value) for f in features):
        return value
    return next((x for x in domain.values() if not any(uses(f, x) for f in features)), value)


def _reads_call(policy: Policy, env: Environment, traits: KernelTraits, space: Space) -> bool:
    """Whether a rule that may apply to this kernel reads a problem fact in its match."""
    used = bind(space, traits).features()
    return any(r.match is not None and rule_state(r, env, traits).state != "inactive"
               and (not r.features or set(r.features) & used)
               and any(n in CALL_FACTS for n, _ in r.match.names())
               for r in policy.effective(env))


def _host_draw(task: Task, seed: int) -> dict[str, Any]:
    """Draw 0 of the task's inputs made on the host, for its problem facts; {} if that fails
    (the facts are then unknown, and the rules reading them are assumed to match)."""
    try:
        args = task.make_inputs(seed, "cpu")
    except Exception:  # noqa: BLE001 - the user's code; the worker reports it properly
        return {}
    return args if isinstance(args, dict) else {}


class Tuner:
    """Tunes one task for one problem. Construct, then `run()`.

    `stress` sizes the stress check (see `StressCheck`); `retune` ignores a stored best;
    `recheck_reused` re-checks a stored best on a fresh draw once per process before reuse.
    `devices` is how many run workers measure configs side by side: one per GPU (each sees only
    its own), by default every visible GPU or TUNEGATE_DEVICES; under the interpreter N
    simulated devices. `compile_workers` defaults to the CPU cores this process may use.
    `staged_timing` times every candidate briefly and only the contenders (see `CONTENDERS`)
    with the full measurement; off, every candidate gets the full one. `traits` are the
    kernel's, with the problem facts of the call being tuned where the caller has them (the
    drop-in); by default they are read from the kernel, with no call.
    """

    def __init__(self, task: Task, ref: TaskRef, *, policy: Policy | None = None,
                 env: Environment | None = None, store: Store | None = None,
                 strategy: str = "auto", budget: Budget = Budget(), seed: int = 0,
                 draws: int = 2, timeout: float | None = None, compile_workers: int | None = None,
                 stress: StressCheck = StressCheck(), retune: bool = False,
                 recheck_reused: bool = True, devices: int | None = None,
                 staged_timing: bool = True, traits: KernelTraits | None = None,
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.task, self.ref = task, ref
        self.strategy_name, self.budget, self.seed, self.draws = strategy, budget, seed, draws
        self.timeout, self.compile_workers, self.devices = timeout, compile_workers, devices
        self.staged_timing = staged_timing
        self._refined: set[int] = set()  # trials timed in full after a short timing
        self.stress, self.retune, self.recheck_reused = stress, retune, recheck_reused
        self.progress = progress or (lambda event: None)
        self.trials: list[Trial] = []
        self._rows: list[int] = []  # the store's row of each trial
        self.notes: list[str] = []
        self.traits = traits or detect_traits(task.kernel)  # the drop-in's has the call's facts
        self._phases: Counter[str] = Counter()  # seconds per phase, for TuneResult
        self.env = env or detect_environment(probe_device=True)
        self.store = store or open_store()
        # With a reference no baseline is needed: the first run worker loads the task while
        # this process loads the policy and gates the space; a stored best that may be reused
        # is re-checked in this process instead, with no worker at all.
        self._pool = self._make_pool(None) if task.reference is not None \
            and not self._may_reuse() else None
        if self._pool is not None:
            self._pool.launch(first_only=True)
        try:
            self.policy = policy or Policy.load()
            if traits is None and _reads_call(self.policy, self.env, self.traits, task.space):
                self.traits = self.traits.called_with(_host_draw(task, seed))
            self.region: Region = self.policy.gate(task.space, self.env, self.traits)
        except BaseException:
            if self._pool is not None:
                self._pool.close()
            raise

    # -- helpers ---------------------------------------------------------------------------
    def _removals(self) -> dict[str, int]:
        if self.task.configs is None:
            return {r.rule: r.count for r in self.region.removals()}
        binding = self.region.binding
        return {r.id: sum(1 for c in self.task.configs
                          if match_rule(r, c, self.task.space, binding=binding))
                for r in self.region.disabling}

    def _deterministic(self) -> bool:
        """Whether repeated launches on one input must agree bit for bit: no atomics."""
        return "atomics" not in self.traits.traits

    def _record(self, trial: Trial) -> None:
        self.trials.append(trial)
        try:
            row = self.store.record(
                self._key, Config(values=trial.config), trial.status, time_ms=trial.time_ms,
                timing=self._timing, checked_draws=trial.checked_draws,
                checked_launches=trial.checked_launches, reason=trial.reason)
        except StoreError as e:
            row = 0  # no such row: later updates of it change nothing
            self._store_failed(e)
        self._rows.append(row)
        self.progress({"event": "trial", "n": len(self.trials), "trial": trial})

    def _store_failed(self, error: StoreError) -> None:
        """Note, once, that the store failed: this run's results are then only in its result."""
        note = f"the tuning store failed, so what follows is only in this report: {error}"
        if not any(n.startswith("the tuning store failed") for n in self.notes):
            self.notes.append(note)

    def _result(self, start: float, **fields: Any) -> TuneResult:
        k = self._key
        return TuneResult(
            task=self.task.name, problem=k.problem, timing=self._timing,
            removals=self._removals(), policy=k.policy, env=k.env, task_fingerprint=k.task,
            space_size=len(self.task.configs) if self.task.configs is not None
            else self.task.space.cardinality(),
            compared_with=self._compared_with, notes=self.notes,
            wall_seconds=time.perf_counter() - start,
            check_seconds=sum(e.seconds for e in self._evaluators) + self._phases["check"],
            startup_seconds=self._phases["startup"], compile_seconds=self._phases["compile"],
            timing_seconds=self._phases["timing"],
            **{"best": None, "best_time_ms": None, "trials": self.trials, **fields})

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> TuneResult:
        """Tune; raises TuneError (with the partial result) when no correct config is found."""
        start = time.perf_counter()
        self._evaluator: Evaluator | None = None
        self._evaluators: list[Evaluator] = []
        baseline = None if self.task.reference is not None else baseline_config(
            self.task.space, self.region.binding)
        self._compared_with = "the reference function" if baseline is None else (
            f"the baseline config {baseline.text()}, not ground truth")
        if baseline is not None and not self.region.contains(baseline):
            verdict = self.region.verdict(baseline)
            raise TuneError(f"the baseline config {baseline.text()} is excluded here "
                            f"({', '.join(m.rule for m in verdict.matched)}); give the task a "
                            "reference function")
        checked = False
        if self._pool is None and self._may_reuse():
            reused, checked = self._reuse_in_process(baseline, start)
            if reused is not None:
                return reused  # else, if `checked`, the stored best was turned down: search
        phase = time.perf_counter()
        pool = self._start(baseline, first_only=not checked)
        self._phases["startup"] += time.perf_counter() - phase
        try:
            self._timing = pool.run.kind or "interpreter"
            self._key = self._trial_key(pool.run.problem_key or "")
            self._evaluators = [Evaluator(w, draws=self.draws, stress=self.stress,
                                          timeout=self._timeout) for w in pool.runs]
            self._evaluator = self._evaluators[0]
            if baseline is not None:
                self.notes.append(f"no reference: results are compared with "
                                  f"{self._compared_with}")
            try:
                return self._tune(pool, start, checked)
            except CheckFailed as e:
                raise TuneError(str(e), self._result(start)) from None
        finally:
            pool.close()

    def _trial_key(self, problem: str) -> TrialKey:
        return TrialKey(
            run=uuid.uuid4().hex[:12], task=self.task.fingerprint(),
            kernel=self.task.kernel_hash(), kernel_name=self.task.name, problem=problem,
            policy=self.policy.fingerprint(), env=self._env_key())

    def _env_key(self) -> str:
        """The store's environment key: the facts and the code-generation variables."""
        return digest([self.env.fingerprint(), repr(codegen_environment())])

    def _reuse_in_process(self, baseline: Config | None, start: float
                          ) -> tuple[TuneResult | None, bool]:
        """The stored best, re-checked in this process (no worker): it already passed the whole
        stress check in an isolated worker. (None, True) if it may not be reused (the reasons
        noted); (None, False) if the task cannot run here: an isolated worker decides."""
        from .backend import interpret_without_gpu
        from .runner import Runner

        phase = time.perf_counter()
        try:
            interpret_without_gpu()
            runner = Runner(self.task, seed=self.seed, baseline=baseline, inputs=self.ref.inputs,
                            deterministic=self._deterministic())
            problem = runner.problem_key()
        except Exception as e:  # the isolated worker reports it properly
            log.debug("the in-process re-check could not start (%s); re-checking isolated", e)
            return None, False
        finally:
            self._phases["startup"] += time.perf_counter() - phase
        self._timing = runner.kind
        self._key = self._trial_key(problem)
        stored = self._reuse(lambda config, first: _check_here(runner, config, first))
        if stored is None:
            return None, True
        return self._result(start, best=stored.config.values, best_time_ms=stored.time_ms,
                            reused=True), True

    def _start(self, baseline: Config | None, first_only: bool = True) -> WorkerPool:
        """The pool, started: only the first run worker when a stored best may be reused
        (its re-check needs no more), every worker at once otherwise."""
        pool, self._pool = self._pool or self._make_pool(baseline), None
        try:
            if first_only and self._may_reuse():
                pool.start_first()
            else:
                pool.start()
        except BaselineFailed as e:
            raise TuneError(f"cannot check {self.task.name}, so nothing was tuned: {e}") from None
        except WorkerSetupError as e:
            raise TuneError(f"cannot start tuning {self.task.name}: {e}") from None
        except BaseException:
            pool.close()
            raise
        return pool

    def _make_pool(self, baseline: Config | None) -> WorkerPool:
        """The pool for this task: run workers per device, compile workers per CPU core."""
        from .runner import device_kind

        gpu = device_kind() == "gpu"
        self._timeout = self.timeout or (60.0 if gpu else 300.0)
        compilers = self.compile_workers if self.compile_workers is not None else cpu_cores()
        candidates = len(self.task.configs) if self.task.configs is not None else None
        compilers = min(compilers, self.budget.configs, candidates or compilers)  # no idle ones
        devices = 1 if self.task.reference is None else device_count(gpu, self.devices)
        if self.task.reference is None and device_count(gpu, self.devices) > 1:
            self.notes.append("without a reference, configs are measured on one device: the "
                              "vote on the baseline's output needs every output in one worker")
        return WorkerPool(self.ref, seed=self.seed, baseline_json=baseline.key() if baseline
                          else None, compilers=compilers if gpu and self.task.launch is None
                          else 0, deterministic=self._deterministic(), devices=devices,
                          gpu=gpu, setup_timeout=self._timeout, precompile=True)

    def _may_reuse(self) -> bool:
        """Whether the store holds a best of this task in this environment (for any problem)."""
        if self.retune:
            return False
        return self.store.has_best(self.task.fingerprint(), self._env_key())

    def _tune(self, pool: WorkerPool, start: float, checked: bool = False) -> TuneResult:
        """Reuse the stored best (unless `checked` already turned it down), else search."""
        assert self._evaluator is not None
        evaluator = self._evaluator
        stored = None if checked else self._reuse(
            lambda config, first: evaluator.quick(config, 1, first=first))
        if stored is not None:
            return self._result(start, best=stored.config.values, best_time_ms=stored.time_ms,
                                reused=True)
        phase = time.perf_counter()
        try:
            pool.start()  # the workers a search needs, if only the first one was started
        except WorkerSetupError as e:
            raise TuneError(f"cannot start tuning {self.task.name}: {e}") from None
        finally:
            self._phases["startup"] += time.perf_counter() - phase
        self._evaluators[1:] = [Evaluator(w, draws=self.draws, stress=self.stress,
                                          timeout=self._timeout) for w in pool.runs[1:]]
        stopped: BaseException | None = None
        try:
            interrupted = self._search(pool, start)
            if not interrupted:
                phase = time.perf_counter()
                self._refine()
                self._phases["timing"] += time.perf_counter() - phase
        except WorkerSetupError as e:
            interrupted, stopped = True, e
        self._check_baseline_support(start)
        try:
            if stopped is not None:  # no worker left to stress-check with
                raise stopped
            best, best_time = self._winner()
        except (KeyboardInterrupt, WorkerSetupError) as e:
            pool.run.stop()  # a request may be in flight: its answer must never be read
            interrupted = True
            best, best_time = self._stressed_winner()
            self.notes.append("the run was stopped before its end ("
                              + ("a second Ctrl-C" if isinstance(e, KeyboardInterrupt) else
                                 f"a worker could not be restarted: {e}") + "); "
                              + ("the fastest config that had passed the stress check is "
                                 "reported" if best is not None else
                                 "no config had passed the stress check"))
        if best is None:
            raise TuneError(self._no_winner_message(), self._result(start,
                                                                    interrupted=interrupted))
        self._save(best, best_time, interrupted)
        return self._result(start, best=best.values, best_time_ms=best_time,
                            interrupted=interrupted)

    def _save(self, best: Config, best_time: float | None, interrupted: bool) -> None:
        """Store the run's best; an interrupted run's as partial. The store keeps the faster of
        it and an earlier run's; the notes say when that is not this run's."""
        try:
            stored = self.store.save_best(self._key, best, best_time, self._timing,
                                          partial=interrupted, measured=len(self.trials),
                                          budget=self.budget.configs)
        except StoreError as e:
            self._store_failed(e)
            return
        if stored is None:  # refused: the winner was quarantined meanwhile (another run)
            self.notes.append(f"the store refused {best.text()}: it is quarantined as wrong "
                              "for this task, problem and environment")
            return
        if stored.config != best:
            self.notes.append(f"the store keeps {stored.config.text()}, measured faster "
                              f"({stored.time_ms:.4g} ms) by an earlier run")
        if stored.partial:
            self.notes.append(f"only {len(self.trials)} of up to {self.budget.configs} configs "
                              "were measured: the best is stored as partial, and the next run "
                              "searches again instead of reusing it")

    def _stressed_winner(self) -> tuple[Config | None, float | None]:
        """The fastest config that already passed the whole stress check, if any."""
        passed = [t for t in self.trials if t.status == "ok" and t.stressed]
        if not passed:
            return None, None
        fastest = min(passed, key=lambda t: t.time_ms)  # type: ignore[arg-type,return-value]
        return Config(values=fastest.config), fastest.time_ms

    def _reuse(self, recheck: Callable[[Config, int], Trial]) -> Best | None:
        """The stored best, if it may be reused: same keys, allowed now, and re-checked by
        `recheck(config, first draw)` on one fresh draw."""
        k = self._key
        stored = self.store.best(k.task, k.problem, k.env)
        if stored is None:
            return None
        if not self.region.contains(stored.config):  # first: the store keeps the faster of
            # a stored best and the run's, so an excluded one must go
            rules = ", ".join(m.rule for m in self.region.verdict(stored.config).matched
                              if m.action == "disable")
            self.notes.append(f"stored best {stored.config.text()} is now excluded by {rules}; "
                              "retuned")
            self._forget()
            return None
        if self.retune:
            self.notes.append(f"retune requested: the stored best {stored.config.text()} is "
                              "searched against again")
            return None
        if stored.partial:  # the search continues: configs are measured again, and the store
            # keeps the faster of the two bests
            self.notes.append(f"the stored best {stored.config.text()} comes from an "
                              f"interrupted run ({stored.measured} of {stored.budget} configs "
                              "measured): searched again")
            return None
        if stored.policy != k.policy:
            self.notes.append("the policy changed since this best was stored and may now allow "
                              "faster configs: retune (--retune, Tuner(retune=True)) to search "
                              "them")
        mark = (k.task, k.problem, k.env, stored.config.key())
        if not self.recheck_reused or mark in _RECHECKED:
            return stored
        fresh = 2_000_000 + random.SystemRandom().randrange(1 << 30)
        trial = recheck(stored.config, fresh)
        if trial.status != "ok":
            self._record(trial)
            self.notes.append(f"stored best {stored.config.text()} failed its re-check on a "
                              f"fresh draw ({trial.reason.summary if trial.reason else ''}); "
                              "retuned")
            self._forget()
            return None
        _RECHECKED.add(mark)
        self.notes.append(f"stored best {stored.config.text()} re-checked on a fresh draw")
        return stored

    def _forget(self, config: Config | None = None) -> None:
        """Drop the key's stored best (only if it is `config`, when given): it failed a check."""
        k = self._key
        try:
            self.store.forget_best(k.task, k.problem, k.env, config)
        except StoreError as e:
            self._store_failed(e)

    def _precompile(self, pool: WorkerPool, batch: list[Config]) -> list[Config]:
        """Compile a batch in parallel isolated workers into Triton's cache; returns the configs
        that compiled (or that compile at their first launch, where compiling ahead failed)."""
        failed = set()
        for note in pool.notes:
            self._note(note)
        target, limit = pool.run.device_facts or (None, None)
        if pool.compilers and target is None:
            self._note("the GPU's compile target is unknown (not a CUDA GPU): each config "
                       "compiles at its first launch")
            return batch
        late = []
        phase = time.perf_counter()
        replies = pool.compile_all(batch, self._timeout, target)
        self._phases["compile"] += time.perf_counter() - phase
        for config, reply in replies:
            if reply.status == "error":  # not the kernel's fault: the run worker compiles it
                log.debug("compiling %s ahead failed (%s); it compiles at its first launch",
                          config.text(), reply.error)
                late.append((config, reply))
                continue
            if reply.status != "ok":
                failed.add(config)
                self._record(Trial(config=config.values, status=reply.status,  # type: ignore[arg-type]
                                   reason=failure_reason(reply, "compilation")))
            elif limit and isinstance(reply.value, int) and reply.value > limit:
                failed.add(config)
                self._record(Trial(config=config.values, status="compile_error", reason=Reason(
                    kind="compile", summary=f"needs {reply.value} bytes of shared memory per "
                    f"block; the device allows {limit}",
                    evidence={"shared_bytes": reply.value, "limit": limit})))
        if late:
            config, reply = late[0]
            self._note(f"{len(late)} config(s) could not be compiled ahead and compiled at their "
                       f"first launch instead (e.g. {config.text()}: "
                       f"{(reply.error or '').splitlines()[0][:200]})")
        return [c for c in batch if c not in failed]

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def _search(self, pool: WorkerPool, start: float) -> bool:
        """Measure configs until the budget is spent; True if interrupted (Ctrl-C)."""
        assert self._evaluator is not None
        k = self._key
        quarantined = self.store.quarantined(k.task, k.problem, k.env)
        strategy = make_strategy(self.strategy_name, self.region, random.Random(self.seed),
                                 budget=self.budget.configs, points=self.task.configs,
                                 prior=self._prior())
        self.progress({"event": "start", "budget": self.budget.configs,
                       "strategy": type(strategy).name})
        results: dict[Config, float | None] = {}

        def out_of_time() -> bool:
            return bool(self.budget.seconds and time.perf_counter() - start > self.budget.seconds)

        try:
            while len(results) < self.budget.configs and not out_of_time():
                batch = strategy.next_batch(results)[: self.budget.configs - len(results)]
                if not batch:
                    break
                for config in [c for c in batch if c in quarantined]:
                    batch.remove(config)
                    results[config] = None
                    self._record(Trial(config=config.values, status="wrong",
                                       reason=quarantined[config]))
                phase, compiled = time.perf_counter(), self._phases["compile"]
                for trial in self._measure(self._precompile(pool, batch), out_of_time,
                                           self._first_timing):
                    results[Config(values=trial.config)] = trial.time_ms
                    self._record(trial)
                self._phases["timing"] += (time.perf_counter() - phase
                                           - (self._phases["compile"] - compiled))
                if out_of_time():
                    return False
        except KeyboardInterrupt:
            for w in pool.runs:  # their answers to interrupted requests must not be read later
                w.stop()
            return True
        return False

    def _first_timing(self, evaluator: Evaluator, config: Config) -> Trial:
        experimental = self.region.verdict(config).status == "experimental"
        return evaluator.evaluate(config, experimental,
                                  short=self.staged_timing and self._timing == "gpu")

    def _refine(self) -> None:
        """Successive halving: the full timing for the contenders of the short timings (the
        fastest third, and any within `CONTENDERS`x of the fastest); their rows updated."""
        if not self.staged_timing or self._timing != "gpu":
            return  # the interpreter's timing has one stage: there is nothing to refine
        timed = sorted((i for i, t in enumerate(self.trials) if t.status == "ok"),
                       key=lambda i: self.trials[i].time_ms)  # type: ignore[arg-type,return-value]
        if not timed:
            return
        fastest = self.trials[timed[0]].time_ms or 0.0
        keep = max(1, -(-len(timed) // 3))
        chosen = [i for n, i in enumerate(timed)
                  if n < keep or (self.trials[i].time_ms or 0.0) <= CONTENDERS * fastest]
        by_config = {Config(values=self.trials[i].config): i for i in chosen}

        def retime(evaluator: Evaluator, config: Config) -> Trial:
            return evaluator.retime(self.trials[by_config[config]])

        for trial in self._measure(list(by_config), lambda: False, retime):
            i = by_config[Config(values=trial.config)]
            self.trials[i] = trial
            self._refined.add(i)
            self.store.update(self._rows[i], trial.status, time_ms=trial.time_ms,
                              checked_draws=trial.checked_draws,
                              checked_launches=trial.checked_launches, reason=trial.reason)
            self.progress({"event": "full_timing", "trial": trial})

    def _measure(self, configs: list[Config], out_of_time: Callable[[], bool],
                 work: Callable[[Evaluator, Config], Trial]) -> Iterator[Trial]:
        """`work` on each of `configs`, spread over the run workers (one per device); trials in
        the order of `configs`, each exactly once; none started once out of time."""
        if len(self._evaluators) == 1:
            for config in configs:
                if out_of_time():
                    return
                yield work(self._evaluators[0], config)
            return
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(configs)):
            todo.put(i)
        done: dict[int, Trial] = {}
        finished = threading.Condition()

        def drain(evaluator: Evaluator) -> None:
            try:
                while not out_of_time() and not failed:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        break
                    trial = work(evaluator, configs[i])
                    with finished:
                        done[i] = trial
                        finished.notify()
            except Exception as e:  # CheckFailed: the reference broke; the search must stop
                failed.append(e)
            finally:
                with finished:
                    drained[0] += 1
                    finished.notify()

        drained, failed = [0], []  # type: ignore[var-annotated]
        threads = [threading.Thread(target=drain, args=(e,), daemon=True)
                   for e in self._evaluators]
        for t in threads:
            t.start()
        for i in range(len(configs)):
            with finished:
                while i not in done and drained[0] < len(threads):
                    finished.wait()
            if failed:
                raise failed[0]
            if i in done:  # else never started: out of time
                yield done.pop(i)

    def _prior(self) -> dict[Config, float]:
        """Each config's mean rank (0 fastest, 1 slowest) among the correct timings of this
        kernel at other problem sizes in this environment: what the store already knows."""
        k = self._key
        by_problem: dict[str, list[tuple[float, Config]]] = {}
        for problem, config, ms in self.store.timings_elsewhere(k.kernel, k.env, k.problem):
            if not self._candidate(config):
                continue
            by_problem.setdefault(problem, []).append((ms, config))
        ranks: dict[Config, list[float]] = {}
        for timed in by_problem.values():
            timed.sort(key=lambda t: t[0])
            for n, (_, config) in enumerate(timed):
                ranks.setdefault(config, []).append(n / max(1, len(timed) - 1))
        return {c: sum(r) / len(r) for c, r in ranks.items()}

    def _candidate(self, config: Config) -> bool:
        """Whether this run may measure `config`: in the space, allowed by the region, and in
        the task's config list if it has one (another key's list may have been pruned
        otherwise, so a prior from there can name configs this one lacks)."""
        if self.task.configs is not None:
            return config in self.task.configs and self.region.contains(config)
        try:
            return self.region.contains(config)
        except InvalidConfig:  # another space's config: not a candidate, not an error
            return False

    def _check_baseline_support(self, start: float) -> None:
        """Without a reference: stop if a larger group of configs agree among themselves and
        disagree with the baseline than agree with it."""
        if self.task.reference is not None:
            return
        votes = Counter(t.vote for t in self.trials if t.vote is not None)
        if not votes:
            return
        group, size = votes.most_common(1)[0]
        baseline = baseline_config(self.task.space, self.region.binding).values
        support = sum(1 for t in self.trials if t.status == "ok" and t.config != baseline)
        # A larger agreeing group outvotes the baseline; with no other config agreeing with
        # the baseline, a lone dissenter leaves its output unsupported, but dissenters that
        # disagree among themselves too outvote nothing.
        lone = sum(votes.values()) == 1 and support == 0
        if size > support and (size >= 2 or lone):
            members = [Config(values=t.config).text() for t in self.trials if t.vote == group]
            agree = "configs agree among themselves and disagree" if size >= 2 else \
                "config disagrees"
            raise TuneError(
                f"the baseline config looks wrong: {size} {agree} with "
                f"{self._compared_with}, and only {support} other agree with it "
                f"(e.g. {members[0]}); give the task a reference function (`reference=` of "
                "the drop-in autotune, or a Task's `reference`)", self._result(start))

    def _winner(self) -> tuple[Config | None, float | None]:
        """The fastest timed config that passes the stress check; failures are quarantined."""
        assert self._evaluator is not None
        # Fully timed contenders first: a short timing only decided that the others lost.
        timed = sorted((i for i, t in enumerate(self.trials) if t.status == "ok"),
                       key=lambda i: (i not in self._refined and bool(self._refined),
                                      self.trials[i].time_ms))
        for i in timed:
            trial = self.trials[i]
            config = Config(values=trial.config)
            if not trial.stressed:
                self.progress({"event": "winner_check", "config": config})
                checked = self._evaluator.stress(trial)
                self.trials[i] = checked
                try:
                    self.store.update(self._rows[i], checked.status, time_ms=checked.time_ms,
                                      checked_draws=checked.checked_draws,
                                      checked_launches=checked.checked_launches,
                                      reason=checked.reason)
                except StoreError as e:
                    self._store_failed(e)
                self.progress({"event": "stress", "trial": checked})
                if checked.status != "ok":
                    self._forget(config)  # a stored best of this config must not be reused
                    continue
            return config, trial.time_ms
        return None, None

    def _no_winner_message(self) -> str:
        """Why no config won: the clock, the policy, or the configs measured."""
        candidates = (any(map(self.region.contains, self.task.configs))
                      if self.task.configs is not None else self.region.upper_bound() > 0)
        if not self.trials and self.budget.seconds is not None and candidates:
            return (f"the time budget (--seconds {self.budget.seconds:g}) ran out before any "
                    f"config of {self.task.name} was measured")
        if not self.trials:
            rules = ", ".join(f"{r} removes {n}" for r, n in self._removals().items() if n)
            return (f"every candidate config of {self.task.name} is excluded here "
                    f"({rules or 'no rule removed any: the candidate list is empty'}); "
                    "`tunegate policy explain` says why for any one of them")
        counts = Counter(t.status for t in self.trials)
        seen = ", ".join(f"{n} {s}" for s, n in counts.items())
        return f"no correct config found for {self.task.name} ({seen})"


def _check_here(runner: Any, config: Config, first: int) -> Trial:
    """One launch of `config` on draw `first`, in this process, compared with the expected
    output (as the run worker's 'check'); a raise is an error trial."""
    try:
        runner.warm(config)
        mismatch, draw, _ = runner.check(config, 1, first)
    except Exception as e:
        return Trial(config=config.values, status="error", reason=Reason(
            kind="error", summary=f"raised during the re-check: {type(e).__name__}: "
            f"{str(e).splitlines()[0][:300] if str(e) else ''}"))
    if mismatch is None:
        return Trial(config=config.values, status="ok", checked_draws=1, checked_launches=1)
    return Trial(config=config.values, status="wrong", checked_draws=1, checked_launches=1,
                 reason=Reason(kind="accuracy", summary=f"wrong output on a fresh draw: "
                               f"{mismatch.summary()}", evidence=mismatch.model_dump()))
