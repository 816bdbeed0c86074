"""The worker server forked from this process, which has imported what the server needs.

multiprocessing starts its fork server as a new interpreter that imports the preload (torch,
Triton: 4.8 s on an H200 host) while the program imports the same modules beside it, and on
such a host two such imports side by side take longer than one. Where this process is at a
clean point (the command line's start: one thread, no GPU driver loaded, no import under way),
it imports the preload itself, which the program was about to do anyway, and the server is a
fork of it: ready at once, the imports paid once.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from multiprocessing import forkserver, resource_tracker, util
from typing import Callable, Iterator, Sequence

__all__ = ["fork_a_server", "forkable", "fork_server", "gpu_driver_initialised"]

_FORKSERVER_MAIN = "multiprocessing.forkserver import main"


def forkable() -> str | None:
    """Why this process must not fork the server now; None when it may."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return "not Linux"
    if threading.current_thread() is not threading.main_thread() or threading.active_count() > 1:
        return "other Python threads are running"
    if gpu_driver_initialised():
        return "this process has initialised the GPU driver, which a forked process cannot use"
    return None


def gpu_driver_initialised() -> bool:
    """Whether this process has initialised the CUDA driver (cuInit): a forked child's CUDA
    calls then fail ('initialization error'). Importing torch maps libcuda without
    initialising it; the driver answers CUDA_ERROR_NOT_INITIALIZED to any call before cuInit,
    and its answer to cuDeviceGetCount says which. ROCm's runtime: never forked from."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            mapped = {lib for line in maps for lib in ("libcuda.so", "libamdhip64")
                      if lib in line}
    except OSError:
        return True  # cannot tell: do not fork
    if "libamdhip64" in mapped:
        return True
    if not mapped:
        return False
    import ctypes

    try:
        count = ctypes.c_int()
        answer = ctypes.CDLL("libcuda.so.1").cuDeviceGetCount(ctypes.byref(count))
    except (OSError, AttributeError):
        return True
    return answer != _CUDA_ERROR_NOT_INITIALIZED


_CUDA_ERROR_NOT_INITIALIZED = 3


def fork_server(preload: Sequence[str]) -> str | None:
    """Import `preload` here and start the worker server (`worker_server`) as a fork of this
    process; why not, where this process may not
    fork (see `forkable`, asked before the imports and after them)."""
    why_not = forkable()
    if why_not is not None:
        return why_not
    for name in preload:
        importlib.import_module(name)
    why_not = forkable()
    if why_not is not None:
        return why_not
    from .worker_server import server

    server().set_forkserver_preload(list(preload))
    fork_a_server(server())
    return None


def fork_a_server(server: forkserver.ForkServer,
                  in_the_server: Callable[[], None] | None = None) -> None:
    """Start `server` (a multiprocessing fork server: `worker_server`, `compile_server`) as a
    fork of this process, which must be `forkable`; `in_the_server` runs first in the fork."""
    resource_tracker.ensure_running()  # a process of its own, as ever: not forked below
    with _forking_the_server(in_the_server):
        server.ensure_running()


@contextmanager
def _forking_the_server(in_the_server: Callable[[], None] | None) -> Iterator[None]:
    spawn = util.spawnv_passfds

    def fork_or_spawn(path: str, args: Sequence[str], passfds: Sequence[int]) -> int:
        code = args[-1]
        if _FORKSERVER_MAIN not in code:
            return spawn(path, args, passfds)
        # SIGINT and SIGTERM are held back across the fork: the server ignores them from its
        # first instruction, and one sent meanwhile reaches this process once the fork is done.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            with warnings.catch_warnings():  # torch's own thread: forked without CUDA, as
                warnings.simplefilter("ignore", DeprecationWarning)  # DataLoader's workers are
                pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # both are the tuning process's
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # to act on (workers: see
                # server_preload, which gives them SIGTERM's default back)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                _serve(code, passfds, in_the_server)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return pid

    util.spawnv_passfds = fork_or_spawn
    try:
        yield
    finally:
        util.spawnv_passfds = spawn


def _serve(code: str, passfds: Sequence[int], first: Callable[[], None] | None) -> None:
    """The forked child: run `first`, then the server's command; never return into the
    parent's frames.
    End-of-file while the program asks for a worker means the program is gone (it ended while
    spares started): the server ends without a traceback on the program's terminal."""
    try:
        _close_other_ends(passfds)
        if first is not None:
            first()
        exec(compile(code, "<tunegate worker server>", "exec"), {"__name__": "__mp_main__"})
    except (SystemExit, EOFError):
        pass
    except BaseException:  # noqa: BLE001 - said on stderr; the parent's workers then spawn
        import traceback

        traceback.print_exc()
    finally:
        os._exit(0)


def _close_other_ends(passfds: Sequence[int]) -> None:
    """Close the other ends of the pipes passed (the server's "alive" pipe: the server ends
    when every process holding its write end has ended, which must not include itself)."""
    pipes = {os.fstat(fd).st_ino for fd in passfds if _is_pipe(fd)}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in passfds and fd > 2 and _is_pipe(fd) and os.fstat(fd).st_ino in pipes:
            os.close(fd)


def _is_pipe(fd: int) -> bool:
    import stat

    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False
