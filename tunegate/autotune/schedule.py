"""Where configs are measured: the pool's size for a task, and spreading work over its devices.

One run worker per device measures configs side by side (each sees only its own GPU); compile
workers, one per CPU core this process may use, compile ahead on a GPU host.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator

from ..space.space import Config
from .evaluator import Evaluator, Trial
from .pool import WorkerPool, cpu_cores, device_count
from .task import Task
from .worker import TaskRef

__all__ = ["DROPIN_COMPILE_AHEAD", "Sizing", "measure"]

# A drop-in call's configs are compiled ahead only from this many candidates: its compile
# workers each import the program's module once, which a list of two or three does not repay.
DROPIN_COMPILE_AHEAD = 4


class Sizing:
    """The pool one task gets, worked out once: the per-config timeout, the compile workers
    and the devices; `note` says why a task without a reference gets one device."""

    def __init__(self, task: Task, *, budget: int, timeout: float | None,
                 compile_workers: int | None, devices: int | None) -> None:
        from .runner import device_kind

        self.gpu = device_kind() == "gpu"
        self.timeout = timeout or (60.0 if self.gpu else 300.0)
        compilers = compile_workers if compile_workers is not None else cpu_cores()
        candidates = len(task.configs) if task.configs is not None else None
        compilers = min(compilers, budget, candidates or compilers)  # no idle ones
        compiles = task.launch is None or (  # (see TaskCompiler)
            task.compile_kwargs is not None and (candidates or 0) >= DROPIN_COMPILE_AHEAD)
        self.compilers = compilers if self.gpu and compiles else 0
        visible = device_count(self.gpu, devices)
        self.devices = 1 if task.reference is None else visible
        self.note = ("without a reference, configs are measured on one device: the vote on "
                     "the baseline's output needs every output in one worker"
                     if task.reference is None and visible > 1 else None)

    def pool(self, ref: TaskRef, *, seed: int, baseline: Config | None,
             deterministic: bool) -> WorkerPool:
        return WorkerPool(ref, seed=seed, baseline_json=baseline.key() if baseline else None,
                          compilers=self.compilers, deterministic=deterministic,
                          devices=self.devices, gpu=self.gpu, setup_timeout=self.timeout,
                          precompile=True)


def measure(evaluators: list[Evaluator], configs: list[Config], out_of_time: Callable[[], bool],
            work: Callable[[Evaluator, Config], Trial]) -> Iterator[Trial]:
    """`work` on each of `configs`, spread over the evaluators (one per device); trials in the
    order of `configs`, each exactly once; none started once out of time."""
    if len(evaluators) == 1:
        for config in configs:
            if out_of_time():
                return
            yield work(evaluators[0], config)
        return
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(configs)):
        todo.put(i)
    done: dict[int, Trial] = {}
    finished = threading.Condition()
    drained, failed = [0], []  # type: ignore[var-annotated]

    def drain(evaluator: Evaluator) -> None:
        try:
            while not out_of_time() and not failed:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    break
                trial = work(evaluator, configs[i])
                with finished:
                    done[i] = trial
                    finished.notify()
        except Exception as e:  # CheckFailed: the reference broke; the search must stop
            failed.append(e)
        finally:
            with finished:
                drained[0] += 1
                finished.notify()

    threads = [threading.Thread(target=drain, args=(e,), daemon=True) for e in evaluators]
    for t in threads:
        t.start()
    for i in range(len(configs)):
        with finished:
            while i not in done and drained[0] < len(threads):
                finished.wait()
        if failed:
            raise failed[0]
        if i in done:  # else never started: out of time
            yield done.pop(i)
