"""What the tuner asks a worker and what comes back: one typed request and result per operation.

Requests and results carry `Config`, `Mismatch` and `StressReport` objects; they are pickled
only at the process boundary (the worker's pipe), never turned into dicts and back. Each
request runs itself on the worker's runner (a `Runner`, or a `TaskCompiler` for `Compile`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from ..outcome import Outcome
from ..space.space import Config
from .mismatch import Mismatch
from .stress import StressCheck, StressReport

__all__ = ["Check", "CheckResult", "Compile", "CompileResult", "Reply", "Request", "Stress",
           "Time", "TimeResult"]


@dataclass(frozen=True)
class CheckResult:
    """The first mismatch over some draws, on which draw, its vote (on draw 0 without a
    reference: which group of agreeing wrong outputs), the seconds the check took and how many
    launches it compared."""

    mismatch: Mismatch | None
    draw: int
    vote: str | None
    seconds: float
    launches: int


@dataclass(frozen=True)
class TimeResult:
    """Median milliseconds per launch, and the check of what the timing launches left (if
    `compared`)."""

    ms: float
    mismatch: Mismatch | None
    vote: str | None
    seconds: float  # comparing the output (not the timing)
    compared: bool = True


@dataclass(frozen=True)
class CompileResult:
    """A compile worker's answer: the shared memory per block the kernel needs, if known."""

    shared_bytes: int | None


@dataclass(frozen=True)
class Check:
    """`draws` input draws from `first`, one launch each (after a warm-up launch)."""

    config: Config
    draws: int
    first: int = 0

    def run(self, runner: Any) -> CheckResult:
        runner.warm(self.config)
        return runner.check(self.config, self.draws, self.first)


@dataclass(frozen=True)
class Stress:
    """The stress check of `settings` (after a warm-up launch)."""

    config: Config
    settings: StressCheck

    def run(self, runner: Any) -> StressReport:
        runner.warm(self.config)
        return runner.stress(self.config, self.settings)


@dataclass(frozen=True)
class Time:
    """The timing (`full`, or the short one that picks contenders), its output checked if
    `compare`."""

    config: Config
    full: bool = True
    compare: bool = True

    def run(self, runner: Any) -> TimeResult:
        return runner.time(self.config, full=self.full, compare=self.compare)


@dataclass(frozen=True)
class Compile:
    """Compile without running, for `target` ("backend:arch:warp_size") where the worker sees
    no GPU, specialised on `arg_specs` (the run worker's, see `Runner.arg_specs`) if given."""

    config: Config
    target: str | None = None
    arg_specs: dict[str, Any] | None = None

    def run(self, runner: Any) -> CompileResult:
        shared = runner.compile(self.config, self.target, self.arg_specs)
        return CompileResult(shared if isinstance(shared, int) else None)


Request = Union[Check, Stress, Time, Compile]


@dataclass
class Reply:
    """What one request produced: its outcome, and its result when the outcome is ok."""

    status: Outcome
    value: CheckResult | TimeResult | StressReport | CompileResult | None = None
    error: str | None = None
    seconds: float = 0.0
