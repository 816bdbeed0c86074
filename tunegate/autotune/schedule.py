"""Where configs are measured: the pool's size for a task, and spreading work over its devices.

One run worker per device measures configs side by side (each sees only its own GPU); compile
workers, one per CPU core this process may use less one per run worker, compile ahead on a
GPU host while the run workers time what is compiled.
"""

from __future__ import annotations

import queue
from typing import Callable, Iterable, Iterator

from .._threads import start as start_thread
from ..space.space import Config
from .evaluator import Evaluator, Trial
from .pool import WorkerPool, compile_cores, device_count
from .task import Task
from .worker import TaskRef

__all__ = ["DROPIN_COMPILE_AHEAD", "Sizing", "measure"]

# A drop-in call's configs are compiled ahead by compile workers of their own from this many
# candidates: each new compile worker imports the program's module once, which a list of two
# or three does not repay. A shorter list takes only kept workers that have imported it.
DROPIN_COMPILE_AHEAD = 4


class Sizing:
    """The pool one task gets, worked out once: the per-config timeout, the compile workers
    (with `loaded_only`, only kept ones that have imported the task's file) and the devices;
    `note` says why a task without a reference gets one device."""

    def __init__(self, task: Task, *, budget: int, timeout: float | None,
                 compile_workers: int | None, devices: int | None) -> None:
        from .runner import device_kind

        self.gpu = device_kind() == "gpu"
        self.timeout = timeout or (60.0 if self.gpu else 300.0)
        visible = device_count(self.gpu, devices)
        self.devices = 1 if task.reference is None else visible
        compilers = compile_workers if compile_workers is not None else \
            compile_cores(self.devices)
        candidates = len(task.configs) if task.configs is not None else None
        compilers = min(compilers, budget, candidates or compilers)  # no idle ones
        compiles = task.launch is None or task.compile_kwargs is not None  # (see TaskCompiler)
        one = candidates == 1  # its compile is the run worker's own, at the baseline's launch
        self.compilers = compilers if self.gpu and compiles and not one else 0
        self.loaded_only = task.launch is not None and (candidates or 0) < DROPIN_COMPILE_AHEAD
        self.note = ("without a reference, configs are measured on one device: the vote on "
                     "the baseline's output needs every output in one worker"
                     if task.reference is None and visible > 1 else None)

    def pool(self, ref: TaskRef, *, seed: int, baseline: Config | None,
             deterministic: bool) -> WorkerPool:
        return WorkerPool(ref, seed=seed, baseline_json=baseline.key() if baseline else None,
                          compilers=self.compilers, loaded_only=self.loaded_only,
                          deterministic=deterministic,
                          devices=self.devices, gpu=self.gpu, setup_timeout=self.timeout,
                          precompile=True)


def measure(evaluators: list[Evaluator], configs: Iterable[Config | Trial],
            out_of_time: Callable[[], bool], work: Callable[[Evaluator, Config], Trial]
            ) -> Iterator[Trial]:
    """`work` on each config of `configs`, taken as they come (compiled ahead, say) and spread
    over the evaluators (one per device); a `Trial` among them (a config already decided) is
    passed on as it is. Each trial as soon as it is done, each config exactly once; none
    started once out of time."""
    if len(evaluators) == 1:
        for item in configs:
            if isinstance(item, Trial):
                yield item
                continue
            if out_of_time():
                return
            yield work(evaluators[0], item)
        return
    todo: queue.SimpleQueue[Config | None] = queue.SimpleQueue()
    done: queue.SimpleQueue[Trial | None] = queue.SimpleQueue()  # None: a thread has ended
    failed: list[Exception] = []

    def drain(evaluator: Evaluator) -> None:
        try:
            while (config := todo.get()) is not None:
                if not out_of_time() and not failed:
                    done.put(work(evaluator, config))
        except Exception as e:  # CheckFailed: the reference broke; the search must stop
            failed.append(e)
        finally:
            done.put(None)

    threads = [start_thread(drain, e, name="tunegate-evaluator") for e in evaluators]
    ended = [0]

    def finished(wait: bool) -> Iterator[Trial]:
        """The trials done so far; with `wait`, every one, until every thread has ended."""
        while wait and ended[0] < len(threads) or not done.empty():
            trial = done.get()
            if trial is None:
                ended[0] += 1
            else:
                yield trial

    try:
        for item in configs:  # in this thread: a generator is never run by two at once
            if isinstance(item, Trial):
                yield item
            else:
                todo.put(item)
            yield from finished(wait=False)
            if failed:
                raise failed[0]
            if out_of_time():
                break
    finally:
        for _ in threads:
            todo.put(None)
    yield from finished(wait=True)
    if failed:
        raise failed[0]
