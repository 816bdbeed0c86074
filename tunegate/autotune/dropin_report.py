"""What the drop-in tuned in this process: one record, and one log line, per tuning.

`tunegate run` prints the records as a table when the program ends (`_render.tunings_table`);
a program can read them with `tunings()`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..outcome import Outcome

__all__ = ["Tuning", "record", "tell_triton", "tunings"]

log = logging.getLogger("tunegate")

_LOCK = threading.Lock()
_TUNINGS: list["Tuning"] = []


@dataclass(frozen=True)
class Tuning:
    """One key of one kernel, tuned (or not: `error`) by the drop-in."""

    kernel: str
    key: str  # Triton's tuning key, as `name=value` text
    configs: int  # candidates after Triton's own pruning
    excluded: dict[str, int] = field(default_factory=dict)  # rule id -> configs it excluded
    rejected: dict[str, int] = field(default_factory=dict)  # trial status -> configs
    winner: str | None = None  # the chosen config, as `key=value` text
    time_ms: float | None = None
    seconds: float = 0.0
    reused: bool = False  # a stored best, not a new search
    error: str | None = None
    stored_as: tuple[str, str, str] | None = None  # the best's store key: task, problem, env

    def line(self) -> str:
        """The log line: kernel, key, winner (or why none), time, excluded and rejected."""
        head = f"{self.kernel} [{self.key or 'no key'}]"
        if self.winner is None:
            return f"{head}: not tuned: {self.error or 'no config is left'}" + self._lost()
        time = f"{self.time_ms:.4g} ms" if self.time_ms is not None else "not timed"
        how = "reused the stored best" if self.reused else f"tuned in {self.seconds:.1f} s"
        return f"{head}: {how}: {self.winner} ({time}){self._lost()}"

    def _lost(self) -> str:
        parts = [f"{n} of {self.configs} excluded by the policy ({', '.join(self.excluded)})"
                 for n in [sum(self.excluded.values())] if n]
        parts += [f"{n} rejected ({', '.join(f'{c} {s}' for s, c in self.rejected.items())})"
                  for n in [sum(self.rejected.values())] if n]
        return "; " + "; ".join(parts) if parts else ""


def record(kernel: str, key: str, configs: int, excluded: list[str], result: Any = None,
           winner: str | None = None, error: str | None = None) -> Tuning:
    """Keep and log one tuning. `excluded` has one rule id per excluded config; `result` is the
    Tuner's TuneResult (None when no search ran)."""
    trials = result.trials if result is not None else []
    failed: dict[Any, str] = {}  # per config, its first failure (a stored best's re-check and
    for t in trials:  # the search after it may both find it wrong: one rejected config)
        if t.status is not Outcome.OK:
            failed.setdefault(t.config, t.status.value)
    tuning = Tuning(kernel=kernel, key=key, configs=configs, excluded=dict(Counter(excluded)),
                    rejected=dict(Counter(failed.values())),
                    winner=winner, time_ms=getattr(result, "best_time_ms", None),
                    seconds=getattr(result, "wall_seconds", 0.0),
                    reused=bool(getattr(result, "reused", False)), error=error,
                    stored_as=(result.task_fingerprint, result.problem, result.env)
                    if result is not None and winner is not None else None)
    with _LOCK:
        _TUNINGS.append(tuning)
    log.info("%s", tuning.line())  # a failed tuning also raises: its error says the rest
    if result is not None and not tuning.reused:
        log.debug("%s [%s]: %.1f s: %s", kernel, key, tuning.seconds, _where_time_went(result))
    return tuning


def _where_time_went(result: Any) -> str:
    """The tuning's seconds by phase, for whoever wonders why a tuning took long."""
    return ", ".join(f"{name} {getattr(result, f'{name}_seconds', 0.0):.2f} s"
                     for name in ("startup", "compile", "timing", "check"))


def tunings() -> list[Tuning]:
    """Every tuning of this process, oldest first."""
    with _LOCK:
        return list(_TUNINGS)


def tell_triton(tuner: Any, key: tuple[Any, ...], chosen: Any, listed: Any,
                result: Any | None) -> None:
    """What Triton's own autotuner leaves and tells after a key is tuned, for the tools that
    read it: `configs_timings` (each listed config's time, in Triton's form: [median, 20th and
    80th percentile] ms, here the one time measured thrice; infinity for a config excluded,
    rejected or not measured; `bench_time` is read from the result), the
    TRITON_PRINT_AUTOTUNING lines (a line per listed config, then the summary) and
    `triton.knobs.autotuning.listener`, where this Triton has them. `result` is None where
    one config was used without measuring it (as Triton: nothing measured, a cache hit)."""
    import triton

    from ..kernelfile import jit_function

    hit = result is None or result.reused
    if result is not None:
        times = {t.config.key(): t.time_ms for t in result.trials
                 if t.status is Outcome.OK and t.time_ms is not None}
        if result.best is not None and result.best_time_ms is not None:
            times.setdefault(result.best.key(), result.best_time_ms)
        tuner.configs_timings = {config: [times.get(point.key(), float("inf"))] * 3
                                 for point, config in zip(listed.points, listed.configs)}
    autotuning = getattr(getattr(triton, "knobs", None), "autotuning", None)
    printing = getattr(autotuning, "print", False) if autotuning is not None else \
        os.environ.get("TRITON_PRINT_AUTOTUNING") == "1"  # a Triton before its knobs
    if printing and not hit:
        for config in listed.configs:  # Triton prints one as it benchmarks each
            print(f"Autotuning kernel {tuner.base_fn.__name__} with config {config}")
        print(f"Triton autotuning for function {tuner.base_fn.__name__},\nwith key as {key},\n"
              f"finished after {tuner.bench_time:.2f}s,\nbest config selected: {chosen};",
              flush=True)
    listener = getattr(autotuning, "listener", None)  # None without knobs too
    if listener is not None:
        listener(fn=jit_function(tuner), key=key, best_config=chosen,
                 configs_timings=getattr(tuner, "configs_timings", None),
                 duration=None if hit else tuner.bench_time, cache_hit=hit)
