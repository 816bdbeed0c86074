"""Isolated worker processes: a crash, a hang or a poisoned CUDA context costs one config.

The parent sends one request at a time and waits with a timeout. A worker that times out is
killed; one that dies (a compiler abort, a sticky CUDA error) is replaced; either way the request
comes back as an `Outcome` with the reason, and the next request gets a fresh process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Iterator

from ..errors import TunegateError
from ..outcome import Outcome
from .messages import Reply, Request

__all__ = ["BaselineFailed", "Reply", "Setup", "TaskRef", "Worker", "WorkerSetupError"]

# Errors after which a CUDA context is unusable: the worker must not take another config.
_STICKY = ("CUDA error", "AcceleratorError", "illegal memory access", "misaligned address",
           "unspecified launch failure", "device-side assert")
_COMPILE = ("CompilationError", "OutOfResources", "PassManager", "MLIR", "CompileTimeAssertion")


class WorkerSetupError(RuntimeError, TunegateError):
    """The worker could not load the task or build its baseline."""


class BaselineFailed(WorkerSetupError):
    """The reference or the baseline failed on the first draw: nothing can be checked."""


@dataclass(frozen=True)
class TaskRef:
    """Where a worker finds the task: an attribute of a module, imported by name or by file.

    `module` (a dotted name) is used when the kernel lives in an importable package, so its
    relative imports work; else `file` is imported by path. `call` (a drop-in `CallSite`)
    builds the task from the named autotuned kernel and one call's details.
    """

    file: str
    name: str
    inputs: Any = None  # optional picklable callable(seed, device) replacing make_inputs
    module: str | None = None
    call: Any = None


_ENV_LOCK = threading.Lock()


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """`env` set in os.environ while a process is spawned (it inherits it), then restored."""
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _classify(e: BaseException) -> Outcome:
    text = f"{type(e).__name__}: {e}"
    if any(s in text for s in _STICKY):
        return Outcome.CRASHED
    if any(s in text for s in _COMPILE) or _rejected_by_the_language(e):
        return Outcome.COMPILE_ERROR
    return Outcome.ERROR


def _rejected_by_the_language(e: BaseException) -> bool:
    """Under the interpreter, an error raised by triton.language itself (a non-power-of-two
    arange, a bad type) is what the compiler reports on a GPU: a compile error."""
    if type(e).__name__ != "InterpreterError" or e.__cause__ is None:
        return False
    frames = traceback.extract_tb(e.__cause__.__traceback__)
    return bool(frames) and f"triton{os.sep}language{os.sep}" in frames[-1].filename


def _load(ref: TaskRef) -> Any:
    import importlib

    from ..kernelfile import load_module

    module = importlib.import_module(ref.module) if ref.module else load_module(ref.file)
    obj = getattr(module, ref.name)
    if ref.call is not None:
        return ref.call.task(obj)
    return getattr(obj, "task", obj)


@dataclass(frozen=True)
class Setup:
    """What a worker loads: the task, the input seed, the baseline config and whether repeated
    launches must agree bit for bit. A live worker can be sent a new one (see `Worker.retask`)."""

    ref: TaskRef
    seed: int
    baseline_json: str | None
    deterministic: bool


@dataclass(frozen=True)
class _Ready:
    """A worker's answer to a setup that worked: what it loaded, and for which device."""

    problem_key: str
    kind: str
    device_facts: tuple[str, int] | None  # see runner.device_facts


