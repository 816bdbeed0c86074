"""Workers started before the first tuning needs them.

A worker is a process forked from a server that imported torch and Triton; a GPU run worker
also makes its CUDA context. Paid at the first tuning, that is seconds (the server's imports
alone took 4.8 s on an H200 host) that stock Triton, tuning in the program's own process, does
not pay. A program that will tune therefore calls `warm_up()` as early as it knows: `tunegate
run` and `tunegate tune` when they start (forking the server from their own process, see
`server_fork`), and on a GPU host the first drop-in autotuner a program defines. In a
background thread it starts the server and spare workers (the run worker, and on a GPU host
a compile worker per CPU core but one, unless `compile_server` forks them when a tuning needs
them), which the pools of this process take and give their tasks (`pool.WorkerPool`). The
program goes on meanwhile. The module of each autotuner the program defines is imported by the
spare run worker, the first few compile workers kept and the compile server ahead of its first
tuning (`preload`), and so is each library built on torch or Triton that the program imports,
as it imports it (`mirror`). Triton's driver utilities are built by a background process
meanwhile, where the cache lacks them (`launchers`).

Nothing is started in a worker process (the kernels it imports define autotuners too), by the
command line's verbs that never tune (`forbid`), in the processes a program under `tunegate run`
starts (`children`), or with TUNEGATE_WARM=0; a compile server only with
TUNEGATE_COMPILE_SERVER=1. A `tunegate run` whose command's last run ended with bests that are
all still stored forks the server only (`run_memory`), unless TUNEGATE_WARM=1.
"""

from __future__ import annotations

import logging
import os
import threading

from .._threads import start as start_thread
from ..children import MARK as CHILDREN
from . import trace

__all__ = ["forbid", "preload", "wait_for_spares", "warm_up"]

log = logging.getLogger(__name__)

_STATE: dict[str, threading.Thread | bool] = {}  # thread, forbidden, deferred


def _forget_the_parents() -> None:
    """In a forked child: the parent's spare workers are not this process's (`pool`)."""
    _STATE.pop("thread", None)


os.register_at_fork(after_in_child=_forget_the_parents)


def forbid() -> None:
    """Never start spare workers in this process (a worker, a command that does not tune)."""
    _STATE["forbidden"] = True


def warm_up(*, gpu_only: bool = False, here: bool = False, spares: bool = True) -> None:
    """Start the worker server and spare workers in the background, once per process;
    `gpu_only`: only on a host whose kernels run on a GPU (decided in the background too).
    `here`: the caller is at a clean point (the command line's start, before the program):
    the server is forked from this process once it has imported torch and Triton, which this
    call then does first (see `worker.start_server`). Not `spares` (a run expected to reuse
    every best, see `run_memory`): the server only; no spare, no mirrored import, and no
    later call starts them; a tuning that needs workers starts its own from the server."""
    if _STATE.get("forbidden") or _STATE.get("deferred") or "thread" in _STATE \
            or os.environ.get("TUNEGATE_WARM") == "0":
        return
    if not here and os.environ.get(CHILDREN) == "1":
        # A process of a program under `tunegate run` (the program's forked child, too): a
        # pool of them would each start a score of spares, tuning or not. A tuning there
        # starts the workers it needs.
        return
    from .launchers import build_driver_ahead

    build_driver_ahead()  # a process of its own: the server below may fork at once
    if here:
        from .worker import start_server

        try:
            with trace.span("server forked here"):
                start_server(here=True)
            # Only with TUNEGATE_COMPILE_SERVER=1: on an H100 host Liger-Kernel's import started
            # threads in it and fla's left it stuck, so it forked no compile worker for either.
            # Compile workers under the interpreter are spawned.
            if os.environ.get("TRITON_INTERPRET") != "1" and \
                    os.environ.get("TUNEGATE_COMPILE_SERVER") == "1":
                from . import compile_server
                from .pool import COMPILE_ENV

                with trace.span("compile server forked here"):
                    why_not = compile_server.start(COMPILE_ENV)
                if why_not is not None:
                    log.debug("no compile server: %s", why_not)
        except Exception as e:  # noqa: BLE001 - an optimisation: the thread starts it as ever
            log.debug("the worker server could not be forked here: %s: %s", type(e).__name__, e)
    if not spares:
        _STATE["deferred"] = True
        trace.event("spares deferred")
        return
    _STATE["thread"] = start_thread(_start_spares, gpu_only, name="tunegate-warm-up")


def preload(*modules: str | None) -> None:
    """The modules of an autotuner the program defines, or of a library it imports (`mirror`):
    the spare run worker and a few compile workers import them while the program goes on,
    not when its first tuning starts them (a library such as Liger-Kernel took 13 s to import
    in the workers of a first tuning); the other compile workers import them when a tuning
    needs them, and it does not wait for them (`pool`). Not for a script run as `__main__`,
    whose workers import it by path."""
    if _STATE.get("forbidden") or os.environ.get("TUNEGATE_WARM") == "0":
        return
    from .pool import preload as to_workers

    named = [m for m in dict.fromkeys(modules) if m and not m.startswith("__")]
    if named:
        to_workers(*named)


def wait_for_spares(timeout: float | None = None) -> None:
    """Wait until the spare workers of `warm_up` are started (if it was called): a pool then
    takes them instead of starting workers of its own beside them."""
    thread = _STATE.get("thread")
    if isinstance(thread, threading.Thread) and thread is not threading.current_thread():
        thread.join(timeout)


def _start_spares(gpu_only: bool) -> None:
    from . import compile_server, mirror
    from .pool import COMPILE_ENV, compile_cores, keep_spare
    from .worker import Worker, start_server

    try:
        start_server()  # first: its imports run while this thread imports torch to look
        from .device import device_kind

        gpu = device_kind() == "gpu"
        if gpu_only and not gpu:
            return
        if not gpu:
            compile_server.stop()  # no compile workers on this host
        keep_spare("run0", Worker.spare({}))
        for _ in range(compile_cores() if gpu and not compile_server.running() else 0):
            keep_spare("compile", Worker.spare(dict(COMPILE_ENV)))
        trace.event("spares started")
        mirror.start()
    except Exception as e:  # noqa: BLE001 - warming is an optimisation: tuning starts its own
        log.debug("spare workers could not be started: %s: %s", type(e).__name__, e)
