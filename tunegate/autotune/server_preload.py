"""What the worker server imports once, before it forks any worker (see `worker._context`).

Everything a worker needs is imported here, and Triton's own cache key (a hash of Triton's
sources that every process compiling a kernel computes once, about 0.4 s) is computed here, so
that every forked worker inherits them instead of paying for them. No CUDA call is made: a
process forked after one could not use the GPU. A worker ignores Ctrl-C from its start, and
one whose program ended before handing it its task ends quietly.
"""

from __future__ import annotations

import importlib
import signal
from multiprocessing import forkserver
from typing import Any, Callable

LAZY_TRITON_MODULES = ("triton.experimental.gluon",)

# A Ctrl-C while the server imports is the program's to report, not a traceback of the server's
# (the server ignores SIGINT from the moment its imports end, and so do its workers).
# Imported by the program itself (see `server_fork`), it leaves the program's handler as it was.
_PROGRAMS = signal.signal(signal.SIGINT, signal.SIG_IGN)

import torch  # noqa: E402, F401
import triton  # noqa: E402, F401

from . import runner, worker_child  # noqa: E402, F401

try:
    from triton.runtime.cache import triton_key
except ImportError:  # a Triton without it: each worker computes what it needs
    pass
else:
    triton_key()

# What Triton imports only as a process first launches or compiles a kernel: Triton 3.6
# imports its gluon package (40 modules) as it first specialises a launch's arguments, which
# took 0.17 s of a run worker's first launch on an H100 host, and as much of each compile
# worker's first compile.
for _lazy in LAZY_TRITON_MODULES:
    try:
        importlib.import_module(_lazy)
    except ImportError:  # another Triton: its first launch imports what it needs
        pass

signal.signal(signal.SIGINT, _PROGRAMS)


def _quiet_when_the_program_is_gone(serve_one: Callable[..., int]) -> Callable[..., int]:
    """multiprocessing's body of a new worker, which sets the signal handlers the server had
    before it began to serve and reads what the program sends it first. The worker ignores
    SIGINT from its first instruction on (a Ctrl-C is the program's to handle; before, a
    Ctrl-C in the moment a worker started printed its traceback) and ends on SIGTERM, which
    the server ignores (multiprocessing ends a program's daemon children with SIGTERM, then
    waits for them without a timeout: one that ignored it hung the program's exit), and if the
    program ended
    before sending anything (one that fails at once while spare workers start), it ends
    without a traceback on the program's terminal."""

    def quietly(child_r: Any, fds: Any, unused_fds: Any, handlers: Any) -> int:
        handlers = {**(handlers or {}), signal.SIGINT: signal.SIG_IGN,
                    signal.SIGTERM: signal.SIG_DFL}
        try:
            return serve_one(child_r, fds, unused_fds, handlers)
        except EOFError:
            return 0

    return quietly


if hasattr(forkserver, "_serve_one"):
    forkserver._serve_one = _quiet_when_the_program_is_gone(forkserver._serve_one)
