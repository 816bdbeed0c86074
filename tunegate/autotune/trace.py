"""A timeline of where a tuning's time goes, across the program and its workers.

With TUNEGATE_TRACE=FILE every process of a tuning appends one JSON line per event to FILE: the
wall-clock time, the process id, and what happened (a worker loading its task, a request
answered, a pool waiting for its workers). The benchmarks read it to split a tuning's start-up
into its parts; without the variable each call costs one environment lookup.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["ENV", "event", "read", "span"]

ENV = "TUNEGATE_TRACE"


def event(name: str, **fields: Any) -> None:
    """Record that `name` happened now in this process (with `fields`), if tracing."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps({"t": time.time(), "pid": os.getpid(), "event": name, **fields},
                      default=str)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return  # a diagnostic must never fail the tuning
    try:
        os.write(fd, (line + "\n").encode())  # one write: lines of processes never interleave
    finally:
        os.close(fd)


@contextmanager
def span(name: str, **fields: Any) -> Iterator[None]:
    """Record the seconds the block took as event `name` (at its end), if tracing."""
    if not os.environ.get(ENV):
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        event(name, seconds=round(time.perf_counter() - start, 6), **fields)


def read(path: str) -> list[dict[str, Any]]:
    """The events of a trace file, in time order (lines cut short by a killed process
    are skipped)."""
    events = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    except FileNotFoundError:
        return []
    return sorted(events, key=lambda e: e["t"])
