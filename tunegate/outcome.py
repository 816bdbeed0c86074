"""A trial's outcome: the one vocabulary of the worker, evaluator, store, reasons and renderer.

Like optuna's TrialState: every place that says how a config fared uses these members. The
values are the words stored in the tuning store's `status` column (and shown by `--json`), so
stores written before this enum existed read unchanged.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Outcome"]


class Outcome(StrEnum):
    """How one request or trial ended."""

    OK = "ok"
    WRONG = "wrong"  # its output failed an accuracy check
    ERROR = "error"  # it raised (not a compile error, not a crash)
    COMPILE_ERROR = "compile_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # its worker died, or its CUDA context is poisoned
    BASELINE_ERROR = "baseline_error"  # the reference or baseline failed: nothing was judged

    @property
    def failed(self) -> bool:
        """Whether the kernel failed to run (as opposed to ran and was judged)."""
        return self in _FAILED

    @property
    def headline(self) -> str:
        """What `policy explain` says of a config that tuning removed this way ("" for ok)."""
        return _HEADLINES.get(self, "")

    def what(self, during: str) -> str:
        """The outcome in words, as a reason's summary starts: `during` names the operation."""
        return _WHAT.get(self, f"raised during {during}")


_FAILED = frozenset({Outcome.ERROR, Outcome.COMPILE_ERROR, Outcome.TIMEOUT, Outcome.CRASHED})
_HEADLINES = {Outcome.WRONG: "REJECTED", Outcome.TIMEOUT: "TIMED OUT",
              Outcome.COMPILE_ERROR: "FAILED", Outcome.ERROR: "FAILED", Outcome.CRASHED: "FAILED"}
_WHAT = {Outcome.COMPILE_ERROR: "failed to compile", Outcome.TIMEOUT: "timed out",
         Outcome.CRASHED: "crashed its worker"}
