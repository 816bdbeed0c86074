"""One run's record: its trials, each with its row in the store, its notes and phase times.

Every trial goes to the store as it is made and every later check of it updates its row; the
best is saved (or a failed stored best forgotten) through here. A failing store never stops a
run: it is noted once, and what follows is only in the run's result.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..outcome import Outcome
from ..reasons import Reason
from ..space.space import Config
from .evaluator import Trial
from .store import Store, StoreError, TrialKey

__all__ = ["Ledger"]

_STORE_FAILED = "the tuning store failed"


class Ledger:
    """The trials, notes and seconds per phase of one run, kept in step with the store under
    `key` (given once the problem is known, by `open`)."""

    def __init__(self, store: Store, progress: Callable[[dict[str, Any]], None]) -> None:
        self.store, self.progress = store, progress
        self.key: TrialKey | None = None
        self.timing = "interpreter"
        self.trials: list[Trial] = []
        self.refined: set[int] = set()  # trials timed in full after a short timing
        self.notes: list[str] = []
        self.phases: Counter[str] = Counter()
        self._rows: list[int] = []  # the store's row of each trial
        # Judged against a baseline config, not ground truth: until the vote on the baseline
        # (`settle`, `unjudge`), a config found wrong is stored as not judged yet, so that a
        # run killed before its vote quarantines nothing (see `unjudge` for why that matters).
        self.provisional = False
        self._unsettled: set[int] = set()  # trials stored as not judged yet

    def open(self, key: TrialKey, timing: str) -> None:
        self.key, self.timing = key, timing

    @property
    def keys(self) -> TrialKey:
        assert self.key is not None, "the ledger is opened before a trial is recorded"
        return self.key

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the seconds of the block to phase `name`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] += time.perf_counter() - start

    def note(self, text: str) -> None:
        """Note `text` once."""
        if text not in self.notes:
            self.notes.append(text)

    def store_failed(self, error: StoreError) -> None:
        """Note, once, that the store failed: this run's results are then only in its result."""
        if not any(n.startswith(_STORE_FAILED) for n in self.notes):
            self.notes.append(f"{_STORE_FAILED}, so what follows is only in this report: {error}")

    def record(self, trial: Trial) -> None:
        """Add a trial, and its row to the store."""
        self.trials.append(trial)
        status, reason = self._stored_as(len(self.trials) - 1, trial)
        try:
            row = self.store.record(
                self.keys, trial.config, status, time_ms=trial.time_ms,
                timing=self.timing, checked_draws=trial.checked_draws,
                checked_launches=trial.checked_launches, reason=reason)
        except StoreError as e:
            row = 0  # no such row: later updates of it change nothing
            self.store_failed(e)
        self._rows.append(row)
        self.progress({"event": "trial", "n": len(self.trials), "trial": trial})

    def _stored_as(self, i: int, trial: Trial) -> tuple[Outcome, Reason | None]:
        """The status and reason trial `i` is stored with: a wrong one judged against a baseline
        not voted on yet is stored as not judged."""
        self._unsettled.discard(i)
        if not (self.provisional and trial.status is Outcome.WRONG and trial.reason):
            return trial.status, trial.reason
        self._unsettled.add(i)
        return Outcome.BASELINE_ERROR, Reason(
            kind=Outcome.BASELINE_ERROR, evidence=trial.reason.evidence,
            summary=f"not judged yet: {trial.reason.summary}, against a baseline config the "
                    "run had not voted on when it ended")

    def settle(self) -> None:
        """The vote kept the baseline: the configs found wrong against it are stored as wrong
        (quarantined), and later ones are stored so at once."""
        self.provisional = False
        for i in sorted(self._unsettled):
            self._update(i, self.trials[i], self.trials[i].status, self.trials[i].reason)
        self._unsettled.clear()

    def replace(self, i: int, trial: Trial) -> None:
        """Trial `i` checked again (its full timing, its stress check): its row updated."""
        self.trials[i] = trial
        self._update(i, trial, *self._stored_as(i, trial))

    def _update(self, i: int, trial: Trial, status: Outcome, reason: Reason | None) -> None:
        """Trial `i`'s row rewritten as `trial` with `status` and `reason`; a store that fails
        is noted, never raised."""
        try:
            self.store.update(self._rows[i], status, time_ms=trial.time_ms,
                              checked_draws=trial.checked_draws,
                              checked_launches=trial.checked_launches, reason=reason)
        except StoreError as e:
            self.store_failed(e)

    def unjudge(self, why: str) -> None:
        """The baseline this run compared with looks wrong (`why`): the configs found wrong
        against it are stored as not judged, so that no later run skips them as quarantined
        (one that did would leave the baseline unopposed, and return it)."""
        self._not_judged(why, (Outcome.WRONG,))
        self.note("the configs found wrong against the baseline are not quarantined: the "
                  "next run measures them again")

    def restart(self, why: str) -> None:
        """The search starts over against another baseline, the first looking wrong (`why`):
        every config judged against it, right or wrong, is stored as not judged and dropped;
        the configs that failed to run (no baseline judged them) stay, and are not measured
        again (`Search`: a hung config costs its timeout once)."""
        self._not_judged(why, (Outcome.WRONG, Outcome.OK))
        kept = [i for i, t in enumerate(self.trials) if t.status.failed]
        self.trials[:] = [self.trials[i] for i in kept]
        self._rows[:] = [self._rows[i] for i in kept]
        self.refined.clear()
        self.note(why)

    def _not_judged(self, why: str, judged: tuple[Outcome, ...]) -> None:
        for i, trial in enumerate(self.trials):
            if trial.status not in judged:
                continue
            said = trial.reason.summary if trial.reason is not None else \
                "it agreed with the baseline"
            reason = Reason(kind=Outcome.BASELINE_ERROR, summary=f"not judged: {said}, but {why}",
                            evidence=trial.reason.evidence if trial.reason is not None else {})
            self._update(i, trial.model_copy(update={"time_ms": None}), Outcome.BASELINE_ERROR,
                         reason)
        self.provisional = False
        self._unsettled.clear()

    def forget(self, config: Config | None = None) -> None:
        """Drop the key's stored best (only if it is `config`, when given): it failed a check."""
        k = self.keys
        try:
            self.store.forget_best(k.task, k.problem, k.env, config)
        except StoreError as e:
            self.store_failed(e)

    def save_best(self, best: Config, best_time: float | None, interrupted: bool,
                  budget: int) -> None:
        """Store the run's best; an interrupted run's as partial. The store keeps the faster of
        it and an earlier run's; the notes say when that is not this run's."""
        try:
            stored = self.store.save_best(self.keys, best, best_time, self.timing,
                                          partial=interrupted, measured=len(self.trials),
                                          budget=budget)
        except StoreError as e:
            self.store_failed(e)
            return
        if stored is None:  # refused: the winner was quarantined meanwhile (another run)
            self.notes.append(f"the store refused {best.text()}: it is quarantined as wrong "
                              "for this task, problem and environment")
            return
        if stored.config != best:
            self.notes.append(f"the store keeps {stored.config.text()}, measured faster "
                              f"({stored.time_ms:.4g} ms) by an earlier run")
        if stored.partial:
            self.notes.append(f"only {len(self.trials)} of up to {budget} configs were "
                              "measured: the best is stored as partial, and the next run "
                              "searches again instead of reusing it")
