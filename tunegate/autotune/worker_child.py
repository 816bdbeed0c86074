"""The body of an isolated worker process: load the task, answer requests, die cleanly.

It runs each `Request` on its runner and answers (outcome, result or error text); an error that
poisons the CUDA context is answered `crashed` and ends the process, so no later config runs in
it. It dies with its parent, and leaves Ctrl-C to the parent.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable

from ..outcome import Outcome
from . import steering, trace
from .backend import COMPILE_ONLY
from .workload import Setup, TaskRef

__all__ = ["Loaded", "NotReady", "Preload", "Ready", "build_ahead", "child_main", "classify",
           "die_with_parent", "ready"]

# Errors after which a CUDA context is unusable: the worker must not take another config.
_STICKY = ("CUDA error", "AcceleratorError", "illegal memory access", "misaligned address",
           "unspecified launch failure", "device-side assert")
_COMPILE = ("CompilationError", "OutOfResources", "PassManager", "MLIR", "CompileTimeAssertion")


def classify(e: BaseException) -> Outcome:
    """What a raise means: a crash (the CUDA context is unusable), a compile error, or an error."""
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


def _load(ref: TaskRef, local: Any = None) -> Any:
    """The task `ref` names: imported, or made from `local` (the object itself, in-process)."""
    import importlib

    from ..kernelfile import load_module

    if local is not None:
        obj = local
    else:
        with trace.span("import", module=ref.module or ref.file):
            module = importlib.import_module(ref.module) if ref.module else \
                load_module(ref.file)
        obj = getattr(module, ref.name)
    if ref.call is not None:
        return ref.call.task(obj)
    return getattr(obj, "task", obj)


@dataclass(frozen=True)
class Ready:
    """A worker's answer to a setup that worked: what it loaded, for which device, and (a run
    worker) the arguments as compile workers specialise on them (see `Runner.arg_specs`)."""

    problem_key: str
    kind: str
    device_facts: tuple[str, int] | None  # see runner.device_facts
    arg_specs: dict[str, Any] | None = None


@dataclass(frozen=True)
class Loaded:
    """A run worker's word, before its reference or baseline first runs, that the task's
    module loaded: a crash from here on is the baseline's (or the reference's), not the
    module's, which another process would import no better."""


@dataclass(frozen=True)
class NotReady:
    """A worker's answer to a setup that failed; `baseline` when the reference or baseline
    failed (nothing can be checked), else the task could not be loaded."""

    error: str
    baseline: bool = False


