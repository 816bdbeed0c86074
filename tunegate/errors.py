"""The one base of every error tunegate raises for bad input or a failed run.

Each concept keeps its own error type (and its built-in base: `ValueError` for bad input,
`RuntimeError` for a run that failed); all of them also derive from `TunegateError`, so a caller
can catch tunegate's errors in one clause, and the CLI maps them to exit codes in one place
(`tunegate.cli._exit`).
"""

from __future__ import annotations

__all__ = ["TunegateError", "UsageError"]


class TunegateError(Exception):
    """Base of tunegate's own errors; the message names the bad file, rule, config or value."""


class UsageError(ValueError, TunegateError):
    """Bad input that is not one of the library's own errors (a command-line value, a
    reference that names the wrong kind of object)."""
