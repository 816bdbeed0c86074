"""Isolated worker processes: a crash, a hang or a poisoned CUDA context costs one config.

The parent sends one request at a time and waits with a timeout. A worker that times out is
killed; one that dies (a compiler abort, a sticky CUDA error) is replaced; either way the request
comes back as an `Outcome` with the reason, and the next request gets a fresh process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

__all__ = ["BaselineFailed", "Reply", "TaskRef", "Worker", "WorkerSetupError"]

# Errors after which a CUDA context is unusable: the worker must not take another config.
_STICKY = ("CUDA error", "AcceleratorError", "illegal memory access", "misaligned address",
           "unspecified launch failure", "device-side assert")
_COMPILE = ("CompilationError", "OutOfResources", "PassManager", "MLIR", "CompileTimeAssertion")


class WorkerSetupError(RuntimeError):
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


@dataclass
class Reply:
    """What one request produced."""

    status: Literal["ok", "error", "compile_error", "timeout", "crashed", "baseline_error"]
    value: Any = None
    error: str | None = None
    seconds: float = 0.0


def _classify(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    if any(s in text for s in _STICKY):
        return "crashed"
    if any(s in text for s in _COMPILE) or _rejected_by_the_language(e):
        return "compile_error"
    return "error"


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


def _child(conn: Connection, ref: TaskRef, seed: int, baseline_json: str | None,
           stderr_path: str, deterministic: bool) -> None:
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from ..space.space import Config
    from .runner import BaselineError, Runner

    try:
        baseline = Config.from_json(baseline_json) if baseline_json else None
        runner = Runner(_load(ref), seed=seed, baseline=baseline, inputs=ref.inputs,
                        deterministic=deterministic)
        conn.send(("ready", runner.problem_key(), runner.kind))
    except BaselineError as e:
        conn.send(("baseline_error", str(e)))
        return
    except Exception as e:
        conn.send(("setup_error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))
        return
    while True:
        try:
            op, config_json, arg = conn.recv()
        except EOFError:
            return
        config = Config.from_json(config_json)
        try:
            value = _operate(runner, op, config, arg)
            conn.send(("ok", value))
        except BaselineError as e:
            conn.send(("baseline_error", str(e)))
        except Exception as e:
            kind = _classify(e)
            conn.send((kind, f"{type(e).__name__}: {str(e).strip()[:2000]}"))
            if kind == "crashed":
                os._exit(3)  # the CUDA context is poisoned: never reuse it


def _operate(runner: Any, op: str, config: Any, arg: Any) -> Any:
    """One request: 'check' (draws, first draw), 'stress' (settings), 'time' or 'compile'.
    Check times exclude the first launch, which loads the compiled kernel."""
    if op == "compile":
        return runner.compile(config)
    if op == "time":
        ms, mismatch, vote, seconds = runner.time(config)
        return ms, mismatch.model_dump() if mismatch else None, vote, seconds
    runner.warm(config)
    if op == "stress":
        from .stress import StressCheck

        return runner.stress(config, StressCheck.model_validate(arg)).model_dump()
    draws, first = arg
    start = time.perf_counter()
    mismatch, draw, vote = runner.check(config, draws, first)
    return (mismatch.model_dump() if mismatch else None, draw, vote,
            time.perf_counter() - start)


class Worker:
    """One isolated process running one task's configs, replaced after a crash or timeout."""

    def __init__(self, ref: TaskRef, *, seed: int, baseline_json: str | None,
                 setup_timeout: float = 600.0, deterministic: bool = True) -> None:
        self.ref, self.seed, self.baseline_json = ref, seed, baseline_json
        self.deterministic = deterministic
        self.setup_timeout = setup_timeout
        self._proc: Any = None
        self._conn: Connection | None = None
        self._stderr = tempfile.NamedTemporaryFile(prefix="tunegate-worker-", suffix=".log",
                                                   delete=False)
        self.problem_key: str | None = None
        self.kind: str | None = None

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_child, daemon=True,
                                 args=(child, self.ref, self.seed, self.baseline_json,
                                       self._stderr.name, self.deterministic))
        self._proc.start()
        child.close()
        if not self._conn.poll(self.setup_timeout):
            self.stop()
            raise WorkerSetupError(f"the worker did not start in {self.setup_timeout:.0f} s")
        try:
            msg = self._conn.recv()
        except EOFError:
            self.stop()
            raise WorkerSetupError("the worker died while loading the task:\n"
                                   + self.stderr_tail()) from None
        if msg[0] == "baseline_error":
            self.stop()
            raise BaselineFailed(msg[1])
        if msg[0] != "ready":
            self.stop()
            raise WorkerSetupError(msg[1])
        _, self.problem_key, self.kind = msg

    def stderr_tail(self, lines: int = 12) -> str:
        try:
            with open(self._stderr.name, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:]).strip()
        except OSError:
            return ""

    def request(self, op: str, config_json: str, arg: Any = None,
                timeout: float = 120.0) -> Reply:
        """Run one operation on one config; never raises for what the kernel does."""
        if self._proc is None or not self._proc.is_alive():
            self.start()
        assert self._conn is not None
        start = time.perf_counter()
        self._conn.send((op, config_json, arg))
        if not self._conn.poll(timeout):
            self.stop()
            return Reply("timeout", error=f"no answer within {timeout:.0f} s (killed)",
                         seconds=time.perf_counter() - start)
        try:
            msg = self._conn.recv()
        except EOFError:
            code = self._proc.exitcode if self._proc else None
            self.stop()
            tail = self.stderr_tail()
            return Reply("crashed", error=f"worker died (exit code {code})"
                         + (f":\n{tail}" if tail else ""), seconds=time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        if msg[0] == "ok":
            return Reply("ok", value=msg[1], seconds=elapsed)
        if msg[0] == "crashed":
            self.stop()
        return Reply(msg[0], error=msg[1], seconds=elapsed)

    def stop(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=10)
        self._proc = None
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass
