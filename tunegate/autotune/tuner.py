"""The tuner: sample the policy's region, check risky configs, time them, check the winner.

Order of trust: a config that uses an experimental feature is accuracy-checked (several fresh
input draws) before its timing counts; the fastest surviving config is checked again, whatever
its features, before it is returned or stored. Every rejected config is stored with its reason.
"""

from __future__ import annotations

import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..policy import Environment, Policy, Region, detect_environment, detect_traits
from ..policy.verdict import match_rule
from ..reasons import Reason
from ..space.domains import PerLoop
from ..space.features import uses
from ..space.space import Config, Space
from .check import Mismatch
from .store import Store, TrialKey, open_store
from .strategies import make_strategy
from .task import Task
from .worker import Reply, TaskRef, Worker, WorkerSetupError
from ..errors import TunegateError

__all__ = ["Budget", "TuneError", "TuneResult", "Trial", "Tuner", "baseline_config"]

Status = Literal["ok", "wrong", "error", "compile_error", "timeout", "crashed"]


class TuneError(RuntimeError, TunegateError):
    """Tuning cannot start or produced no correct config; the message says why."""


class Budget(BaseModel):
    """How much tuning may cost: configs measured, and wall-clock seconds."""

    model_config = ConfigDict(frozen=True)

    configs: int = Field(default=64, ge=1)
    seconds: float | None = Field(default=None, gt=0)


class Trial(BaseModel):
    """One config's fate in one run."""

    config: dict[str, Any]
    status: Status
    time_ms: float | None = None
    checked_draws: int = 0
    reason: Reason | None = None


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
    check_seconds: float = 0.0
    policy: str = ""
    env: str = ""
    notes: list[str] = []

    def count(self, status: str) -> int:
        return sum(1 for t in self.trials if t.status == status)


def baseline_config(space: Space) -> Config:
    """The space default with every feature off: the most conservative config."""
    values: dict[str, Any] = {}
    for name, param in space.parameters.items():
        default = param.domain.default()
        if isinstance(param.domain, PerLoop):
            values[name] = tuple(_off(v, param.domain.element, param.features) for v in default)
        else:
            values[name] = _off(default, param.domain, param.features)
    return space.validate_config(values)


def _off(value: Any, domain: Any, features: tuple[str, ...]) -> Any:
    """`value` if it uses none of `features`, else the first value of `domain` that does not."""
    if not any(uses(f, value) for f in features):
        return value
    return next((x for x in domain.values() if not any(uses(f, x) for f in features)), value)


def _accuracy_reason(mismatch: Mismatch, draw: int, draws: int) -> Reason:
    evidence = mismatch.model_dump()
    evidence["draw"] = draw
    return Reason(kind="accuracy", summary=f"wrong output on input draw {draw + 1} of {draws}: "
                  + mismatch.summary(), evidence=evidence)


def _failure_reason(reply: Reply, op: str) -> Reason:
    kind = {"compile_error": "compile", "timeout": "timeout", "crashed": "crash"}.get(
        reply.status, "error")
    what = {"compile": "failed to compile", "timeout": "timed out", "crash": "crashed its worker",
            "error": f"raised during {op}"}[kind]
    return Reason(kind=kind, summary=f"{what}: {(reply.error or '').splitlines()[0][:300]}",  # type: ignore[arg-type]
                  evidence={"error": reply.error, "seconds": round(reply.seconds, 3)})


