"""What a tuning run is given and gives back: its budget, its result, the error it ends with."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..errors import TunegateError
from ..outcome import Outcome
from ..space.space import Config
from .evaluator import Trial

__all__ = ["Budget", "TuneError", "TuneInterrupted", "TuneResult"]


class TuneError(RuntimeError, TunegateError):
    """Tuning cannot start or produced no correct config; the message says why, and `result`
    holds what was measured until then (None if nothing could start)."""

    def __init__(self, message: str, result: "TuneResult | None" = None) -> None:
        super().__init__(message)
        self.result = None if result is None else result.model_copy(update={"error": message})


class BaselinesFailed(TuneError):
    """No baseline config could run here, so nothing was checked; `raised`: each raised a
    Python exception (the program's own code: a hook, a launch grid, a compile error), none
    crashed its worker."""

    def __init__(self, message: str, raised: bool) -> None:
        super().__init__(message)
        self.raised = raised


class TuneInterrupted(KeyboardInterrupt):
    """A Ctrl-C that stopped a tuning (`Tuner(on_interrupt="raise")`): what was measured is
    stored, and `result` holds it."""

    def __init__(self, result: "TuneResult") -> None:
        super().__init__()
        self.result = result


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
    best: Config | None
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

    def count(self, status: Outcome | str) -> int:
        return sum(1 for t in self.trials if t.status == status)
