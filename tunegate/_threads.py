"""tunegate's own threads, which leave a Ctrl-C to the main thread.

Linux hands a process's SIGINT to any of its threads that does not block it. Python runs the
handler in the main thread, but a main thread blocked in a system call (a kernel file's import
that sleeps or reads, a program's wait) wakes only if the signal came to it: a Ctrl-C that one
of tunegate's threads took waited for that call to end (a `tunegate tune` told to stop went on
importing for 60 s). So each of these threads blocks SIGINT from its start. What one of them
starts (a worker, a compiler, a scan) inherits the block: workers ignore Ctrl-C anyway, the
program is the one that handles it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["start", "Watch"]


def start(target: Callable[..., Any], *args: Any, name: str) -> threading.Thread:
    """Run `target(*args)` in a daemon thread that leaves SIGINT to the main thread."""
    thread = threading.Thread(target=_without_sigint, args=(target, *args), daemon=True,
                              name=name)
    thread.start()
    return thread


def _without_sigint(target: Callable[..., Any], *args: Any) -> None:
    import signal  # here: the policy commands import this module and never start a thread

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    target(*args)


class Watch:
    """`then()` in `seconds`, in such a thread, unless cancelled first (threading.Timer's
    use, without taking a Ctrl-C from the main thread)."""

    def __init__(self, seconds: float, then: Callable[[], Any], *, name: str) -> None:
        self._cancelled = threading.Event()
        self._seconds, self._then = seconds, then
        start(self._run, name=name)

    def _run(self) -> None:
        if not self._cancelled.wait(self._seconds):
            self._then()

    def cancel(self) -> None:
        self._cancelled.set()
