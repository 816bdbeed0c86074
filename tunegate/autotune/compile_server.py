"""The compile workers' own server: forked from the program like the worker server, it sees no
GPU and imports the program's libraries as the program imports them, so that each compile
worker forked from it starts with them.

Compile workers forked from the worker server import a kernel's module when a tuning gives
them their task. At a program's first tuning, fifteen of them importing Liger-Kernel (with
transformers) side by side took 14-17 s each on an H100 host, and the run worker compiled
every config itself meanwhile: a 12 s tuning where later ones took 2 s; fla's first two
tunings lost 20 s so. This server imports each module once, between the forks it serves,
as the spare run worker is sent it (`warm.preload`, `mirror`); where an import fails, the
worker's own import of the task reports it. It starts only with TUNEGATE_COMPILE_SERVER=1
(`warm`): on an H100 host Liger-Kernel's import started threads in it and fla's left it stuck.

A process is safe to fork from only while it has one thread and no GPU driver (a child forked
from it may hang on a lock another thread held, or fail its driver calls). An import that
starts a thread or initialises the driver therefore ends the server's service (`_spoiled`), and
so does a server that has not forked a worker within `FORK_WAIT_S` (stuck in an import):
compile workers come from the worker server again, importing the library themselves.
"""

from __future__ import annotations

import atexit
import os
import pickle
import selectors
import signal
import socket
import struct
import sys
import tempfile
import threading
from multiprocessing import forkserver, resource_tracker, util
from multiprocessing.process import BaseProcess
from typing import Mapping, Sequence

from . import trace, worker_server
from .worker_child import Preload, die_with_parent

__all__ = ["FORK_WAIT_S", "preload", "running", "start", "start_process", "stop"]

_FRAME = struct.Struct("!I")  # each preload is its pickled length, then the pickle
# How long a compile worker's start may wait for the server (busy importing a library) before
# the server is taken for stuck and stopped: a library's import took 6 s there on an H100 host.
FORK_WAIT_S = 20.0
# The server's own environment, besides a compile worker's: torch answers whether a GPU is
# there from NVML, without initialising the CUDA driver (which would spoil the server).
_SERVER_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


class _Gone(RuntimeError):
    """The compile server has ended: workers come from the worker server again."""


class _CompileServer(forkserver.ForkServer):
    """multiprocessing's fork server, started once (forked from the program, see `start`) and
    never started again: once it is gone, `connect_to_new_process` raises `_Gone`."""

    gone = False

    def ensure_running(self) -> None:
        if self._forkserver_pid is None:  # the first start, forked by `start`
            super().ensure_running()
            return
        with self._lock:
            resource_tracker.ensure_running()
            if not self.gone:
                try:
                    ended, _ = os.waitpid(self._forkserver_pid, os.WNOHANG)
                except ChildProcessError:
                    ended = 1
                self.gone = bool(ended)
            if self.gone:
                raise _Gone("the compile server has ended")

    def end(self) -> None:
        """Kill the server (and with it any worker it forked: they die with their parent)."""
        pid = self._forkserver_pid
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self._forkserver_alive_fd)
        if self._forkserver_address and not util.is_abstract_socket_namespace(
                self._forkserver_address):
            try:
                os.unlink(self._forkserver_address)
            except OSError:
                pass


