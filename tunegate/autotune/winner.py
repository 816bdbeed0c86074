"""The winner: the fastest timed config that passes the whole stress check (one that fails is
quarantined and its stored best forgotten), and why there is none when none wins."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from ..outcome import Outcome
from ..policy import Region
from ..space.space import Config
from .evaluator import Evaluator
from .ledger import Ledger
from .results import Budget
from .task import Task

__all__ = ["no_winner", "stressed_winner", "winner"]


TIE = 0.01
"""Timings within this share of the fastest are a tie (a GPU's run-to-run noise is larger); a
tie goes to a config with no race hazard."""


def winner(ledger: Ledger, evaluator: Evaluator, tuned_seconds: float | None = None,
           hazards: Callable[[Config], tuple[str, ...]] = lambda config: ("unknown",)
           ) -> tuple[Config | None, float | None]:
    """The fastest timed config that passes the stress check (sized by `tuned_seconds`, the
    tuning's time so far, and by its `hazards`: see `StressCheck.resolved`), a tie (`TIE`)
    going to a config without hazards; failures are quarantined."""
    trials, refined = ledger.trials, ledger.refined

    def rank(i: int) -> tuple[bool, float]:  # fully timed contenders first: a short timing
        return i not in refined and bool(refined), trials[i].time_ms  # only decided a loss

    wrong = _found_wrong(ledger)
    timed = sorted((i for i, t in enumerate(trials) if t.status is Outcome.OK
                    and t.config not in wrong), key=rank)
    if timed:
        tied = [i for i in timed if rank(i)[0] == rank(timed[0])[0]
                and rank(i)[1] <= rank(timed[0])[1] * (1 + TIE)]
        safe = [i for i in tied if not hazards(trials[i].config)]
        timed = safe + [i for i in timed if i not in safe]
    for i in timed:
        trial = trials[i]
        if not trial.stressed:
            found = hazards(trial.config)
            ledger.progress({"event": "winner_check", "config": trial.config, "hazards": found})
            checked = evaluator.stress(trial, tuned_seconds=tuned_seconds, can_race=bool(found))
            ledger.replace(i, checked)
            ledger.progress({"event": "stress", "trial": checked})
            if checked.status is not Outcome.OK:
                ledger.forget(trial.config)  # a stored best of this config must not be reused
                continue
        return trial.config, trial.time_ms
    return None, None


def _found_wrong(ledger: Ledger) -> set[Config]:
    """Configs a trial found wrong (a stored best's re-check on a fresh draw, say): never a
    winner, whatever a later trial on other draws saw."""
    return {t.config for t in ledger.trials if t.status is Outcome.WRONG}


def stressed_winner(ledger: Ledger) -> tuple[Config | None, float | None]:
    """The fastest config that already passed the whole stress check, if any."""
    passed = [t for t in ledger.trials if t.status is Outcome.OK and t.stressed
              and t.config not in _found_wrong(ledger)]
    if not passed:
        return None, None
    fastest = min(passed, key=lambda t: t.time_ms)  # type: ignore[arg-type,return-value]
    return fastest.config, fastest.time_ms


def no_winner(ledger: Ledger, task: Task, region: Region, budget: Budget,
              removals: dict[str, int], stopped: str | None = None) -> str:
    """Why no config won: what stopped the run, the clock, the policy, or the configs
    measured. `stopped`: why the run ended early (a worker that could not be restarted)."""
    trials = ledger.trials
    if stopped is not None:
        done = "was found correct" if not any(t.status is Outcome.OK for t in trials) else \
            "passed its stress check"
        return f"tuning {task.name} stopped before any config {done}: {stopped}"
    candidates = (any(map(region.contains, task.configs))
                  if task.configs is not None else region.upper_bound() > 0)
    if not trials and budget.seconds is not None and candidates:
        return (f"the time budget (--seconds {budget.seconds:g}) ran out before any config of "
                f"{task.name} was measured")
    if not trials:
        rules = ", ".join(f"{r} removes {n}" for r, n in removals.items() if n)
        return (f"every candidate config of {task.name} is excluded here "
                f"({rules or 'no rule removed any: the candidate list is empty'}); "
                "`tunegate policy explain` says why for any one of them")
    counts = Counter(t.status for t in trials)
    seen = ", ".join(f"{n} {s}" for s, n in counts.items())
    first = next((t for t in trials if t.reason is not None), None)
    why = f"; first, {first.config.text()}: {first.reason.summary}" if first and first.reason \
        else ""
    return f"no correct config found for {task.name} ({seen}){why}"
