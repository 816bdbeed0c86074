"""The ways in: `tune(task)` for scripts, and the drop-in `autotune(...)` decorator (see `dropin`).

Both tune in isolated worker processes that re-import the task's module (by name when it is
importable, else by file), so a task or decorated kernel must be defined at module level.
Guard a script's own calls with `if __name__ == "__main__":`, as multiprocessing requires.
"""

from __future__ import annotations

import sys
from typing import Any

from .dropin import Autotuner, autotune
from .inputs import CallerData
from .task import Task
from .tuner import TuneError, TuneResult, Tuner
from .worker import TaskRef

__all__ = ["Autotuner", "CallerData", "autotune", "task_ref", "tune"]


def task_ref(obj: Any) -> TaskRef:
    """Where worker processes find the module-level `obj` (a Task, or a kernel with `.task`)."""
    kernel = getattr(obj, "kernel", obj)
    fn = getattr(kernel, "fn", kernel)
    module = sys.modules.get(getattr(fn, "__module__", ""))
    name = next((k for k, v in vars(module).items() if v is obj), None) if module else None
    file = getattr(module, "__file__", None)
    if module is None or name is None or file is None:
        raise TuneError("define the task (or decorated kernel) at module level of a file, so "
                        "that worker processes can import it")
    spec = getattr(module, "__spec__", None)
    by_name = spec is not None and spec.name != "__main__" and not spec.name.startswith(
        "tunegate_user_")
    return TaskRef(file, name, module=spec.name if by_name else None)


def tune(task: Task, **options: Any) -> TuneResult:
    """Tune a module-level `Task`; options are `Tuner`'s (policy, env, store, budget, …)."""
    return Tuner(task, task_ref(task), **options).run()
