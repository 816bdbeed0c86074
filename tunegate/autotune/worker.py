"""Isolated worker processes: a crash, a hang or a poisoned CUDA context costs one config.

The parent sends one request at a time and waits with a timeout. A worker that times out is
killed; one that dies (a compiler abort, a sticky CUDA error) is replaced; either way the request
comes back as an `Outcome` with the reason, and the next request gets a fresh process. This is
the parent's side; the process's own body is `worker_child`.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import tempfile
import time
from collections.abc import Sequence
from multiprocessing import spawn
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from ..errors import TunegateError
from ..outcome import Outcome
from ..space.space import Config
from . import compile_server, worker_server
from .backend import COMPILE_ONLY
from .messages import Reply, Request
from .worker_child import Loaded, NotReady, Preload, child_main
from .workload import Setup, TaskRef

__all__ = ["BaselineFailed", "Reply", "Setup", "TaskRef", "Worker", "WorkerSetupError",
           "file_stamp", "start_server"]


log = logging.getLogger(__name__)


class WorkerSetupError(RuntimeError, TunegateError):
    """The worker could not load the task or build its baseline."""


class BaselineFailed(WorkerSetupError):
    """The reference or the baseline failed on the first draw: nothing can be checked.
    `raised`: it raised a Python exception (else its worker died)."""

    def __init__(self, message: str, raised: bool = True) -> None:
        super().__init__(message)
        self.raised = raised


def file_stamp(file: str) -> tuple[int, int] | None:
    """The file's modification time and size: a changed file must be imported afresh."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


_PRELOAD = ["tunegate.autotune.server_preload"]


def _context(env: dict[str, str]) -> Any:
    """How a worker process starts: on Linux forked from a server that imported torch and
    triton once (a worker then starts in a fraction of a second instead of importing them
    again), else spawned. A compile-only worker under the interpreter is spawned (it drops
    TRITON_INTERPRET, which the server's triton was imported under); TUNEGATE_SPAWN=1 spawns
    every worker. Neither way inherits a CUDA context."""
    drops_interpreter = env.get(COMPILE_ONLY) == "1" and "TRITON_INTERPRET" in os.environ
    if drops_interpreter or not _uses_server():
        return mp.get_context("spawn")
    server = worker_server.server()
    server.set_forkserver_preload(_PRELOAD)
    server.ensure_running()  # started here, outside any one worker's environment
    return mp.get_context("forkserver")


def start_server(here: bool = False) -> None:
    """Start the server workers fork from, where they do (see `_context`), without waiting
    for it: its imports of torch and triton then overlap with the program's own start-up
    instead of delaying the program's first tuning. `here`: this process imports them and
    the server is a fork of it (see `server_fork`), where this process may fork now."""
    if here and _uses_server():
        from .server_fork import fork_server

        why_not = fork_server(_PRELOAD)
        if why_not is not None:
            log.debug("the worker server is started on its own: %s", why_not)
    _context({})


def _uses_server() -> bool:
    """Whether workers fork from a server here (else each is spawned)."""
    return os.environ.get("TUNEGATE_SPAWN") != "1" and "forkserver" in mp.get_all_start_methods()


_stdlib_preparation_data = spawn.get_preparation_data


def _preparation_data(name: str) -> dict[str, Any]:
    """What multiprocessing sends a new process to prepare it, less the program's main
    module while this thread starts a worker (the program's own processes are left alone):
    a worker may start while the program runs its script as `__main__` (`tunegate run`) and
    must never run the script's top level, which may launch, tune and wait on this very
    pool. A task names its own file; the worker imports that when given the task."""
    data = _stdlib_preparation_data(name)
    if worker_server.ours():
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


spawn.get_preparation_data = _preparation_data


