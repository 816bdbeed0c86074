"""Reusing a stored best: only under the same keys, only while the policy allows it, and only
after a re-check on a fresh draw (once per process: see `Rechecked`).

The re-check runs in this process when it can (the stored best already passed the whole stress
check in an isolated worker), else in the first run worker.
"""

from __future__ import annotations

import logging
import random
from typing import Any, Callable

from ..outcome import Outcome
from ..policy import Region
from ..reasons import Reason
from ..space.space import Config, InvalidConfig
from .evaluator import Trial
from .ledger import Ledger
from .store import Best
from .task import Task
from .worker import TaskRef

__all__ = ["PROCESS_RECHECKED", "Rechecked", "check_here", "in_process_runner", "stored_best"]

log = logging.getLogger(__name__)

_FRESH = 2_000_000  # re-check draws start here: never a draw the search used


class Rechecked:
    """The stored bests (task, problem, environment, config) re-checked on a fresh draw: each
    is re-checked once, before its first reuse by the tuners that share this record."""

    def __init__(self) -> None:
        self._marks: set[tuple[str, str, str, str]] = set()

    def __contains__(self, mark: tuple[str, str, str, str]) -> bool:
        return mark in self._marks

    def add(self, mark: tuple[str, str, str, str]) -> None:
        self._marks.add(mark)


PROCESS_RECHECKED = Rechecked()
"""The record every `Tuner` of this process shares unless it is given its own."""


def stored_best(ledger: Ledger, region: Region, recheck: Callable[[Config, int], Trial], *,
                retune: bool, recheck_reused: bool, rechecked: Rechecked) -> Best | None:
    """The stored best, if it may be reused: same keys, allowed now, and re-checked by
    `recheck(config, first draw)` on one fresh draw; why not, in the ledger's notes."""
    k = ledger.keys
    stored = ledger.store.best(k.task, k.problem, k.env)
    if stored is None:
        return None
    try:
        allowed = region.contains(stored.config)
    except InvalidConfig as e:  # the task's space is in its key: only a damaged row gets here
        ledger.notes.append(f"the stored best {stored.config.text()} in {ledger.store.path} is "
                            f"not a config of this task ({e}): a damaged row, forgotten; "
                            "retuned")
        ledger.forget()
        return None
    if not allowed:  # first: the store keeps the faster of a stored
        # best and the run's, so an excluded one must go
        rules = ", ".join(m.rule for m in region.verdict(stored.config).matched
                          if m.action == "disable")
        ledger.notes.append(f"stored best {stored.config.text()} is now excluded by {rules}; "
                            "retuned")
        ledger.forget()
        return None
    if retune:
        ledger.notes.append(f"retune requested: the stored best {stored.config.text()} is "
                            "searched against again")
        return None
    if stored.partial:  # the search continues: configs are measured again, and the store
        # keeps the faster of the two bests
        ledger.notes.append(f"the stored best {stored.config.text()} comes from an interrupted "
                            f"run ({stored.measured} of {stored.budget} configs measured): "
                            "searched again")
        return None
    if stored.policy != k.policy:
        ledger.notes.append("the policy changed since this best was stored and may now allow "
                            "faster configs: retune (--retune, Tuner(retune=True)) to search "
                            "them")
    mark = (k.task, k.problem, k.env, stored.config.key())
    if not recheck_reused or mark in rechecked:
        return stored
    trial = recheck(stored.config, _FRESH + random.SystemRandom().randrange(1 << 30))
    if trial.status is not Outcome.OK:
        ledger.record(trial)
        ledger.notes.append(f"stored best {stored.config.text()} failed its re-check on a "
                            f"fresh draw ({trial.reason.summary if trial.reason else ''}); "
                            "retuned")
        ledger.forget()
        return None
    rechecked.add(mark)
    ledger.notes.append(f"stored best {stored.config.text()} re-checked on a fresh draw")
    return stored


def in_process_runner(task: Task, ref: TaskRef, *, seed: int, baseline: Config | None,
                      deterministic: bool) -> Any:
    """A `Runner` of the task in this process, for the re-check; None if the task cannot run
    here (an isolated worker then re-checks, and reports what went wrong properly)."""
    from .backend import interpret_without_gpu
    from .runner import Runner

    try:
        interpret_without_gpu()
        runner = Runner(task, seed=seed, baseline=baseline, inputs=ref.inputs,
                        deterministic=deterministic)
        runner.problem_key()
    except Exception as e:
        log.debug("the in-process re-check could not start (%s); re-checking isolated", e)
        return None
    return runner


def check_here(runner: Any, config: Config, first: int) -> Trial:
    """One launch of `config` on draw `first`, in this process, compared with the expected
    output (as the run worker's check); a raise is an error trial."""
    try:
        runner.warm(config)
        checked = runner.check(config, 1, first)
    except Exception as e:
        return Trial(config=config, status=Outcome.ERROR, reason=Reason(
            kind=Outcome.ERROR, summary=f"raised during the re-check: {type(e).__name__}: "
            f"{str(e).splitlines()[0][:300] if str(e) else ''}"))
    if checked.mismatch is None:
        return Trial(config=config, status=Outcome.OK, checked_draws=1, checked_launches=1)
    return Trial(config=config, status=Outcome.WRONG, checked_draws=1, checked_launches=1,
                 reason=Reason(kind=Outcome.WRONG, summary=f"wrong output on a fresh draw: "
                               f"{checked.mismatch.summary()}",
                               evidence=checked.mismatch.evidence()))
