"""The one base of every error tunegate raises for bad input or a failed run.

Each concept keeps its own error type (and its built-in base, such as `ValueError`); all of them
also derive from `TunegateError`, so a caller can catch tunegate's errors in one clause.
"""

from __future__ import annotations

__all__ = ["TunegateError"]


class TunegateError(Exception):
    """Base of tunegate's own errors; the message names the bad file, rule, config or value."""
