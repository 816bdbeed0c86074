"""The tuner's worker pool: one isolated run worker, and on a GPU compile workers beside it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..space.space import Config
from .worker import Reply, TaskRef, Worker, WorkerSetupError

__all__ = ["WorkerPool"]


def _try_start(worker: Worker) -> WorkerSetupError | None:
    """Start a worker; the error instead of raising, so several can start in threads."""
    try:
        worker.start()
    except WorkerSetupError as e:
        return e
    return None


class WorkerPool:
    """Starts the run worker and `compilers` compile workers at once; `run` takes the requests
    that launch kernels, `compile_all` spreads compile requests over the compile workers."""

    def __init__(self, ref: TaskRef, *, seed: int, baseline_json: str | None, compilers: int,
                 deterministic: bool) -> None:
        self.run = Worker(ref, seed=seed, baseline_json=baseline_json,
                          deterministic=deterministic)
        self.compilers = [Worker(ref, seed=seed, baseline_json=baseline_json,
                                 deterministic=deterministic) for _ in range(compilers)]

    def start(self) -> None:
        """Start every worker; raises the run worker's setup error (a failing reference or
        baseline among them), drops compile workers that did not start."""
        with ThreadPoolExecutor(max_workers=1 + len(self.compilers)) as pool:
            errors = list(pool.map(_try_start, [self.run, *self.compilers]))
        if errors[0] is not None:
            self.close()
            raise errors[0]
        self.compilers = [w for w, err in zip(self.compilers, errors[1:]) if err is None]

    def compile_all(self, configs: list[Config], timeout: float) -> list[tuple[Config, Reply]]:
        """Compile `configs` in parallel; each with its reply. Without compile workers, none."""
        n = len(self.compilers)
        if n == 0:
            return []
        jobs = [configs[i::n] for i in range(n)]

        def compile_part(i: int) -> list[tuple[Config, Reply]]:
            return [(c, self.compilers[i].request("compile", c.key(), None, timeout))
                    for c in jobs[i]]

        with ThreadPoolExecutor(max_workers=n) as pool:
            return [r for part in pool.map(compile_part, range(n)) for r in part]

    def close(self) -> None:
        for w in (self.run, *self.compilers):
            w.close()
