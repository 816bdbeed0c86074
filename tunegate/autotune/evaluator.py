"""Evaluating one config: check it (quick, stress), time it, check what the timing left.

Order of trust: a config that uses an experimental feature is checked on a few draws and then
stress-checked before its timing counts; every timed config's output after timing is compared
too (at no extra launch), so `ok` always means checked; the winner is stress-checked before it
is returned.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ..reasons import Reason
from ..space.space import Config
from .check import Mismatch
from .stress import StressCheck, StressReport
from .worker import Reply, Worker
from ..errors import TunegateError

__all__ = ["CheckFailed", "Evaluator", "Status", "Trial", "failure_reason"]

Status = Literal["ok", "wrong", "error", "compile_error", "timeout", "crashed"]


class CheckFailed(RuntimeError, TunegateError):
    """The reference or baseline failed while a config was checked: nothing can be judged."""


class Trial(BaseModel):
    """One config's fate in one run, and what was checked: `checked_draws` input draws and
    `checked_launches` launches compared with the expected output; `stressed` once the whole
    stress check (the winner's) ran on it."""

    config: dict[str, Any]
    status: Status
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
    kind = {"compile_error": "compile", "timeout": "timeout", "crashed": "crash"}.get(
        reply.status, "error")
    what = {"compile": "failed to compile", "timeout": "timed out", "crash": "crashed its worker",
            "error": f"raised during {op}"}[kind]
    return Reason(kind=kind, summary=f"{what}: {(reply.error or '').splitlines()[0][:300]}",  # type: ignore[arg-type]
                  evidence={"error": reply.error, "seconds": round(reply.seconds, 3)})


def _mismatch_reason(mismatch: Mismatch, what: str, **evidence: Any) -> Reason:
    return Reason(kind="accuracy", summary=f"{what}: {mismatch.summary()}",
                  evidence={**mismatch.model_dump(), **evidence})


class Evaluator:
    """Checks and times configs in one worker; `seconds` adds up the time spent checking."""

    def __init__(self, worker: Worker, *, draws: int, stress: StressCheck, timeout: float
                 ) -> None:
        self.worker, self.draws, self.stress_check = worker, draws, stress
        self.timeout = timeout
        self.seconds = 0.0

    def _request(self, op: str, config: Config, arg: Any = None) -> Reply:
        reply = self.worker.request(op, config.key(), arg, self.timeout)
        if reply.status == "baseline_error":
            raise CheckFailed(reply.error)
        return reply

    def quick(self, config: Config, draws: int, first: int = 0) -> Trial:
        """`draws` input draws from `first`, one launch each."""
        reply = self._request("check", config, (draws, first))
        if reply.status != "ok":
            self.seconds += reply.seconds
            return Trial(config=config.values, status=reply.status,  # type: ignore[arg-type]
                         reason=failure_reason(reply, "the accuracy check"))
        mismatch, draw, vote, seconds = reply.value
        self.seconds += seconds  # the check itself: not the kernel's first launch
        if mismatch is not None:
            n = draw - first + 1
            return Trial(config=config.values, status="wrong", checked_draws=n,
                         checked_launches=n, vote=vote,
                         reason=_mismatch_reason(Mismatch(**mismatch),
                                                 f"wrong output on input draw {n} of {draws}",
                                                 draw=draw))
        return Trial(config=config.values, status="ok", checked_draws=draws,
                     checked_launches=draws)

    def stress(self, trial: Trial, whole: bool = True) -> Trial:
        """The stress check of a trial's config (the whole one, or the search's light one);
        the trial, updated with what it saw."""
        config = Config(values=trial.config)
        kind = self.worker.kind or "interpreter"
        settings = self.stress_check.resolved(kind) if whole else self.stress_check.light(kind)
        reply = self._request("stress", config, settings.model_dump())
        if reply.status != "ok":
            self.seconds += reply.seconds
            return trial.model_copy(update={"status": reply.status, "time_ms": None,
                                            "reason": failure_reason(reply, "the stress check")})
        report = StressReport.model_validate(reply.value)
        self.seconds += report.seconds
        update: dict[str, Any] = {
            "stressed": whole, "checked_draws": trial.checked_draws + report.draws,
            "checked_launches": trial.checked_launches + report.launches}
        if not report.passed:
            update.update(status="wrong", time_ms=None, reason=Reason(
                kind="accuracy", summary=("stress check: " if whole else "light stress check: ")
                + report.summary(),
                evidence={**(report.first_mismatch or {}),
                          **report.model_dump(exclude={"first_mismatch"})}))
        return trial.model_copy(update=update)

    def evaluate(self, config: Config, experimental: bool, short: bool = False) -> Trial:
        """Check first if `experimental`, then time (`short`ly: see `retime`); the timing
        launches' output is checked."""
        trial = Trial(config=config.values, status="ok")
        if experimental:
            trial = self.quick(config, self.draws)
            if trial.status == "ok":
                trial = self.stress(trial, whole=False)
            if trial.status != "ok":
                return trial
        return self._time(trial, "short" if short else "full")

    def retime(self, trial: Trial) -> Trial:
        """A contender's full timing, after its short one; its output is checked again."""
        return self._time(trial, "full")

    def _time(self, trial: Trial, stage: str) -> Trial:
        config = Config(values=trial.config)
        reply = self._request("time", config, stage)
        if reply.status != "ok":
            return trial.model_copy(update={"status": reply.status, "time_ms": None,
                                            "reason": failure_reason(reply, "timing")})
        ms, mismatch, vote, seconds = reply.value
        self.seconds += seconds
        update: dict[str, Any] = {"checked_launches": trial.checked_launches + 1,
                                  "checked_draws": max(trial.checked_draws, 1)}
        if mismatch is not None:
            update.update(status="wrong", vote=vote, time_ms=None, reason=_mismatch_reason(
                Mismatch(**mismatch), "wrong output after the timing launches on input draw 1",
                draw=0))
        else:
            update["time_ms"] = ms
        return trial.model_copy(update=update)
