"""Evaluating one config: check it (quick, stress), time it, check what the timing left.

Order of trust: a config that uses an experimental feature is checked on a few draws and then
stress-checked before its timing counts; every timed config's output after timing is compared
too (at no extra launch), so `ok` always means checked; the winner is stress-checked (on fresh
draws) before it is returned, so a config that loses the timing needs no draw beyond its first.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..outcome import Outcome
from ..reasons import Reason
from ..space.space import Config
from .messages import Check, CheckResult, Reply, Request, Stress, Time, TimeResult
from .mismatch import Mismatch
from .stress import StressCheck, StressReport
from .worker import Worker
from ..errors import TunegateError

__all__ = ["CheckFailed", "Evaluator", "Trial", "failure_reason"]


class CheckFailed(RuntimeError, TunegateError):
    """The reference or baseline failed while a config was checked: nothing can be judged."""


class Trial(BaseModel):
    """One config's fate in one run, and what was checked: `checked_draws` input draws and
    `checked_launches` launches compared with the expected output; `stressed` once the whole
    stress check (the winner's) ran on it."""

    config: Config
    status: Outcome
    time_ms: float | None = None
    checked_draws: int = 0
    checked_launches: int = 0
    stressed: bool = False
    vote: str | None = None  # without a reference: which group of agreeing wrong outputs
    reason: Reason | None = None

    def checked(self) -> str:
        """What was checked, in words."""
        if not self.checked_launches:
            return "not checked"
        what = (f"{self.checked_launches} launch{'es' if self.checked_launches > 1 else ''} "
                f"on {self.checked_draws} draw{'s' if self.checked_draws > 1 else ''}")
        return ("stress-checked: " if self.stressed else "checked: ") + what


def failure_reason(reply: Reply, op: str) -> Reason:
    """The reason of a request that did not come back ok: its outcome, in words."""
    kind = reply.status if reply.status.failed else Outcome.ERROR
    first = "".join((reply.error or "").splitlines()[:1])[:300]
    return Reason(kind=kind, summary=f"{kind.what(op)}: {first}",
                  evidence={"error": reply.error, "seconds": round(reply.seconds, 3)})


def _mismatch_reason(mismatch: Mismatch, what: str, **evidence: Any) -> Reason:
    return Reason(kind=Outcome.WRONG, summary=f"{what}: {mismatch.summary()}",
                  evidence={**mismatch.evidence(), **evidence})


class Evaluator:
    """Checks and times configs in one worker; `seconds` adds up the time spent checking."""

    def __init__(self, worker: Worker, *, draws: int, stress: StressCheck, timeout: float
                 ) -> None:
        self.worker, self.draws, self.stress_check = worker, draws, stress
        self.timeout = timeout
        self.seconds = 0.0

    def _request(self, request: Request) -> Reply:
        reply = self.worker.request(request, self.timeout)
        if reply.status is Outcome.BASELINE_ERROR:
            raise CheckFailed(reply.error)
        return reply

    def quick(self, config: Config, draws: int, first: int = 0) -> Trial:
        """`draws` input draws from `first`, one launch each."""
        reply = self._request(Check(config, draws, first))
        if reply.status is not Outcome.OK:
            self.seconds += reply.seconds
            return Trial(config=config, status=reply.status,
                         reason=failure_reason(reply, "the accuracy check"))
        assert isinstance(reply.value, CheckResult)
        checked = reply.value
        self.seconds += checked.seconds  # the check itself: not the kernel's first launch
        if checked.mismatch is not None:
            n = checked.draw - first + 1
            return Trial(config=config, status=Outcome.WRONG, checked_draws=n,
                         checked_launches=checked.launches, vote=checked.vote,
                         reason=_mismatch_reason(
                             checked.mismatch,
                             f"wrong output on input draw {checked.draw + 1}",
                             draw=checked.draw))
        return Trial(config=config, status=Outcome.OK, checked_draws=draws,
                     checked_launches=checked.launches)

    def stress(self, trial: Trial, whole: bool = True, tuned_seconds: float | None = None,
               can_race: bool = True) -> Trial:
        """The stress check of a trial's config (the whole one, or the search's light one);
        the trial, updated with what it saw. `tuned_seconds`, `can_race`: see
        `StressCheck.resolved`."""
        kind = self.worker.kind or "interpreter"
        settings = self.stress_check.resolved(kind, tuned_seconds, can_race) if whole else \
            self.stress_check.light(kind)
        reply = self._request(Stress(trial.config, settings))
        if reply.status is not Outcome.OK:
            self.seconds += reply.seconds
            return trial.model_copy(update={"status": reply.status, "time_ms": None,
                                            "reason": failure_reason(reply, "the stress check")})
        assert isinstance(reply.value, StressReport)
        report = reply.value
        self.seconds += report.seconds
        update: dict[str, Any] = {
            "stressed": whole, "checked_draws": trial.checked_draws + report.draws,
            "checked_launches": trial.checked_launches + report.launches}
        if not report.passed:
            first = report.first_mismatch.evidence() if report.first_mismatch else {}
            update.update(status=Outcome.WRONG, time_ms=None, reason=Reason(
                kind=Outcome.WRONG,
                summary=("stress check: " if whole else "light stress check: ")
                + report.summary(),
                evidence={**first, **report.model_dump(exclude={"first_mismatch"})}))
        return trial.model_copy(update=update)

    def evaluate(self, config: Config, experimental: bool, short: bool = False) -> Trial:
        """Check first if `experimental`, then time (`short`ly: see `retime`); the timing
        launches' output is checked. Other draws are left to the winner's stress check: a
        second draw for every config cost a sixth of a 16-config tuning's checking on a GPU
        and decided nothing the stress check does not."""
        trial = Trial(config=config, status=Outcome.OK)
        if experimental:
            trial = self.quick(config, self.draws)
            if trial.status is Outcome.OK:
                trial = self.stress(trial, whole=False)
            if trial.status is not Outcome.OK:
                return trial
        return self._time(trial, full=not short)

    def retime(self, trial: Trial, full: bool = True) -> Trial:
        """A contender's timing again (in full, or short), after its short one, whose output
        was right: the same launches on the same input again show only a race, which is what
        the winner's stress check is for, so this output is not compared (12 of the 28
        compares of a 16-config softmax tuning on a GPU)."""
        return self._time(trial, full=full, compare=False)

    def _time(self, trial: Trial, full: bool, compare: bool = True) -> Trial:
        reply = self._request(Time(trial.config, full, compare))
        if reply.status is not Outcome.OK:
            return trial.model_copy(update={"status": reply.status, "time_ms": None,
                                            "reason": failure_reason(reply, "timing")})
        assert isinstance(reply.value, TimeResult)
        timed = reply.value
        self.seconds += timed.seconds
        update: dict[str, Any] = {"checked_launches": trial.checked_launches + timed.compared,
                                  "checked_draws": max(trial.checked_draws, 1)}
        if timed.mismatch is not None:
            update.update(status=Outcome.WRONG, vote=timed.vote, time_ms=None,
                          reason=_mismatch_reason(
                              timed.mismatch,
                              "wrong output after the timing launches on input draw 1", draw=0))
        else:
            update["time_ms"] = timed.ms
        return trial.model_copy(update=update)
