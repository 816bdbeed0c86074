"""Configs compiled in parallel by a pool's compile workers, answered as each is compiled.

A stream starts compiling as it is made, so a tuning can make one while its run worker still
starts (in the drop-in, the run worker compiles and launches the baseline config on the call's
data before it is ready: seconds for a large kernel) and read the answers once it is ready to
time. While the answers are read and no compile worker has loaded the task yet, a config comes
without an answer, for the run worker to compile at its first launch: reading never waits for
a compile worker still importing a large library.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Collection, Iterator, Mapping

from ..space.space import Config
from .local import LocalWorker
from .messages import Compile, Reply
from .worker import Worker

__all__ = ["COMPILER_GRACE_S", "CompileStream"]

# How long a reader waits for a compile worker still loading the task before it hands the run
# worker a config to compile itself.
COMPILER_GRACE_S = 0.05


class CompileStream:
    """`configs` compiled for `target` by `workers`, each taking the next config once it has
    loaded the task (its event in `loaded` is set) and whenever it is free, specialised on
    `specs` (see `Runner.arg_specs`) or, where None, on the arguments the worker has (a
    drop-in call's, see `TaskRef.compiling`, or inputs it makes)."""

    def __init__(self, workers: list[Worker | LocalWorker],
                 loaded: Mapping[Worker | LocalWorker, threading.Event],
                 configs: Collection[Config], timeout: float, target: str | None,
                 specs: dict[str, Any] | None) -> None:
        self.configs = frozenset(configs)
        self.target = target
        self._todo = deque(dict.fromkeys(configs))  # in order, once each
        self._lock = threading.Lock()
        self._done: queue.SimpleQueue[tuple[Config, Reply] | None] = queue.SimpleQueue()
        self._ready = threading.Event()  # a compile worker has loaded the task
        if any(loaded.get(w) is None or loaded[w].is_set() for w in workers):
            self._ready.set()  # already: the reader never hands a config to the run worker
        self._stop = threading.Event()
        self._workers = len(workers)
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(workers)),
                                        thread_name_prefix="tunegate-compile")
        for worker in workers:
            self._pool.submit(self._serve, worker, loaded.get(worker), timeout, specs)

    def _serve(self, worker: Worker | LocalWorker, loaded: threading.Event | None,
               timeout: float, specs: dict[str, Any] | None) -> None:
        try:
            while loaded is not None and not loaded.wait(COMPILER_GRACE_S):
                if self._stop.is_set() or not self._waiting(None):  # all taken: not needed
                    return
            if not worker.alive():  # dropped: it could not load the task
                return
            self._ready.set()
            while not self._stop.is_set() and (config := self._take(None)) is not None:
                self._done.put((config, worker.request(Compile(config, self.target, specs),
                                                       timeout)))
        finally:
            self._done.put(None)

    def _take(self, wanted: Collection[Config] | None) -> Config | None:
        """The next config not yet taken (of `wanted`, if given)."""
        with self._lock:
            for config in self._todo:
                if wanted is None or config in wanted:
                    self._todo.remove(config)
                    return config
            return None

    def _waiting(self, wanted: Collection[Config] | None) -> bool:
        """Whether a config (of `wanted`, if given) is still to be taken."""
        with self._lock:
            return any(wanted is None or c in wanted for c in self._todo)

    def replies(self, wanted: Collection[Config] | None = None
                ) -> Iterator[tuple[Config, Reply | None]]:
        """Each config of `wanted` (by default all) with its answer as soon as it is compiled,
        or with None where the run worker is to compile it; then (or left early) the stream
        is closed. Read once."""
        left = set(self.configs if wanted is None else wanted) & self.configs
        with self._lock:  # the wanted ones first
            self._todo = deque(sorted(self._todo, key=lambda c: c not in left))
        ended = 0  # serving threads that have ended
        try:
            while left and ended < self._workers:
                wait = None if self._ready.is_set() or not self._waiting(left) \
                    else COMPILER_GRACE_S
                try:
                    item = self._done.get(timeout=wait)
                except queue.Empty:  # none has loaded the task yet: the run worker takes one
                    config = self._take(left)
                    if config is not None:
                        left.discard(config)
                        yield config, None
                    continue
                if item is None:
                    ended += 1
                elif item[0] in left:
                    left.discard(item[0])
                    yield item
            while (config := self._take(left)) is not None:  # every compile worker was dropped
                left.discard(config)
                yield config, None
        finally:
            self.close()

    def close(self) -> None:
        """Take no more configs and wait for the compiles in flight (a worker must not be
        handed on with an answer unread)."""
        self._stop.set()
        self._pool.shutdown(wait=True)
