"""Rows of the tuning store read back: what a trial belongs to, a stored best, a trial's history.

A row damaged by hand (config or reason not JSON, an unknown status, a number stored as text)
is `Damaged`, which each reader turns into a skip with a warning or a `StoreError` naming it.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import TunegateError
from ..outcome import Outcome
from ..reasons import Reason
from ..space.space import Config

__all__ = ["Best", "Damaged", "TrialKey", "config_of", "history_entry", "reason_of", "typed"]

DAMAGED_REASON = Reason(kind=Outcome.WRONG, summary="failed an accuracy check (its stored "
                        "reason is damaged)")


@dataclass(frozen=True)
class TrialKey:
    """What a trial belongs to."""

    run: str
    task: str
    kernel: str
    kernel_name: str
    problem: str
    env: str
    policy: str


@dataclass(frozen=True)
class Best:
    """A stored best config; `partial` when it comes from a run stopped before its budget was
    spent (`measured` of `budget` configs): the next run searches on instead of reusing it."""

    config: Config
    policy: str
    time_ms: float | None
    timing: str | None
    partial: bool = False
    measured: int | None = None
    budget: int | None = None
    task: str = ""
    problem: str = ""
    env: str = ""
    kernel_name: str = ""
    created: float = 0.0

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> "Best":
        """The best a row holds; `Damaged` if a value is not what tunegate writes there."""
        for col in ("policy", "task", "problem", "env", "kernel_name"):
            typed(row, col, str, nullable=False)
        when(typed(row, "created", (int, float), nullable=False))  # a time a clock can show
        return cls(config_of(row["config"]), row["policy"], typed(row, "time_ms", (int, float)),
                   typed(row, "timing", str), bool(typed(row, "partial", int)),
                   typed(row, "measured", int), typed(row, "budget", int), row["task"],
                   row["problem"], row["env"], row["kernel_name"],
                   row["created"])


class Damaged(ValueError, TunegateError):
    """A stored value that is not what tunegate writes there (hand-edited or damaged)."""


def typed(row: sqlite3.Row, col: str, kind: type | tuple[type, ...],
           nullable: bool = True) -> Any:
    """`row[col]`, checked to be a `kind` (or NULL where allowed): a stored number may be text."""
    value = row[col]
    if (value is None and nullable) or (isinstance(value, kind) and type(value) is not bool):
        return value
    raise Damaged(f"{col} is {value!r}")


def config_of(text: Any) -> Config:
    """The config a row's JSON holds."""
    try:
        return Config.from_json(text)
    except (ValueError, TypeError, AttributeError, RecursionError):
        raise Damaged(f"config is not a JSON object of values: {str(text)[:60]!r}") from None


def reason_of(text: Any) -> Reason | None:
    """The reason a row's JSON holds, if any."""
    if text is None:
        return None
    try:
        return Reason.model_validate_json(text)
    except (ValidationError, ValueError, TypeError, RecursionError):
        raise Damaged(f"reason is not a stored Reason: {str(text)[:60]!r}") from None


def status_of(value: Any) -> Outcome:
    """A row's status: the outcome whose value it holds."""
    try:
        return Outcome(value)
    except ValueError:
        raise Damaged(f"status is {value!r}") from None


def when(created: float) -> str:
    """A stored time as a person reads it; `Damaged` if it is no time a clock can show."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
    except (OverflowError, OSError, ValueError):
        raise Damaged(f"created is {created!r}") from None


def history_entry(db: sqlite3.Connection, r: sqlite3.Row, task: str | None) -> dict[str, Any]:
    """One trial row as `history` shows it; `Damaged` if a value is not what tunegate writes."""
    status, time_ms = status_of(r["status"]), typed(r, "time_ms", (int, float))
    entry: dict[str, Any] = {
        "when": when(typed(r, "created", (int, float), nullable=False)),
        "run": typed(r, "run", str, nullable=False), "problem": r["problem"],
        "status": status, "time_ms": time_ms, "timing": typed(r, "timing", str),
        "current": task is None or r["task"] == task,
        "checked_draws": typed(r, "checked_draws", int, nullable=False),
        "checked_launches": typed(r, "checked_launches", int, nullable=False),
    }
    reason = reason_of(r["reason"]) if r["reason"] else None
    if status is Outcome.OK and time_ms is not None:
        rank, of = db.execute(
            "SELECT SUM(time_ms < ?) + 1, COUNT(*) FROM trials WHERE run=? AND "
            f"status='{Outcome.OK.value}' AND problem=? AND time_ms IS NOT NULL",
            (time_ms, r["run"], r["problem"])).fetchone()
        entry["rank"], entry["of"] = rank, of
        entry["summary"] = f"measured {time_ms:.4g} ms ({entry['timing']}), rank {rank} of {of}"
    else:
        entry["summary"] = f"{status}: " + (reason.summary if reason else "")
    if reason is not None:
        entry["evidence"] = reason.evidence
        entry["reason"] = reason.model_dump(mode="json")
    return entry
