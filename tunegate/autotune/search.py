"""The search: measure configs the strategy proposes until the budget is spent, then time the
contenders of the short timings in full (successive halving).

Each batch is compiled ahead in the compile workers while the configs already compiled are
timed (a config that fails to compile, or needs more shared memory than the device has, is a
trial with its reason), quarantined configs are skipped with their stored reason, and the
store's timings of this kernel at other problem sizes rank the strategy's first proposals.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from contextlib import closing
from typing import Iterator

from ..outcome import Outcome
from ..policy import Region
from ..reasons import Reason
from ..space.space import Config, InvalidConfig
from .evaluator import Evaluator, Trial, failure_reason
from .ledger import Ledger
from .messages import CompileResult, Reply
from .pool import WorkerPool
from .results import Budget
from .schedule import measure
from .strategies import make_strategy
from .task import Task

__all__ = ["MIN_CONTENDERS", "NEAR", "Search"]

log = logging.getLogger(__name__)

# The contenders of the short timings, which are timed again: those within NEAR of the fastest
# (a short median of some 10 ms of launches is good to a few percent), at most a sixth of the
# timed configs but at least MIN_CONTENDERS, so a 16-config list retimes 3, not 16.
NEAR = 1.06
MIN_CONTENDERS = 3
ROUNDS = 4  # short timings per contender, taken in turn (see `Search.refine`)


class Search:
    """One run's search over `region` with the pool's evaluators, recorded in `ledger`.
    `staged` times every candidate briefly first (on a GPU) and only the contenders in full."""

    def __init__(self, task: Task, region: Region, ledger: Ledger, pool: WorkerPool,
                 evaluators: list[Evaluator], *, strategy: str, budget: Budget, seed: int,
                 timeout: float, staged: bool, start: float) -> None:
        self.task, self.region, self.ledger, self.pool = task, region, ledger, pool
        self.evaluators, self.strategy, self.budget, self.seed = evaluators, strategy, budget, seed
        self.timeout, self.start = timeout, start
        self.staged = staged and ledger.timing == "gpu"  # the interpreter's has one stage

    def out_of_time(self) -> bool:
        seconds = self.budget.seconds
        return bool(seconds and time.perf_counter() - self.start > seconds)

    def run(self) -> bool:
        """Measure configs until the budget is spent; True if interrupted (Ctrl-C)."""
        ledger, k = self.ledger, self.ledger.keys
        quarantined = ledger.store.quarantined(k.task, k.problem, k.env)
        failed = {t.config for t in ledger.trials if t.status.failed}  # by an earlier search
        strategy = make_strategy(self.strategy, self.region, random.Random(self.seed),
                                 budget=self.budget.configs, points=self.task.configs,
                                 prior=self._prior())
        ledger.progress({"event": "start", "budget": self.budget.configs,
                         "strategy": type(strategy).name})
        results: dict[Config, float | None] = {}
        try:
            while len(results) < self.budget.configs and not self.out_of_time():
                batch = strategy.next_batch(results)[: self.budget.configs - len(results)]
                if not batch:
                    break
                for config in [c for c in batch if c in quarantined or c in failed]:
                    batch.remove(config)  # failed: by this run (see Ledger.restart)
                    results[config] = None
                    # one row: none more where this run quarantined it (a stored best that
                    # failed its re-check) or saw it fail
                    if not any(t.config == config for t in ledger.trials):
                        ledger.record(Trial(config=config, status=Outcome.WRONG,
                                            reason=quarantined[config]))
                phase, compiled = time.perf_counter(), ledger.phases["compile"]
                with closing(self._compiled(batch)) as ready:
                    for trial in measure(self.evaluators, ready, self.out_of_time,
                                         self._first_timing):
                        results[trial.config] = trial.time_ms
                        ledger.record(trial)
                ledger.phases["timing"] += (time.perf_counter() - phase
                                            - (ledger.phases["compile"] - compiled))
                if self.out_of_time():
                    return False
        except KeyboardInterrupt:
            for w in self.pool.runs:  # their answers to interrupted requests must not be read
                w.stop()
            return True
        return False

    def _first_timing(self, evaluator: Evaluator, config: Config) -> Trial:
        experimental = self.region.verdict(config).status == "experimental"
        return evaluator.evaluate(config, experimental, short=self.staged)

    def _compiled(self, batch: list[Config]) -> Iterator[Config | Trial]:
        """The batch's configs as they become ready to launch: compiled ahead in parallel
        isolated workers into Triton's cache (in the order they finish, so timing starts with
        the first), or left to compile at their first launch where compiling ahead failed or
        no compile worker had loaded the task yet; a config that cannot run (a compile error,
        more shared memory than the device has) as its trial. The seconds spent waiting for a
        compile count as compile time."""
        ledger, pool = self.ledger, self.pool
        for note in pool.notes:
            ledger.note(note)
        target, limit = pool.run.device_facts or (None, None)
        if pool.compilers and target is None:
            ledger.note("the GPU's compile target is unknown (not a CUDA GPU): each config "
                        "compiles at its first launch")
        if not pool.compilers or target is None:
            yield from batch
            return
        late: list[tuple[Config, Reply]] = []
        # A launch-task's configs are compiled ahead from stand-ins for the call's tensors: only
        # its launch (in the run worker) may condemn a config.
        lenient = self.task.compile_kwargs is not None
        replies = pool.compile_stream(batch, self.timeout, target)
        try:
            while True:
                with ledger.phase("compile"):
                    config, reply = next(replies, (None, None))
                if config is None:
                    break
                if reply is None:  # no compile worker had loaded the task: compiled at launch
                    yield config
                    continue
                if reply.status is Outcome.ERROR or lenient and reply.status is not Outcome.OK:
                    log.debug("compiling %s ahead failed (%s); it compiles at its first launch",
                              config.text(), reply.error)
                    late.append((config, reply))
                    yield config
                    continue
                shared = reply.value.shared_bytes if isinstance(reply.value, CompileResult) \
                    else None
                if reply.status is not Outcome.OK:
                    yield Trial(config=config, status=reply.status,
                                reason=failure_reason(reply, "compilation"))
                elif limit and shared is not None and shared > limit:
                    yield Trial(config=config, status=Outcome.COMPILE_ERROR, reason=Reason(
                        kind=Outcome.COMPILE_ERROR, summary=f"needs {shared} bytes of shared "
                        f"memory per block; the device allows {limit}",
                        evidence={"shared_bytes": shared, "limit": limit}))
                else:
                    yield config
        finally:
            replies.close()
            for note in pool.notes:
                ledger.note(note)
            if late:
                config, reply = late[0]
                ledger.note(f"{len(late)} config(s) could not be compiled ahead and compiled "
                            f"at their first launch instead (e.g. {config.text()}: "
                            f"{(reply.error or '').splitlines()[0][:200]})")

    def refine(self) -> None:
        """Time the contenders of the short timings again (the fastest, within `NEAR` of the
        fastest, between MIN_CONTENDERS and a sixth of them); their rows updated. With the
        task's own `do_bench`, each gets one full timing with it; else ROUNDS short timings
        taken round-robin, the contenders in turn, of which each keeps the median (with its
        first): a GPU's clocks move within seconds, and configs timed one after the other
        in full would each meet other clocks (matmul 4096^3 on an H200: up to 10% apart)."""
        if not self.staged:
            return
        trials = self.ledger.trials
        timed = sorted((i for i, t in enumerate(trials) if t.status is Outcome.OK),
                       key=lambda i: trials[i].time_ms)  # type: ignore[arg-type,return-value]
        if not timed:
            return
        fastest = trials[timed[0]].time_ms or 0.0
        most = max(MIN_CONTENDERS, -(-len(timed) // 6))
        chosen = [i for n, i in enumerate(timed)
                  if n < MIN_CONTENDERS or (n < most and (trials[i].time_ms or 0.0)
                                            <= NEAR * fastest)]
        by_config = {trials[i].config: i for i in chosen}
        full = self.task.do_bench is not None
        samples = {c: [trials[i].time_ms or 0.0] for c, i in by_config.items()}

        def retime(evaluator: Evaluator, config: Config) -> Trial:
            return evaluator.retime(trials[by_config[config]], full=full)

        with self.ledger.phase("timing"):
            for r in range(1 if full else ROUNDS):
                order = list(by_config)
                turn = order[r % len(order):] + order[:r % len(order)]
                for trial in measure(self.evaluators, turn, lambda: False, retime):
                    i = by_config[trial.config]
                    if trial.status is not Outcome.OK:
                        del by_config[trial.config]  # out of the next rounds
                    elif not full:
                        samples[trial.config].append(trial.time_ms or 0.0)
                        trial = trial.model_copy(
                            update={"time_ms": statistics.median(samples[trial.config])})
                    self.ledger.replace(i, trial)
                    self.ledger.refined.add(i)
                    self.ledger.progress({"event": "full_timing", "trial": trial})
                if not by_config:
                    break

    def _prior(self) -> dict[Config, float]:
        """Each config's mean rank (0 fastest, 1 slowest) among the correct timings of this
        kernel at other problem sizes in this environment: what the store already knows."""
        k = self.ledger.keys
        by_problem: dict[str, list[tuple[float, Config]]] = {}
        for problem, config, ms in self.ledger.store.timings_elsewhere(k.kernel, k.env,
                                                                       k.problem):
            if self._candidate(config):
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
