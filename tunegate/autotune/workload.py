"""What a worker loads: where it finds the task, and the seed, baseline and determinism."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any

from . import steering

__all__ = ["Setup", "TaskRef"]


@dataclass(frozen=True)
class TaskRef:
    """Where a worker finds the task: an attribute of a module, imported by name or by file.

    `module` (a dotted name) is used when the kernel lives in an importable package, so its
    relative imports work; else `file` is imported by path. `call` (a drop-in `CallSite`)
    builds the task from the named autotuned kernel and one call's details. `local` is the
    object itself, for a kernel no worker can import: it is tuned in this process
    (`local.LocalWorker`), and the ref is never sent to a worker.
    """

    file: str
    name: str
    inputs: Any = None  # optional picklable callable(seed, device) replacing make_inputs
    module: str | None = None
    call: Any = None
    local: Any = None

    @property
    def has_call(self) -> bool:
        """Whether `inputs` is a call's data (`CallerData`), which compile workers get as its
        arguments' dtypes and values alone (`compiling`)."""
        return getattr(self.inputs, "specs", None) is not None

    def compiling(self) -> "TaskRef":
        """This ref as a compile worker loads it: a call's arguments as their dtypes and values,
        without the tensors' contents (`CallerData.specs`)."""
        return replace(self, inputs=self.inputs.specs()) if self.has_call else self

    def on_host(self) -> "TaskRef":
        """This ref for a worker that cannot open this process's GPU memory: a call's tensors
        as host copies (`CallerData.on_host`)."""
        move = getattr(self.inputs, "on_host", None)
        return replace(self, inputs=move()) if move is not None else self

    def here(self, obj: Any) -> "TaskRef":
        """This ref, its task made in this process from `obj` itself (the outermost object
        of the `.fn` chain that `call` walks), for a `LocalWorker`."""
        call = replace(self.call, depth=0) if self.call is not None else None
        return replace(self, call=call, local=obj)


@dataclass(frozen=True)
class Setup:
    """What a worker loads: the task, the input seed, the baseline config and whether repeated
    launches must agree bit for bit. A live worker can be sent a new one (see `Worker.retask`).
    `sys_path`, `cwd` and `late_env` are the tuning process's when it made the setup: a worker
    started earlier (a spare, a kept one) imports the task from where the program looks now,
    with the steering variables it reads while it works as they are now (`steering`)."""

    ref: TaskRef
    seed: int
    baseline_json: str | None
    deterministic: bool
    sys_path: tuple[str, ...] = ()
    cwd: str = ""
    late_env: tuple[tuple[str, str], ...] = ()

    def placed(self) -> "Setup":
        """This setup with the current process's import path, folder and late-read steering
        variables."""
        return replace(self, sys_path=tuple(sys.path), cwd=os.getcwd(),
                       late_env=steering.late())
