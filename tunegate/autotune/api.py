"""The ways in: `tune(task)` for scripts and the drop-in `autotune(...)` decorator (see `dropin`).

Both tune in isolated worker processes that re-import the task's module (by name when it is
importable, else by file: see `refs`), so a task or decorated kernel must be defined at module
level. Guard a script's own calls with `if __name__ == "__main__":`, as multiprocessing requires.
"""

from __future__ import annotations

from typing import Any

from .dropin import Autotuner, autotune
from .inputs import CallerData
from .refs import kernel_task, resolve_task, task_ref
from .task import Task
from .tuner import TuneResult, Tuner

__all__ = ["Autotuner", "CallerData", "autotune", "kernel_task", "resolve_task", "task_ref",
           "tune"]


def tune(task: Task, **options: Any) -> TuneResult:
    """Tune a module-level `Task`; options are `Tuner`'s (policy, env, store, budget, …)."""
    return Tuner(task, task_ref(task), **options).run()
