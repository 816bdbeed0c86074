"""Where worker processes find a task or a drop-in kernel: a `TaskRef`, by module name when the
module is importable, else by file. The one place a `FILE:NAME` / `module:NAME` reference or a
live object becomes a task and a `TaskRef`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..kernelfile import chain, import_reference, importable_name, jit_function, \
    python_function, resolve, split_reference
from .task import Args, Task
from .tuner import TuneError
from .worker import TaskRef

__all__ = ["from_config_list", "kernel_task", "locate", "resolve_task", "task_ref"]


def task_ref(obj: Any) -> TaskRef:
    """Where worker processes find the module-level `obj` (a Task, or a kernel with `.task`)."""
    fn = python_function(getattr(obj, "kernel", obj))
    module = sys.modules.get(getattr(fn, "__module__", ""))
    name = next((k for k, v in vars(module).items() if v is obj), None) if module else None
    file = getattr(module, "__file__", None)
    if module is None or name is None or file is None:
        raise TuneError("define the task (or decorated kernel) at module level of a file, so "
                        "that worker processes can import it")
    return TaskRef(file, name, module=importable_name(module))


def _ref_of(reference: str, found: Any) -> TaskRef:
    """Where worker processes find `found`, the object `reference` names: by module name when
    it is importable, else by file."""
    left, name = split_reference(reference)
    module = import_reference(left)  # imported already by `resolve`: this is a lookup
    if not name or "." in name:
        name = next((k for k, v in vars(module).items() if v is found), "")
    if not name:  # an attribute of an attribute: found through its kernel's module
        return task_ref(found)
    return TaskRef(str(Path(module.__file__ or left).resolve()), name,
                   module=importable_name(module))


def resolve_task(reference: str) -> tuple[Task, TaskRef, str]:
    """The Task that `FILE[:NAME]` or `module:NAME` names (or the one a kernel decorated with
    `tunegate.autotuned` carries), where workers find it, and `FILE:NAME` to show."""
    file, found = resolve(reference, Task)
    task = getattr(found, "task", found)
    if not isinstance(task, Task):
        raise UsageError(f"{reference} names a {type(found).__name__}, not a tunegate Task "
                         "(or a kernel decorated with tunegate.autotuned)")
    ref = _ref_of(reference, found)
    return task, ref, f"{file}:{ref.name}"


def kernel_task(reference: str) -> tuple[Any, Task | None]:
    """The kernel `FILE:NAME` names and its task, if it has one: a Task's own, or for a
    `triton.autotune`d kernel one over its config list (its space; it cannot be run)."""
    _, obj = resolve(reference, Task)
    obj = getattr(obj, "task", obj)  # a function decorated with tunegate's legacy decorator
    if isinstance(obj, Task):
        return obj.kernel, obj
    configs = next((k.configs for k in chain(obj) if hasattr(k, "configs")), None)
    kernel = jit_function(obj)
    if not hasattr(kernel, "fn") and not callable(kernel):
        raise UsageError(f"{reference} is a {type(obj).__name__}, not a kernel or a tunegate "
                         "Task")
    if not configs:
        return kernel, None
    return kernel, Task(name=kernel.__name__, kernel=kernel, configs=list(configs), grid=(1,),
                        make_inputs=_no_inputs, outputs=())


def from_config_list(task: Task) -> bool:
    """Whether `task` is one `kernel_task` made from an autotuned kernel's config list: the
    kernel's real tasks are the calls the drop-in tuned, each with its own fingerprint."""
    return task.make_inputs is _no_inputs


def _no_inputs(seed: int) -> Args:
    raise UsageError("this task was made from a kernel's config list and has no inputs")


def locate(tuner: Any) -> tuple[TaskRef | None, int, str]:
    """Where a worker re-imports `tuner`: (reference, depth in its `.fn` chain, why not)."""
    base = python_function(tuner)
    names = dict.fromkeys(n for n in (base.__module__, getattr(tuner, "defined_in", None)) if n)
    modules = [sys.modules[n] for n in names if n in sys.modules]
    if not modules:
        return None, 0, f"its module {base.__module__!r} is not imported"
    # A kernel made by `wrap()` is found through the Triton autotuner it was made from.
    targets = [t for t in (tuner, getattr(tuner, "origin", None)) if t is not None]
    for module in modules:
        for name, value in list(vars(module).items()):
            links = chain(value) if hasattr(value, "fn") else []
            depth = next((i for i, link in enumerate(links) if any(link is t for t in targets)),
                         None)
            if depth is None:
                continue
            file = getattr(module, "__file__", None) or ""
            if importable_name(module):
                return TaskRef(file, name, module=importable_name(module)), depth, ""
            if file:
                return TaskRef(file, name), depth, ""
            return None, 0, f"module {module.__name__!r} has no file to import"
    return None, 0, (f"{base.__name__} is not bound to a name at module level of "
                     f"{' or '.join(map(repr, names))}")