class Worker:
    """One isolated process running one task's configs, replaced after a crash or timeout.

    `env` (e.g. CUDA_VISIBLE_DEVICES) is set for the process before it imports anything;
    `setup_timeout` bounds loading the task (import, inputs, reference or baseline on draw 0).
    """

    def __init__(self, ref: TaskRef | None, *, seed: int, baseline_json: str | None,
                 setup_timeout: float = 600.0, deterministic: bool = True,
                 env: dict[str, str] | None = None) -> None:
        self.setup: Setup | None = None if ref is None else \
            Setup(ref, seed, baseline_json, deterministic).placed()
        self.setup_timeout = setup_timeout
        self.env = dict(env or {})
        self._proc: Any = None
        self._conn: Connection | None = None
        self._pending = False  # a setup was sent; its answer not read yet
        self._stopping = threading.Lock()  # stop may run from a waiting thread and on Ctrl-C
        self._stderr = tempfile.NamedTemporaryFile(prefix="tunegate-worker-", suffix=".log",
                                                   delete=False)
        self.problem_key: str | None = None
        self.kind: str | None = None
        self.device_facts: tuple[str, int] | None = None  # see runner.device_facts
        self.arg_specs: dict[str, Any] | None = None  # see Runner.arg_specs
        # The files its tasks came from, as they were when first imported (see pool), and
        # whether each was imported by path (its folder is then on the process's sys.path).
        self.loaded: dict[str, tuple[int, int] | None] = {}
        self.by_path: dict[str, bool] = {}
        self.preloaded: set[str] = set()  # modules sent to import ahead (see `preload`)
        self._preload_path: tuple[str, ...] | None = None  # the sys.path sent last
        self._unread = 0  # bytes of preloads sent since the process last answered
        self._room: int | None = None  # see `_pipe_room`

    @classmethod
    def spare(cls, env: dict[str, str]) -> "Worker":
        """A process started before any task needs it (see `warm`): it makes its CUDA context
        and waits; `retask` gives it a task."""
        worker = cls(None, seed=0, baseline_json=None, env=env)
        worker.launch()
        return worker

    @property
    def ref(self) -> TaskRef:
        assert self.setup is not None, "a spare worker has no task yet"
        return self.setup.ref

    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def started(self) -> bool:
        """Launched (and not stopped since)."""
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def idle(self) -> bool:
        """Alive with nothing in flight: may be re-tasked."""
        return self.alive() and not self._pending

    def launch(self) -> None:
        """Start the process, which loads the task while the caller goes on; `wait` for it."""
        self.loaded, self.by_path = {}, {}
        self._preload_path, self._unread, self._room = None, 0, None  # a new pipe
        if self.setup is not None:
            self._note(self.setup.ref)
        ctx = _context(self.env)
        self._conn, child = ctx.Pipe()
        # The process sets its environment itself as it starts (`child_main`); this one's is
        # never changed for it: other threads read it meanwhile (the program's own, a tuner
        # probing the device, which saw CUDA_VISIBLE_DEVICES="" while a compile worker began).
        environ = {**os.environ, **self.env}
        first = [] if self.setup is None else [self.setup]
        self._proc = ctx.Process(target=child_main, daemon=True, args=(
            child, first, os.getpid(), self._stderr.name, environ))
        try:
            if self.env.get(COMPILE_ONLY) == "1":  # with the program's libraries, where it can
                compile_server.start_process(self._proc)
            else:
                with worker_server.starting():
                    self._proc.start()
        except BaseException:
            self._conn.close()
            self._conn = self._proc = None
            raise
        finally:
            child.close()
        self._pending = self.setup is not None  # a spare answers nothing until its first task

    def retask(self, setup: Setup) -> None:
        """Load another task into the live process (see pool for which); `wait`."""
        assert self._conn is not None and not self._pending
        self.setup = setup
        self._note(setup.ref)
        self._conn.send(setup)
        self._pending = True

    def preload(self, modules: Sequence[str]) -> bool:
        """Have this idle process import `modules` ahead of a task that names them (no
        answer): their import is then no longer part of that task's start. False, with nothing
        sent, where the message would take what the process has not read yet past what its
        pipe holds: it may be importing for seconds, and the sender must never wait for it."""
        assert self._conn is not None and not self._pending
        path = tuple(sys.path)
        payload = ForkingPickler.dumps(Preload(tuple(modules),
                                               None if path == self._preload_path else path))
        if self._unread + len(payload) > self._pipe_room():
            return False
        self._conn.send_bytes(payload)
        self._unread += len(payload)
        self._preload_path = path
        for module in modules:
            self.preloaded.add(module)
            file = getattr(sys.modules.get(module), "__file__", None)
            if file:  # as for a task's file: changed later, it is not imported here again
                self.loaded.setdefault(file, file_stamp(file))
                self.by_path.setdefault(file, False)
        return True

    def _pipe_room(self) -> int:
        """Half of what this end of the pipe can hold unread (a socket pair's send buffer:
        about 200 KB on Linux), or 4 KB where that is unknown."""
        if self._room is None:
            assert self._conn is not None
            try:
                with socket.socket(fileno=os.dup(self._conn.fileno())) as sock:
                    self._room = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 2
            except OSError:
                self._room = 4096
        return self._room

    def _note(self, ref: TaskRef) -> None:
        """Record the file this process imports for `ref`, as it is now."""
        self.loaded.setdefault(ref.file, file_stamp(ref.file))
        self.by_path[ref.file] = self.by_path.get(ref.file, False) or ref.module is None

    def unload(self) -> None:
        """Have the idle process drop the task's inputs and expected outputs (no answer), and
        drop the task here too: a call's inputs may hold the program's own GPU tensors."""
        assert self._conn is not None and not self._pending
        self._conn.send(None)
        self.setup = None

    def wait(self) -> None:
        """Wait for the task to load; raises WorkerSetupError (BaselineFailed) if it did not,
        and stops the process on Ctrl-C."""
        if not self._pending:
            return
        conn = self._conn
        assert conn is not None and self.setup is not None
        self._pending = False
        deadline = time.monotonic() + self.setup_timeout
        loaded = False  # the task's module loaded: what fails now is its baseline or reference
        while True:
            try:
                answered = conn.poll(max(0.0, deadline - time.monotonic()))
            except KeyboardInterrupt:
                self.stop()
                raise
            except OSError:  # stopped from another thread (Ctrl-C) while waiting
                answered = True
            if not answered:
                self.stop()
                raise WorkerSetupError(f"the worker did not load the task within "
                                       f"{self.setup_timeout:.0f} s (the per-config timeout)")
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                tail, died = self.stderr_tail(), self._death()
                self.stop()
                if loaded:  # another process would crash there too: the next baseline's turn
                    raise BaselineFailed(f"the worker died ({died}) running the "
                                         f"{self._checked_with()} on draw 0\n{tail}",
                                         raised=False) from None
                raise WorkerSetupError(f"the worker died ({died}) while loading the task\n"
                                       + tail) from None
            if not isinstance(msg, Loaded):
                break
            loaded = True
        self._unread = 0  # it has read everything sent before its answer
        if isinstance(msg, NotReady):
            self.stop()
            raise (BaselineFailed if msg.baseline else WorkerSetupError)(msg.error)
        self.problem_key, self.kind, self.device_facts = msg.problem_key, msg.kind, \
            msg.device_facts
        self.arg_specs = msg.arg_specs

    def start(self) -> None:
        self.launch()
        self.wait()

    def _checked_with(self) -> str:
        """What a run worker's setup runs first: the baseline config, or the reference."""
        assert self.setup is not None
        if self.setup.baseline_json:
            return f"baseline config {Config.from_json(self.setup.baseline_json).text()}"
        return "reference function"

    def stderr_tail(self, lines: int = 12) -> str:
        try:
            with open(self._stderr.name, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:]).strip()
        except OSError:
            return ""

    def request(self, request: Request, timeout: float = 120.0) -> Reply:
        """Run one operation on one config; never raises for what the kernel does."""
        if not self.alive():
            self.start()
        self.wait()
        assert self._conn is not None
        start = time.perf_counter()
        try:
            try:
                self._conn.send(request)
            except (BrokenPipeError, ConnectionResetError):  # it died after its last answer
                self.stop()  # (killed, or crashed on its way out): no fault of this request's;
                self.start()  # a closed pipe must never reach the CLI, which would read it as
                assert self._conn is not None  # its own stdout closed, and lose its results
                try:
                    self._conn.send(request)
                except (BrokenPipeError, ConnectionResetError) as e:  # the new one died too
                    raise WorkerSetupError(f"a restarted worker died before its first "
                                           f"request: {self.stderr_tail() or e}") from None
            answered = self._conn.poll(timeout)
        except BaseException:  # Ctrl-C, or a bad timeout: the answer would reach the next request
            self.stop()
            raise
        if not answered:
            self.stop()
            return Reply(Outcome.TIMEOUT, error=f"no answer within {timeout:.0f} s (killed)",
                         seconds=time.perf_counter() - start)
        try:
            msg = self._conn.recv()
        except EOFError:
            died = self._death()
            self.stop()
            tail = self.stderr_tail()
            return Reply(Outcome.CRASHED, error=f"worker died ({died})"
                         + (f":\n{tail}" if tail else ""), seconds=time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        self._unread = 0
        outcome, value = msg
        if outcome is Outcome.OK:
            return Reply(outcome, value=value, seconds=elapsed)
        if outcome is Outcome.CRASHED:
            self.stop()
        return Reply(outcome, error=value, seconds=elapsed)

    def _death(self) -> str:
        """How the worker that closed its pipe ended: its exit code, or the signal that killed
        it (a segfault is SIGSEGV), once it has been reaped."""
        proc = self._proc
        if proc is None:
            return "exit code unknown"
        proc.join(timeout=5)
        code = proc.exitcode
        if code is None:
            return "it closed its pipe and has not exited"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def kill(self) -> None:
        """Send the process SIGKILL without waiting for it to end (`stop` waits): many workers
        ended at once tear their CUDA contexts down side by side, not one after another."""
        with self._stopping:
            proc = self._proc
        if proc is not None and proc.is_alive():
            proc.kill()

    def stop(self) -> None:
        """Kill the process and close its pipe; safe to call twice, from two threads."""
        with self._stopping:
            proc, conn = self._proc, self._conn
            self._proc, self._conn, self._pending = None, None, False
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=10)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass
