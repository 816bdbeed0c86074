"""tunegate's own fork server for its worker processes, apart from multiprocessing's.

A program tuned by tunegate may start processes of its own with multiprocessing's "forkserver"
method. Those must come from multiprocessing's server, which imports the program's main module
as they expect, never from tunegate's, a fork of the program taken before its script ran (a
child of the program forked from it hung on a lock the fork had copied held). multiprocessing
asks one module function, `forkserver.connect_to_new_process`, for each such process; this
module answers it per thread: a process tunegate starts (`starting`) comes from tunegate's
servers, one the program starts from multiprocessing's.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from multiprocessing import current_process, forkserver
from typing import Callable, Iterator

__all__ = ["Connect", "close_alive_end", "ours", "server", "starting"]

Connect = Callable[[list[int]], "tuple[int, int]"]
_PROGRAMS: Connect = forkserver.connect_to_new_process  # multiprocessing's own server
_ROUTE = threading.local()  # `starting`: where this thread's new processes come from
_SERVER = [forkserver.ForkServer()]


def server() -> forkserver.ForkServer:
    """The server tunegate's workers fork from (this process's: a forked child has its own)."""
    return _SERVER[0]


def _from_worker_server(fds: list[int]) -> tuple[int, int]:
    return server().connect_to_new_process(fds)


@contextmanager
def starting(connect: Connect | None = None) -> Iterator[None]:
    """Within it, a process this thread starts is one of tunegate's workers: forked by
    `connect` (default: from the worker server), and never told the program's main module.
    A daemonic process (a `multiprocessing.Pool` worker of the program's) may start one:
    multiprocessing refuses it children it could leave behind, but a worker dies with the
    process that started it (`worker_child.die_with_parent`)."""
    saved = getattr(_ROUTE, "connect", None)
    config = current_process()._config  # noqa: SLF001 - where multiprocessing keeps the flag
    daemonic = config.pop("daemon", None)
    _ROUTE.connect = connect or _from_worker_server
    try:
        yield
    finally:
        _ROUTE.connect = saved
        if daemonic is not None:
            config["daemon"] = daemonic


def ours() -> bool:
    """Whether this thread is starting one of tunegate's workers now."""
    return getattr(_ROUTE, "connect", None) is not None


def _connect(fds: list[int]) -> tuple[int, int]:
    return (getattr(_ROUTE, "connect", None) or _PROGRAMS)(fds)


def _forget_the_parents() -> None:
    """In a forked child: the parent's server is not this process's to use (multiprocessing
    asks only the process that started a server whether it still runs), nor to keep alive
    (it ends when every copy of its "alive" pipe's write end is closed)."""
    close_alive_end(_SERVER[0])
    _SERVER[0] = forkserver.ForkServer()


def close_alive_end(server: forkserver.ForkServer) -> None:
    """Close this process's copy of the write end of `server`'s "alive" pipe (the server ends
    once every copy is closed), and forget it."""
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        server._forkserver_alive_fd = None  # noqa: SLF001 - multiprocessing's own field
        try:
            os.close(fd)
        except OSError:
            pass


forkserver.connect_to_new_process = _connect
os.register_at_fork(after_in_child=_forget_the_parents)