class Tuner:
    """Tunes one task for one problem. Construct, then `run()`."""

    def __init__(self, task: Task, ref: TaskRef, *, policy: Policy | None = None,
                 env: Environment | None = None, store: Store | None = None,
                 strategy: str = "auto", budget: Budget = Budget(), seed: int = 0,
                 draws: int = 2, timeout: float | None = None, compile_workers: int | None = None,
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.task, self.ref = task, ref
        self.policy = policy or Policy.load()
        self.env = env or detect_environment(probe_device=True)
        self.store = store or open_store()
        self.strategy_name, self.budget, self.seed, self.draws = strategy, budget, seed, draws
        self.timeout = timeout
        self.compile_workers = compile_workers
        self.progress = progress or (lambda event: None)
        self.traits = detect_traits(task.kernel)
        self.region: Region = self.policy.gate(task.space, self.env, self.traits)
        self.trials: list[Trial] = []
        self.check_seconds = 0.0
        self._compilers: list[Worker] = []

    # -- helpers ---------------------------------------------------------------------------
    def _removals(self) -> dict[str, int]:
        if self.task.configs is None:
            return {r.rule: r.count for r in self.region.removals()}
        return {r.id: sum(1 for c in self.task.configs if match_rule(r, c, self.task.space))
                for r in self.region.disabling}

    def _record(self, key: TrialKey, trial: Trial) -> None:
        self.trials.append(trial)
        self.store.record(key, Config(values=trial.config), trial.status, time_ms=trial.time_ms,
                          timing=self._timing, checked_draws=trial.checked_draws,
                          reason=trial.reason)
        self.progress({"event": "trial", "n": len(self.trials), "trial": trial})

    def _check(self, worker: Worker, config: Config) -> tuple[Status, Reason | None]:
        reply = worker.request("check", config.key(), self.draws, self._timeout)
        if reply.status == "baseline_error":
            raise TuneError(reply.error)
        if reply.status != "ok":
            self.check_seconds += reply.seconds
            return reply.status, _failure_reason(reply, "the accuracy check")  # type: ignore[return-value]
        mismatch, draw, seconds = reply.value
        self.check_seconds += seconds  # the check itself: not the kernel's first launch
        if mismatch is not None:
            return "wrong", _accuracy_reason(Mismatch(**mismatch), draw, self.draws)
        return "ok", None

    def _evaluate(self, worker: Worker, config: Config) -> Trial:
        checked = 0
        if self.region.verdict(config).status == "experimental":
            status, reason = self._check(worker, config)
            if status != "ok":
                return Trial(config=config.values, status=status, reason=reason,
                             checked_draws=self.draws if status == "wrong" else 0)
            checked = self.draws
        reply = worker.request("time", config.key(), 0, self._timeout)
        if reply.status == "baseline_error":
            raise TuneError(reply.error)
        if reply.status != "ok":
            return Trial(config=config.values, status=reply.status,  # type: ignore[arg-type]
                         reason=_failure_reason(reply, "timing"), checked_draws=checked)
        return Trial(config=config.values, status="ok", time_ms=reply.value,
                     checked_draws=checked)

    def _start_workers(self, baseline_json: str | None) -> Worker:
        """Start the run worker and, on a GPU, the compile workers, all at once."""
        from .runner import device_kind

        n = self.compile_workers if self.compile_workers is not None else 4
        gpu = device_kind() == "gpu" and self.task.launch is None
        worker = Worker(self.ref, seed=self.seed, baseline_json=baseline_json)
        self._compilers = [Worker(self.ref, seed=self.seed, baseline_json=baseline_json)
                           for _ in range(n if gpu else 0)]
        with ThreadPoolExecutor(max_workers=1 + len(self._compilers)) as pool:
            started = list(pool.map(_try_start, [worker, *self._compilers]))
        if started[0] is not None:
            raise TuneError(f"cannot start tuning {self.task.name}: {started[0]}")
        self._compilers = [w for w, err in zip(self._compilers, started[1:]) if err is None]
        return worker

    def _precompile(self, batch: list[Config], key: TrialKey) -> list[Config]:
        """Compile a batch in parallel isolated workers; returns the configs that compiled."""
        n = len(self._compilers)
        if n == 0:
            return batch
        jobs = [batch[i::n] for i in range(n)]

        def compile_all(i: int) -> list[tuple[Config, Reply]]:
            return [(c, self._compilers[i].request("compile", c.key(), 0, self._timeout))
                    for c in jobs[i]]

        with ThreadPoolExecutor(max_workers=n) as pool:
            done = [r for part in pool.map(compile_all, range(n)) for r in part]
        failed = set()
        for config, reply in done:
            if reply.status != "ok":
                failed.add(config)
                self._record(key, Trial(config=config.values, status=reply.status,  # type: ignore[arg-type]
                                        reason=_failure_reason(reply, "compilation")))
        return [c for c in batch if c not in failed]

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> TuneResult:
        start = time.perf_counter()
        baseline = None if self.task.reference is not None else baseline_config(self.task.space)
        notes: list[str] = []
        if baseline is not None and not self.region.contains(baseline):
            verdict = self.region.verdict(baseline)
            raise TuneError(f"the baseline config {baseline.text()} is excluded here "
                            f"({', '.join(m.rule for m in verdict.matched)}); give the task a "
                            "reference function")
        worker = self._start_workers(baseline.key() if baseline else None)
        self._timing = worker.kind or "interpreter"
        problem = worker.problem_key or ""
        self._timeout = self.timeout or (60.0 if self._timing == "gpu" else 300.0)
        kernel, env_fp, policy_fp = self.task.kernel_hash(), self.env.fingerprint(), \
            self.policy.fingerprint()
        key = TrialKey(run=uuid.uuid4().hex[:12], kernel=kernel, kernel_name=self.task.name,
                       problem=problem, env=env_fp, policy=policy_fp)
        result = dict(task=self.task.name, problem=problem, timing=self._timing,
                      removals=self._removals(), policy=policy_fp, env=env_fp,
                      space_size=len(self.task.configs) if self.task.configs is not None
                      else self.task.space.cardinality())
        try:
            stored = self._reuse(kernel, problem, env_fp, policy_fp, notes)
            if stored is not None:
                return TuneResult(**result, best=stored.config.values, best_time_ms=stored.time_ms,
                                  trials=[], reused=True, notes=notes,
                                  wall_seconds=time.perf_counter() - start)
            interrupted = self._search(worker, key, start)
            best, best_time = self._winner(worker, key)
        finally:
            worker.close()
            for w in self._compilers:
                w.close()
        if best is None:
            raise TuneError(self._no_winner_message(result["removals"]))
        self.store.save_best(kernel, problem, env_fp, policy_fp, best, best_time, self._timing)
        return TuneResult(**result, best=best.values, best_time_ms=best_time, trials=self.trials,
                          interrupted=interrupted, wall_seconds=time.perf_counter() - start,
                          check_seconds=self.check_seconds, notes=notes)

    def _reuse(self, kernel: str, problem: str, env_fp: str, policy_fp: str,
               notes: list[str]) -> Any:
        stored = self.store.best(kernel, problem, env_fp)
        if stored is None:
            return None
        if stored.policy == policy_fp or self.region.contains(stored.config):
            return stored
        rules = ", ".join(m.rule for m in self.region.verdict(stored.config).matched
                          if m.action == "disable")
        notes.append(f"stored best {stored.config.text()} is now excluded by {rules}; retuned")
        self.store.forget_best(kernel, problem, env_fp)
        return None

    def _search(self, worker: Worker, key: TrialKey, start: float) -> bool:
        quarantined = self.store.quarantined(key.kernel, key.problem, key.env)
        strategy = make_strategy(self.strategy_name, self.region, random.Random(self.seed),
                                 budget=self.budget.configs, points=self.task.configs)
        self.progress({"event": "start", "budget": self.budget.configs,
                       "strategy": type(strategy).name})
        results: dict[Config, float | None] = {}
        try:
            while len(results) < self.budget.configs:
                batch = strategy.next_batch(results)[: self.budget.configs - len(results)]
                if not batch:
                    break
                for config in list(batch):
                    if config in quarantined:
                        batch.remove(config)
                        results[config] = None
                        self._record(key, Trial(config=config.values, status="wrong",
                                                reason=quarantined[config]))
                batch = self._precompile(batch, key)
                for config in batch:
                    if self.budget.seconds and time.perf_counter() - start > self.budget.seconds:
                        return False
                    trial = self._evaluate(worker, config)
                    results[config] = trial.time_ms
                    self._record(key, trial)
                if self.budget.seconds and time.perf_counter() - start > self.budget.seconds:
                    break
        except KeyboardInterrupt:
            worker.stop()  # its answer to the interrupted request must not be read as the next
            return True
        return False

    def _winner(self, worker: Worker, key: TrialKey) -> tuple[Config | None, float | None]:
        """The fastest timed config that passes the accuracy check; failures are quarantined."""
        timed = sorted((t for t in self.trials if t.status == "ok"), key=lambda t: t.time_ms)
        for trial in timed:
            config = Config(values=trial.config)
            self.progress({"event": "winner_check", "config": config})
            if trial.checked_draws < self.draws:
                status, reason = self._check(worker, config)
                if status != "ok":
                    trial.status, trial.reason = status, reason
                    self.store.record(key, config, status, checked_draws=self.draws,
                                      reason=reason, timing=self._timing)
                    continue
                trial.checked_draws = self.draws
            return config, trial.time_ms
        return None, None

    def _no_winner_message(self, removals: dict[str, int]) -> str:
        if not self.trials:
            rules = ", ".join(f"{r} removes {n}" for r, n in removals.items() if n)
            return (f"every candidate config of {self.task.name} is excluded here "
                    f"({rules or 'no rule removed any: the candidate list is empty'}); "
                    "`tunegate policy explain` says why for any one of them")
        counts: dict[str, int] = {}
        for t in self.trials:
            counts[t.status] = counts.get(t.status, 0) + 1
        seen = ", ".join(f"{n} {s}" for s, n in counts.items())
        return f"no correct config found for {self.task.name} ({seen})"


def _try_start(worker: Worker) -> str | None:
    """Start a worker; the error text instead of raising, so several can start in threads."""
    try:
        worker.start()
    except WorkerSetupError as e:
        return str(e)
    return None