class _State:
    """This process's compile server and the write end of its preload pipe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.server: _CompileServer | None = None
        self.to_server: int | None = None
        self.unsent = bytearray()  # preloads the pipe had no room for yet
        self.sent_path: tuple[str, ...] | None = None
        self.sent: set[str] = set()


_STATE = _State()


def _forget_the_parents() -> None:
    """In a forked child (a process of the program's own): the parent's compile server is not
    this process's to use or keep alive."""
    global _STATE
    parents, _STATE = _STATE, _State()
    if parents.to_server is not None:
        try:
            os.close(parents.to_server)
        except OSError:
            pass
    if parents.server is not None:
        worker_server.close_alive_end(parents.server)


os.register_at_fork(after_in_child=_forget_the_parents)


def running() -> bool:
    """Whether compile workers started now come from the compile server."""
    server = _STATE.server
    return server is not None and not server.gone


def start(env: Mapping[str, str]) -> str | None:
    """Fork the compile server from this process, with `env` (what a compile worker sees: no
    GPU) set in it; why not, where this process may not fork now (see `server_fork`). Call it
    where the worker server was just forked, with torch and Triton imported."""
    from .server_fork import fork_a_server, forkable

    why_not = forkable()
    if why_not is not None:
        return why_not
    with _STATE.lock:
        if _STATE.server is not None:
            return None
        from_program, to_server = os.pipe()
        server = _CompileServer()
        server.set_forkserver_preload([])  # it has what the program imported: torch, Triton
        log = _log_file()

        def in_the_server() -> None:
            die_with_parent()  # a library's import that never ends must not outlive us
            os.close(to_server)
            os.environ.update({**env, **_SERVER_ENV})
            try:
                output = os.open(log, os.O_WRONLY | os.O_APPEND)
            except FileNotFoundError:  # the program has ended already, removing it
                output = os.open(os.devnull, os.O_WRONLY)
            os.dup2(output, 1)  # what a library prints as it imports (a warning that it sees
            os.dup2(output, 2)  # no GPU, say) is not the program's output
            os.close(output)
            _import_between_forks(from_program)

        try:
            fork_a_server(server, in_the_server)
        finally:
            os.close(from_program)
        os.set_blocking(to_server, False)
        _STATE.server, _STATE.to_server = server, to_server
    return None


def _log_file() -> str:
    """A file for the server's output, removed when this process ends."""
    with tempfile.NamedTemporaryFile(prefix="tunegate-compile-server-", suffix=".log",
                                     delete=False) as f:
        atexit.register(_remove, f.name)
        return f.name


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def stop() -> None:
    """End the compile server (a host without a GPU has no compile workers)."""
    with _STATE.lock:
        server, to_server = _STATE.server, _STATE.to_server
        _STATE.server = _STATE.to_server = None
        _STATE.unsent.clear()
        if to_server is not None:
            os.close(to_server)
        if server is not None and not server.gone:
            server.gone = True
            server.end()


def start_process(process: BaseProcess) -> None:
    """Start `process` (a compile worker) forked from the compile server where it serves;
    from the worker server where it does not, or stops as it is asked (it ended its service,
    or was stuck for `FORK_WAIT_S` and is stopped)."""
    if running():
        _flush()
        stuck = threading.Timer(FORK_WAIT_S, _stuck)
        stuck.daemon = True
        stuck.start()
        try:
            with worker_server.starting(_connect):
                process.start()
            return
        except (OSError, EOFError):  # it closed its socket, or died, as it was asked
            _end_service()
        finally:
            stuck.cancel()
    with worker_server.starting():
        process.start()  # multiprocessing allows it: the failed start left no process behind


def _stuck() -> None:
    """A fork has waited `FORK_WAIT_S` for the server: stop it (the waiting start then fails
    and is made again from the worker server)."""
    trace.event("compile server stuck", waited=FORK_WAIT_S)
    stop()


def _end_service() -> None:
    server = _STATE.server
    if server is not None:
        server.gone = True


def _connect(fds: list[int]) -> tuple[int, int]:
    """multiprocessing's request for a compile worker, sent to the compile server (to the
    worker server where the compile server has ended or no longer serves: it closed its
    socket, see `_import_between_forks`)."""
    server = _STATE.server
    if server is not None:
        try:
            return server.connect_to_new_process(fds)
        except (_Gone, OSError):
            _end_service()
    return worker_server.server().connect_to_new_process(fds)


def preload(modules: Sequence[str]) -> None:
    """Have the compile server import `modules` (with this process's `sys.path`) between the
    forks it serves. Never waits: what its pipe has no room for now goes with the next call."""
    with _STATE.lock:
        if _STATE.to_server is None:
            return
        todo = tuple(m for m in dict.fromkeys(modules) if m not in _STATE.sent)
        if not todo:
            return
        path = tuple(sys.path)
        payload = pickle.dumps(Preload(todo, None if path == _STATE.sent_path else path))
        _STATE.unsent += _FRAME.pack(len(payload)) + payload
        _STATE.sent.update(todo)
        _STATE.sent_path = path
    _flush()


def _flush() -> None:
    """Write what the pipe has room for."""
    with _STATE.lock:
        while _STATE.unsent and _STATE.to_server is not None:
            try:
                written = os.write(_STATE.to_server, _STATE.unsent)
            except BlockingIOError:
                return
            except OSError:  # the server is gone
                _STATE.unsent.clear()
                return
            del _STATE.unsent[:written]


def _import_between_forks(from_program: int) -> None:
    """In the server: have multiprocessing's fork-server loop also watch the preload pipe and
    import what arrives there, between requests for workers (one thread: a fork never meets
    an import half done). Once an import spoils this process for forking, it closes its
    socket: it forks nothing more, and ends with the program as before."""
    os.set_blocking(from_program, False)
    frames = _Frames(from_program)
    base = selectors.DefaultSelector

    class ImportingSelector(base):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            super().__init__()
            self.register(from_program, selectors.EVENT_READ)

        def select(self, timeout: float | None = None) -> list:
            while True:
                ready = super().select(timeout)
                others = [(key, events) for key, events in ready if key.fd != from_program]
                if len(others) < len(ready):
                    if not frames.take():
                        self.unregister(from_program)  # the program is gone, or stopped us
                    elif (why := _spoiled()) is not None:
                        self._end_service(why)
                        others = [(key, events) for key, events in others
                                  if key.fd in self.get_map()]
                if others or timeout is not None:
                    return others

        def _end_service(self, why: str) -> None:
            trace.event("compile server ends its service", why=why)
            print(f"tunegate: the compile server forks no more workers: {why}",
                  file=sys.stderr, flush=True)
            self.unregister(from_program)
            for key in list(self.get_map().values()):
                if isinstance(key.fileobj, socket.socket):  # the socket it is asked on
                    self.unregister(key.fileobj)
                    key.fileobj.close()

    selectors.DefaultSelector = ImportingSelector


def _spoiled() -> str | None:
    """Why this process may no longer fork workers: an import started a thread, or
    initialised the GPU driver."""
    from .server_fork import gpu_driver_initialised

    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 1
    if threads > 1:
        return f"an import started {threads - 1} thread(s)"
    if gpu_driver_initialised():
        return "an import initialised the GPU driver"
    return None


class _Frames:
    """The server's end of the preload pipe: whole frames imported as they are complete."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def take(self) -> bool:
        """Read what is there and import each whole frame's modules; False at end of file."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                return False
            self.buffer += chunk
        while len(self.buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.buffer)
            if len(self.buffer) < _FRAME.size + size:
                break
            request = pickle.loads(bytes(self.buffer[_FRAME.size:_FRAME.size + size]))
            del self.buffer[:_FRAME.size + size]
            with trace.span("compile server preload", module=request.modules[0],
                            modules=len(request.modules)):
                request.load()
        return True