@dataclass(frozen=True)
class _NotReady:
    """A worker's answer to a setup that failed; `baseline` when the reference or baseline
    failed (nothing can be checked), else the task could not be loaded."""

    error: str
    baseline: bool = False


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this process when its parent dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _ready(setup: Setup) -> tuple[Any, _Ready | _NotReady]:
    """The runner for `setup`, and the message that says whether it could be made."""
    from ..space.space import Config
    from .backend import COMPILE_ONLY
    from .runner import BaselineError, Runner, device_facts

    try:
        if os.environ.get(COMPILE_ONLY) == "1":
            from .precompile import TaskCompiler

            compiler = TaskCompiler(_load(setup.ref), seed=setup.seed, inputs=setup.ref.inputs)
            return compiler, _Ready(compiler.problem_key(), compiler.kind, None)
        baseline = Config.from_json(setup.baseline_json) if setup.baseline_json else None
        runner = Runner(_load(setup.ref), seed=setup.seed, baseline=baseline,
                        inputs=setup.ref.inputs, deterministic=setup.deterministic)
        return runner, _Ready(runner.problem_key(), runner.kind, device_facts())
    except BaselineError as e:
        return None, _NotReady(str(e), baseline=True)
    except Exception as e:
        return None, _NotReady(f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")


def _free_memory() -> None:
    """Give cached GPU memory back (the runner's tensors are freed as it is dropped)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _child(conn: Connection, setup: Setup, parent: int, stderr_path: str) -> None:
    _die_with_parent()
    if os.getppid() != parent:
        return  # the parent died before the line above took effect
    from .backend import COMPILE_ONLY

    if os.environ.get(COMPILE_ONLY) == "1":
        os.environ.pop("TRITON_INTERPRET", None)  # it compiles for the GPU it cannot see
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from .runner import BaselineError

    runner, message = _ready(setup)
    conn.send(message)
    if runner is None:
        return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return  # the parent closed its end or died: nothing more will come
        if isinstance(request, Setup):  # a new task
            runner = None  # the old task's inputs are freed before the new one's are made
            runner, message = _ready(request)
            conn.send(message)
            if runner is None:
                return
            continue
        if request is None:  # unload: kept idle, holding no inputs, outputs or GPU memory
            runner = None
            _free_memory()
            continue
        try:
            conn.send((Outcome.OK, request.run(runner)))
        except BaselineError as e:
            conn.send((Outcome.BASELINE_ERROR, str(e)))
        except Exception as e:
            outcome = _classify(e)
            conn.send((outcome, f"{type(e).__name__}: {str(e).strip()[:2000]}"))
            if outcome is Outcome.CRASHED:
                os._exit(3)  # the CUDA context is poisoned: never reuse it


class Worker:
    """One isolated process running one task's configs, replaced after a crash or timeout.

    `env` (e.g. CUDA_VISIBLE_DEVICES) is set for the process before it imports anything;
    `setup_timeout` bounds loading the task (import, inputs, reference or baseline on draw 0).
    """

    def __init__(self, ref: TaskRef, *, seed: int, baseline_json: str | None,
                 setup_timeout: float = 600.0, deterministic: bool = True,
                 env: dict[str, str] | None = None) -> None:
        self.setup = Setup(ref, seed, baseline_json, deterministic)
        self.setup_timeout = setup_timeout
        self.env = dict(env or {})
        self._proc: Any = None
        self._conn: Connection | None = None
        self._pending = False  # a setup was sent; its answer not read yet
        self._stderr = tempfile.NamedTemporaryFile(prefix="tunegate-worker-", suffix=".log",
                                                   delete=False)
        self.problem_key: str | None = None
        self.kind: str | None = None
        self.device_facts: tuple[str, int] | None = None  # see runner.device_facts

    @property
    def ref(self) -> TaskRef:
        return self.setup.ref

    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def idle(self) -> bool:
        """Alive with nothing in flight: may be re-tasked."""
        return self.alive() and not self._pending

    def launch(self) -> None:
        """Start the process, which loads the task while the caller goes on; `wait` for it."""
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_child, daemon=True,
                                 args=(child, self.setup, os.getpid(), self._stderr.name))
        with _environment(self.env):
            self._proc.start()
        child.close()
        self._pending = True

    def retask(self, setup: Setup) -> None:
        """Load another task (from the same, unchanged file) into the live process; `wait`."""
        assert self._conn is not None and not self._pending
        self.setup = setup
        self._conn.send(setup)
        self._pending = True

    def unload(self) -> None:
        """Have the idle process drop the task's inputs and expected outputs (no answer)."""
        assert self._conn is not None and not self._pending
        self._conn.send(None)

    def wait(self) -> None:
        """Wait for the task to load; raises WorkerSetupError (BaselineFailed) if it did not,
        and stops the process on Ctrl-C."""
        if not self._pending:
            return
        assert self._conn is not None
        self._pending = False
        try:
            answered = self._conn.poll(self.setup_timeout)
        except KeyboardInterrupt:
            self.stop()
            raise
        if not answered:
            self.stop()
            raise WorkerSetupError(f"the worker did not load the task within "
                                   f"{self.setup_timeout:.0f} s (the per-config timeout)")
        try:
            msg = self._conn.recv()
        except EOFError:
            self.stop()
            raise WorkerSetupError("the worker died while loading the task:\n"
                                   + self.stderr_tail()) from None
        if isinstance(msg, _NotReady):
            self.stop()
            raise (BaselineFailed if msg.baseline else WorkerSetupError)(msg.error)
        self.problem_key, self.kind, self.device_facts = msg.problem_key, msg.kind, \
            msg.device_facts

    def start(self) -> None:
        self.launch()
        self.wait()

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
        self._conn.send(request)
        if not self._conn.poll(timeout):
            self.stop()
            return Reply(Outcome.TIMEOUT, error=f"no answer within {timeout:.0f} s (killed)",
                         seconds=time.perf_counter() - start)
        try:
            msg = self._conn.recv()
        except EOFError:
            code = self._proc.exitcode if self._proc else None
            self.stop()
            tail = self.stderr_tail()
            return Reply(Outcome.CRASHED, error=f"worker died (exit code {code})"
                         + (f":\n{tail}" if tail else ""), seconds=time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        outcome, value = msg
        if outcome is Outcome.OK:
            return Reply(outcome, value=value, seconds=elapsed)
        if outcome is Outcome.CRASHED:
            self.stop()
        return Reply(outcome, error=value, seconds=elapsed)

    def stop(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=10)
        self._proc = None
        self._pending = False
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass
