"""A run worker inside the tuning process, for a kernel no worker process can import.

A drop-in kernel defined inside a function (a test, a notebook cell, a factory) has no module
attribute that a worker could re-import, yet Triton's own autotuner tunes it. Rather than break
a program that stock Triton runs, its configs are measured and checked here, with the same
requests, checks and outcomes as in a worker process. What isolation gave is lost, exactly as
under Triton's autotuner: a config that hangs hangs the program (no timeout can stop it), and
one that poisons the CUDA context poisons the program's.
"""

from __future__ import annotations

import time
from typing import Any

from ..outcome import Outcome
from .messages import Reply, Request
from .workload import Setup, TaskRef

__all__ = ["LocalWorker"]


class LocalWorker:
    """The `Worker` interface over a `Runner` made in this process from `ref.local` (the
    in-memory object a worker would have imported). Never kept for another pool."""

    def __init__(self, setup: Setup, setup_timeout: float = 600.0) -> None:
        self.setup = setup
        self.setup_timeout = setup_timeout  # not enforceable here; kept for the interface
        self.env: dict[str, str] = {}
        self.loaded: dict[str, Any] = {}
        self.by_path: dict[str, bool] = {}
        self.problem_key: str | None = None
        self.kind: str | None = None
        self.device_facts: tuple[str, int] | None = None
        self.arg_specs: dict[str, Any] | None = None  # see Runner.arg_specs
        self._runner: Any = None
        self._pending = False

    @property
    def ref(self) -> TaskRef:
        return self.setup.ref

    @property
    def pid(self) -> int | None:
        return None

    def alive(self) -> bool:
        return self._pending or self._runner is not None

    @property
    def started(self) -> bool:
        """Launched or loaded (as `Worker.started`)."""
        return self.alive()

    def idle(self) -> bool:
        return False  # never handed to the next pool: its task lives in this one

    def launch(self) -> None:
        self._pending = True

    def start(self) -> None:
        self.launch()
        self.wait()

    def wait(self) -> None:
        """Make the runner (inputs, reference or baseline on draw 0); raises as a worker's
        setup does (`BaselineFailed`, `WorkerSetupError`)."""
        if not self._pending:
            return
        self._pending = False
        from .backend import interpret_without_gpu
        from .worker import BaselineFailed, WorkerSetupError
        from .worker_child import NotReady, build_ahead, ready

        interpret_without_gpu()
        runner, message = ready(self.setup, self.ref.local)
        if isinstance(message, NotReady):
            raise (BaselineFailed if message.baseline else WorkerSetupError)(message.error)
        build_ahead(runner)
        self._runner = runner
        self.problem_key, self.kind, self.device_facts = message.problem_key, message.kind, \
            message.device_facts
        self.arg_specs = message.arg_specs

    def request(self, request: Request, timeout: float = 120.0) -> Reply:
        """Run one operation on one config here; never raises for what the kernel does."""
        from .runner import BaselineError
        from .worker_child import classify

        if not self.alive():
            self.start()
        self.wait()
        start = time.perf_counter()
        try:
            value = request.run(self._runner)
        except BaselineError as e:
            return Reply(Outcome.BASELINE_ERROR, error=str(e),
                         seconds=time.perf_counter() - start)
        except Exception as e:
            return Reply(classify(e), error=f"{type(e).__name__}: {str(e).strip()[:2000]}",
                         seconds=time.perf_counter() - start)
        return Reply(Outcome.OK, value=value, seconds=time.perf_counter() - start)

    def retask(self, setup: Setup) -> None:
        self.setup, self._runner = setup, None
        self.launch()

    def unload(self) -> None:
        self._runner = None

    def stderr_tail(self, lines: int = 12) -> str:
        return ""  # its output went to the program's own stderr

    def stop(self) -> None:
        self._runner, self._pending = None, False

    def close(self) -> None:
        self.stop()
