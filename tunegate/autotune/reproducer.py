"""A reproducer: a small kernel and task that shows one bug, and how the bug shows.

A policy rule names one (`reproducer = "store_load"`); `tunegate policy verify` runs its task over
the configs the rule covers, against the baseline config with the rule's features off, in
isolated workers as tuning does. A reproducer file defines `REPRODUCER = Reproducer(...)` at
module level; worker processes load its `.task` from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import TunegateError
from ..outcome import Outcome
from ..policy.reproducers import BUILTIN_DIR, reproducer_file
from ..policy.rules import Rule
from .task import Task
from .worker import TaskRef

__all__ = ["Reproducer", "ReproducerError", "load_reproducer"]

class ReproducerError(ValueError, TunegateError):
    """A rule's reproducer file cannot be loaded or defines no usable REPRODUCER."""


class Reproducer(BaseModel):
    """`task` shows the bug in the configs the rule covers; `shows` says how: the trial statuses
    of a config that has it (wrong output, a crashed worker, a compile error). `backends` are
    where the bug can show ('gpu', 'interpreter': a bug of compiled code only never shows
    under the interpreter). `draws` input draws are checked per config; an intermittent bug
    also needs `launches` (> 0) poisoned launches of each config that passed them."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    task: Task
    shows: tuple[Outcome, ...] = Field(min_length=1)
    backends: tuple[Literal["gpu", "interpreter"], ...] = ("gpu",)
    draws: int = Field(default=2, ge=1)
    launches: int = Field(default=0, ge=0)


def load_reproducer(rule: Rule) -> tuple[Reproducer, TaskRef]:
    """The rule's reproducer and where isolated workers find it."""
    from ..kernelfile import load_module

    assert rule.reproducer is not None
    file = reproducer_file(rule.reproducer, rule.source.file if rule.source else None)
    if file is None:
        raise ReproducerError(f"rule {rule.id!r} at {rule.where()}: reproducer "
                              f"{rule.reproducer!r} not found")
    builtin = file.parent == BUILTIN_DIR
    module_name = f"tunegate.reproducers.{file.stem}" if builtin else None
    try:
        if module_name:
            import importlib

            module = importlib.import_module(module_name)
        else:
            module = load_module(file)
    except Exception as e:  # a broken file: name it, never a bare traceback
        raise ReproducerError(f"rule {rule.id!r}: reproducer {file} cannot be imported: "
                              f"{type(e).__name__}: {e}") from None
    found = getattr(module, "REPRODUCER", None)
    if not isinstance(found, Reproducer):
        raise ReproducerError(f"rule {rule.id!r}: {file} defines no `REPRODUCER = "
                              "Reproducer(...)` at module level")
    return found, TaskRef(str(Path(file)), "REPRODUCER", module=module_name)