@dataclass(frozen=True)
class Preload:
    """Modules an idle worker imports ahead of the task that will name them (see
    `warm.preload`), in order, with the tuning process's `sys.path` (None: the one sent
    last): no answer, and an import that fails is left for that task's own import to report."""

    modules: tuple[str, ...]
    sys_path: tuple[str, ...] | None

    def load(self) -> None:
        import importlib

        if self.sys_path is not None:
            sys.path[:] = list(self.sys_path)
        for module in self.modules:
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - see above
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def die_with_parent() -> None:
    """On Linux, have the kernel kill this process when its parent dies (even by SIGKILL):
    the tuning process, or the fork server, which ends with it. The kernel means the parent
    thread: a process spawned from a thread dies as that thread ends."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def ready(setup: Setup, local: Any = None, loaded: Callable[[], None] = lambda: None
          ) -> tuple[Any, Ready | NotReady]:
    """The runner for `setup` (its task made from `local` where given, see `_load`), and the
    message that says whether it could be made; `loaded` is called once the task is loaded,
    before the runner runs anything."""
    from ..space.space import Config
    from .runner import BaselineError, Runner, device_facts

    if setup.sys_path:  # where the tuning process finds modules now (a spare started earlier)
        sys.path[:] = list(setup.sys_path)
    try:
        if setup.cwd:
            os.chdir(setup.cwd)
        if os.environ.get(COMPILE_ONLY) == "1":
            from .precompile import TaskCompiler

            compiler = TaskCompiler(_load(setup.ref, local), seed=setup.seed,
                                    inputs=setup.ref.inputs)
            return compiler, Ready("", compiler.kind, None)
        baseline = Config.from_json(setup.baseline_json) if setup.baseline_json else None
        task = _load(setup.ref, local)
        loaded()
        with trace.span("runner"):
            runner = Runner(task, seed=setup.seed, baseline=baseline, inputs=setup.ref.inputs,
                            deterministic=setup.deterministic)
        return runner, Ready(runner.problem_key(), runner.kind, device_facts(),
                             runner.arg_specs())
    except BaselineError as e:
        return None, NotReady(str(e), baseline=True)
    except Exception as e:
        return None, NotReady(f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")


def build_ahead(runner: Any, due: Callable[[], bool] = lambda: True) -> None:
    """What a run worker starts once it has said that it is ready, while the tuning hands the
    compile workers their configs: the launcher of draw 0's signature (see
    `launchers.build_launcher_ahead`), off the path to their first compile (a softmax run
    worker's start took 0.1 s more for it), the checks' device kernels (`warm_checks`), and
    then, until `due()` says that a request waits, the stress check's draws
    (`Runner.stress_draws_ahead`)."""
    from .runner import Runner
    from .stress import DRAWS

    if not isinstance(runner, Runner) or runner.kind != "gpu":
        return
    if runner.task.launch is None:
        from .launchers import build_launcher_ahead

        build_launcher_ahead(runner.task.kernel, runner.inputs(0))
    from .warm_checks import warm_checks

    with trace.span("warm checks"):
        try:
            warm_checks(runner)
        except Exception as e:  # noqa: BLE001 - a warm-up must never fail the tuning; the
            trace.event("warm checks failed", error=f"{type(e).__name__}: {e}")  # checks
            # themselves report what is wrong, with context
    if due():
        return
    with trace.span("stress draws ahead"):
        try:
            runner.stress_draws_ahead(DRAWS["gpu"], due)
            failure: BaseException | None = runner.ahead_failure
        except Exception as e:  # noqa: BLE001 - the stress check makes them again and
            failure = e  # reports what is wrong, with context
            trace.event("stress draws ahead failed", error=f"{type(e).__name__}: {e}")
    if failure is not None and classify(failure) is Outcome.CRASHED:
        # The CUDA context is unusable: any request would fail as if its config had crashed.
        print(f"tunegate: a stress draw made ahead broke the GPU context, so this worker "
              f"ends: {type(failure).__name__}: {str(failure)[:500]}", file=sys.stderr,
              flush=True)
        os._exit(3)


def _prepare_spare() -> None:
    """A spare run worker pays its one-time costs before it has a task: its CUDA context and
    Triton's GPU driver. A compile worker (no GPU) and the interpreter have neither."""
    if os.environ.get(COMPILE_ONLY) == "1" or os.environ.get("TRITON_INTERPRET") == "1":
        return
    try:
        import torch

        if torch.cuda.is_available():
            with trace.span("cuda context"):
                torch.zeros(1, device="cuda")
                torch.cuda.synchronize()
            import triton

            from .launchers import building, driver_helper

            with trace.span("triton driver"), building(driver_helper()):
                triton.runtime.driver.active.get_current_device()
    except Exception:  # noqa: BLE001 - the task's own load reports what is wrong, with context
        pass


def _let_the_server_end() -> None:
    """A worker forked from a fork server holds a copy of the write end of the server's
    "alive" pipe (multiprocessing gives it one, to start processes of its own from there,
    which a worker never does); the server ends only when every copy is closed. Held here, a
    worker stuck in a kernel kept the server alive after the program was killed, and the
    server kept it alive in turn (it dies with the server): both ran on for good."""
    from multiprocessing import forkserver

    from .worker_server import close_alive_end

    close_alive_end(forkserver._forkserver)  # noqa: SLF001 - where the fork server put it


def _free_memory() -> None:
    """Give cached GPU memory back (the runner's tensors are freed as it is dropped)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _take_task(conn: Connection, setup: Setup) -> Any:
    """Load `setup`'s task, with the steering variables it brings (see `steering`), and say
    whether that worked; the runner, or None (the worker then ends)."""
    steering.take_late(setup.late_env)
    with trace.span("load task"):
        runner, message = ready(setup, loaded=lambda: conn.send(Loaded()))
    conn.send(message)
    build_ahead(runner, conn.poll)
    return runner


def child_main(conn: Connection, first: list[Setup], parent: int, stderr_path: str,
               environ: dict[str, str]) -> None:
    """The worker process: load the task in `first` (a spare, with none, waits for its first
    task), then answer requests until the parent closes the pipe. The task is taken out of
    `first`, which multiprocessing keeps for the process's whole life: an unloaded task must
    leave nothing behind, above all not the caller's GPU memory, shared (CUDA IPC)."""
    die_with_parent()
    _let_the_server_end()
    if not _alive(parent):
        return  # the parent died before the line above took effect
    os.environ.clear()  # the parent's environment, also when forked from a server started
    os.environ.update(environ)  # earlier, under another one
    from . import warm

    warm.forbid()  # the kernels this process imports must not start workers of their own
    if os.environ.get(COMPILE_ONLY) == "1":
        os.environ.pop("TRITON_INTERPRET", None)  # it compiles for the GPU it cannot see
    if os.environ.get("TRITON_INTERPRET") != "1":
        from .launchers import build_launchers_beside_compiles

        build_launchers_beside_compiles()
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    os.dup2(fd, 1)  # what the user's code prints here is not the parent's output either
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from .runner import BaselineError

    trace.event("worker start", role="compile" if os.environ.get(COMPILE_ONLY) == "1" else "run")
    if not first:
        runner: Any = None
        with trace.span("prepare spare"):
            _prepare_spare()
    else:
        runner = _take_task(conn, first.pop())
        if runner is None:
            return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return  # the parent closed its end or died: nothing more will come
        if isinstance(request, Setup):  # a new task
            runner = None  # the old task's inputs are freed before the new one's are made
            runner = _take_task(conn, request)
            if runner is None:
                return
            continue
        if isinstance(request, Preload):  # a head start on a task to come: no answer
            with trace.span("preload", module=request.modules[0],
                            modules=len(request.modules)):
                request.load()
            continue
        if request is None:  # unload: kept idle, holding no inputs, outputs or GPU memory
            runner = None
            _free_memory()
            continue
        try:
            with trace.span(type(request).__name__):
                answer = request.run(runner)
            conn.send((Outcome.OK, answer))
        except BaselineError as e:
            conn.send((Outcome.BASELINE_ERROR, str(e)))
        except Exception as e:
            outcome = classify(e)
            conn.send((outcome, f"{type(e).__name__}: {str(e).strip()[:2000]}"))
            if outcome is Outcome.CRASHED:
                os._exit(3)  # the CUDA context is poisoned: never reuse it
