"""The tuner's worker pool: one run worker per device, and on a GPU compile workers beside them.

Workers outlive one tuning run: a closed pool hands its live workers to this module, and the
next pool of the same process takes them back and only sends them the new task (no new
process, no new imports), for any kernel and file, unless the worker already imported that
file and it changed since, or a variable it read as it started changed (those it reads while it
works come with each task: `steering`). A kernel file imported by path shares a worker only
with files of its own folder (their sibling imports would otherwise meet the other folder's
modules of the same name). They are closed at exit.
"""

from __future__ import annotations

import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Hashable, Iterator

from .._threads import start as start_thread
from ..errors import TunegateError
from ..space.space import Config
from ..limits import MAX_DEVICES
from .backend import COMPILE_ONLY
from . import compile_server, steering, trace
from .compile_stream import CompileStream
from .local import LocalWorker
from .messages import Reply
from .warm import wait_for_spares
from .worker import Setup, TaskRef, Worker, WorkerSetupError, file_stamp

__all__ = ["COMPILE_ENV", "WorkerPool", "close_idle_workers", "idle_workers", "compile_cores",
           "device_count", "keep_spare", "preload", "visible_devices"]

# A compile worker's environment: it sees no GPU and compiles for the run worker's target.
COMPILE_ENV = {COMPILE_ONLY: "1", "CUDA_VISIBLE_DEVICES": ""}

# Live workers not in use, by (variables read at start, role); spares arrive from another
# thread.
_IDLE: dict[tuple[Hashable, str], list[Worker]] = {}
_IDLE_LOCK = threading.Lock()
_KEPT_PER_ROLE = 64  # at most this many idle workers of one role are kept
# Kept compile workers that import the preloads too (the first ones kept): ready at a library's
# first tuning, where each of the others imports the library then. Fifteen importing at once
# beside the program took 16-21 s each on an H200 host and slowed the program; a few do not.
PRELOADING_COMPILERS = 3
# Kernel files and modules that compile workers could not load in this process (one that
# needs a GPU to import, say): no compile worker is started for them again.
_UNCOMPILABLE: set[str] = set()
# Compile workers asked of the compile server and not yet loaded (under _IDLE_LOCK): while it
# imports a library, quick tunings one after another must not pile up a score of forks each.
_STARTING_COMPILERS = [0]
# Compile workers whose task load has not ended yet (under _IDLE_LOCK). While one of an
# earlier pool still imports a library, a new one would only import the same beside it: on an
# H100 host three Liger-Kernel tunings in a row each forked twelve more while the first twelve
# still imported it (51 compile workers, most of them importing beside the program).
_LOADING_COMPILERS: set[Worker | LocalWorker] = set()


def _where(ref: TaskRef) -> str:
    return ref.module or ref.file


def close_idle_workers() -> None:
    """Stop every kept worker, and every compile worker still loading a task for a pool
    (at exit, or to free their memory)."""
    with _IDLE_LOCK:
        workers = [w for kept in _IDLE.values() for w in kept]
        _IDLE.clear()
        loading = list(_LOADING_COMPILERS)
        _LOADING_COMPILERS.clear()  # so its loading thread knows it was stopped, not broken
    with trace.span("close idle workers", workers=len(workers)):
        for w in workers + loading:
            w.kill()
        for w in workers:
            w.close()


atexit.register(close_idle_workers)


def _forget_the_parents() -> None:
    """In a forked child (a process of the program's own): the parent's workers are not this
    process's to use or stop, and a lock another thread held as it forked would stay held."""
    global _IDLE_LOCK
    _IDLE_LOCK = threading.Lock()
    _IDLE.clear()
    _LOADING_COMPILERS.clear()
    _STARTING_COMPILERS[0] = 0


os.register_at_fork(after_in_child=_forget_the_parents)


def idle_workers() -> list[Worker]:
    """The live workers kept for the next pool of this process."""
    with _IDLE_LOCK:
        return [w for workers in _IDLE.values() for w in workers]


def keep_spare(role: str, worker: Worker) -> None:
    """Keep a worker started ahead of any task (see `warm`) for the next pool's `role`; a run
    worker, or one of the first compile workers, imports the modules asked for so far (see
    `preload`)."""
    with _IDLE_LOCK:
        kept = _IDLE.setdefault((steering.at_start(), role), [])
        kept.append(worker)
        if _imports_preloads(role, kept, worker):
            _send_preloads([worker])


# Modules whose kernels this process will tune (see `preload`), in the order they were named.
_PRELOADS: dict[str, None] = {}


def preload(*modules: str) -> None:
    """Have every kept run worker and the first PRELOADING_COMPILERS kept compile workers, and
    each one kept from now on in their place, import `modules` ahead of the tunings that will
    name them (the module of an autotuner the program defined, the libraries it imports: see
    `mirror`), and the compile server too, where it runs. The other compile workers import
    them when a tuning needs them."""
    with _IDLE_LOCK:
        for module in modules:
            _PRELOADS[module] = None  # a set that keeps the order they were named in
        _send_preloads([w for (_, role), workers in _IDLE.items() for w in workers
                        if _imports_preloads(role, workers, w)])  # all: one may have moved up
    compile_server.preload(modules)


def _imports_preloads(role: str, kept: list[Worker], worker: Worker) -> bool:
    """Whether `worker`, kept in `kept`, imports the preloads (see `preload`)."""
    return role != "compile" or worker in kept[:PRELOADING_COMPILERS]


def _send_preloads(workers: list[Worker]) -> None:
    """The preloads each worker has not been sent yet, in one message (under _IDLE_LOCK: a
    worker taken for a task leaves _IDLE under it, so nothing else writes to its pipe
    meanwhile). What its pipe has no room for now is sent with the next preload, or when it
    is kept again."""
    for w in workers:
        todo = [m for m in _PRELOADS if m not in w.preloaded]
        if todo and w.idle():
            try:
                w.preload(todo)
            except OSError:  # it died just now: the pool will not take it
                pass


def visible_devices() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def device_count(gpu: bool, requested: int | None = None) -> int:
    """How many run workers: `requested`, else TUNEGATE_DEVICES, else every visible GPU (one
    without a GPU). Under the interpreter N > 1 simulates N devices with N run workers."""
    if requested is None and os.environ.get("TUNEGATE_DEVICES"):
        requested = _devices_from_env(os.environ["TUNEGATE_DEVICES"])
    if requested is not None:
        if requested < 1:
            raise WorkerSetupError(f"the number of devices must be at least 1, got {requested}")
        if gpu:
            return min(requested, max(1, len(visible_devices())))
        return requested
    return max(1, len(visible_devices())) if gpu else 1


class DevicesError(ValueError, TunegateError):
    """TUNEGATE_DEVICES is not a whole number from 1 to MAX_DEVICES."""


def _devices_from_env(text: str) -> int:
    """TUNEGATE_DEVICES as a device count; bad input (exit 2) names the variable and value."""
    digits = text.strip()
    count = int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 4 else 0
    if not 1 <= count <= MAX_DEVICES:
        raise DevicesError(f"TUNEGATE_DEVICES must be a whole number from 1 to {MAX_DEVICES}, "
                           f"got {text!r}")
    return count


def cpu_cores(cap: int = 32) -> int:
    """The CPU cores this process may run on (its affinity), at most `cap`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cap, cores))


def compile_cores(devices: int = 1) -> int:
    """How many processes compile at once by default: a core each, less one core for each run
    worker, which launches kernels to time them while the other configs compile."""
    return max(1, cpu_cores() - devices)


def _can_load(worker: Worker, ref: TaskRef) -> bool:
    """Whether the live worker may load `ref`: it has not imported the file in another state,
    and a file imported by path lies in the folder of the files it imported by path."""
    loaded = worker.loaded
    if ref.file in loaded and loaded[ref.file] != file_stamp(ref.file):
        return False
    if ref.module is None:
        folders = {os.path.dirname(f) for f, by_path in worker.by_path.items() if by_path}
        return not folders or folders == {os.path.dirname(ref.file)}
    return True


def _try_wait(worker: Worker | LocalWorker) -> WorkerSetupError | None:
    """Wait for a worker; the error instead of raising, so several can be awaited at once."""
    try:
        worker.wait()
    except WorkerSetupError as e:
        return e
    trace.event("worker ready", worker=worker.pid)
    return None


class WorkerPool:
    """`runs` (one per device) take the requests that launch kernels; `compile_stream` spreads
    compile requests over the compile workers (`compile_ahead` starts one before the run
    workers are ready). `launch` starts or re-tasks them without waiting; `start` waits. With
    `loaded_only`, the compile workers are only kept ones that have imported the task's file."""

    def __init__(self, ref: TaskRef, *, seed: int, baseline_json: str | None, compilers: int,
                 deterministic: bool, devices: int = 1, gpu: bool = False,
                 setup_timeout: float = 600.0, precompile: bool = False,
                 loaded_only: bool = False) -> None:
        self.setup = Setup(ref, seed, baseline_json, deterministic).placed()
        self._compile_setup = Setup(ref.compiling(), seed, baseline_json, deterministic).placed()
        if ref.local is not None:  # tuned in this process: one run worker, no compile workers
            devices, compilers = 1, 0
        self.identity = steering.at_start()
        self.setup_timeout = setup_timeout
        gpus = visible_devices() if gpu else []
        self._envs = [{"CUDA_VISIBLE_DEVICES": gpus[i]} if gpu and devices > 1 else {}
                      for i in range(devices)]
        self.runs: list[Worker | LocalWorker] = []
        self.compilers: list[Worker | LocalWorker] = []
        self._compilers_wanted = compilers
        self._loaded_only = loaded_only  # only kept compile workers that imported the file
        # With `precompile`, compile workers see no GPU and compile into Triton's cache for
        # the target the run worker reports; else they compile on the GPU.
        self._compile_env = dict(COMPILE_ENV) if precompile else {}
        self.notes: list[str] = []  # why compile workers were dropped
        self._all_launched = False
        # Each compile worker's task load is awaited by a thread of its own (see `start`);
        # its event is set once it has loaded (or was dropped). Under _lock: `_closed`.
        self._loaded: dict[Worker | LocalWorker, threading.Event] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.reused = 0  # workers taken over from an earlier pool
        self._ahead: CompileStream | None = None  # see `compile_ahead`

    @property
    def run(self) -> Worker | LocalWorker:
        return self.runs[0]

    def _take(self, role: str, env: dict[str, str], new: bool = True, loaded: bool = False
              ) -> Worker | LocalWorker | None:
        """A kept worker of this role and device (with `loaded`, one that has imported the
        task's file), re-tasked; else a new one, unless not `new` (None: a compile worker not
        started now, see `_give`). A run worker that sees one GPU of several gets the call's
        tensors as host copies; so does any worker, should this process's GPU memory fail to
        be shared (CUDA IPC)."""
        s = self._compile_setup if role == "compile" else self.setup
        if s.ref.local is not None:
            local = LocalWorker(s, self.setup_timeout)
            local.launch()  # loads (and may fail) when waited for, as a process does
            return local
        if role != "compile" and "CUDA_VISIBLE_DEVICES" in env:
            s = replace(s, ref=s.ref.on_host())
        try:
            return self._give(role, env, s, new, loaded)
        except (KeyboardInterrupt, OSError):
            raise
        except Exception as e:  # noqa: BLE001 - what pickling a GPU tensor for IPC raises
            host = replace(s, ref=s.ref.on_host())
            if host.ref.inputs is s.ref.inputs:
                raise
            self.notes.append(f"the call's GPU tensors could not be shared with a worker "
                              f"({type(e).__name__}: {str(e)[:200]}); it got host copies")
            return self._give(role, env, host, new, loaded)

    def _give(self, role: str, env: dict[str, str], s: Setup, new: bool = True,
              loaded: bool = False) -> Worker | None:
        """`s` given to a kept worker of this role and device (one that has imported its file,
        if any has; with `loaded`, only such a one), else to a new one (None if not `new`). A
        compile worker forked from the compile server is started by its loading thread (see
        `_load_compiler`), and none while as many as compile cores are still starting; any
        other here, in a thread that outlives it (a process spawned from a thread is killed as
        that thread ends: see `worker_child.die_with_parent`)."""
        wait_for_spares()
        forked = role == "compile" and compile_server.running()
        with _IDLE_LOCK:
            kept = _IDLE.get((self.identity, role), [])
            found = min((w for w in kept if w.env == env and w.alive() and _can_load(w, s.ref)
                         and (not loaded or s.ref.file in w.loaded)),
                        key=lambda w: s.ref.file not in w.loaded, default=None)
            if found is not None:
                kept.remove(found)
            elif not new:
                return None
            elif forked:
                if _STARTING_COMPILERS[0] >= compile_cores():
                    return None
                _STARTING_COMPILERS[0] += 1
        if found is None:
            w = Worker(s.ref, seed=s.seed, baseline_json=s.baseline_json,
                       deterministic=s.deterministic, setup_timeout=self.setup_timeout, env=env)
            if not forked:
                w.launch()
            return w
        found.setup_timeout = self.setup_timeout
        try:
            found.retask(s)
        except OSError:  # it died while kept (killed, out of memory): another one instead (a
            found.close()  # closed pipe must not reach the CLI: see Worker.request)
            return self._give(role, env, s, new, loaded)
        except BaseException:  # the setup could not be sent: the worker is as it was
            with _IDLE_LOCK:
                kept.append(found)
            raise
        self.reused += 1
        return found

    def launch(self, first_only: bool = False) -> None:
        """Start (or re-task) the workers not yet started, without waiting for them to load
        the task; with `first_only`, only the first run worker."""
        if not self.runs:
            self.runs = [self._take("run0", self._envs[0])]
        if first_only or self._all_launched:
            return
        self._all_launched = True
        self.runs += [self._take(f"run{i}", env) for i, env in enumerate(self._envs) if i]
        wanted = 0 if _where(self.setup.ref) in _UNCOMPILABLE else self._compilers_wanted
        with _IDLE_LOCK:  # else only kept ones: see _LOADING_COMPILERS
            new = not _LOADING_COMPILERS and not self._loaded_only
        self.compilers = [w for w in (self._take("compile", self._compile_env, new,
                                                 self._loaded_only)
                                      for _ in range(wanted)) if w is not None]
        with _IDLE_LOCK:
            _LOADING_COMPILERS.update(self.compilers)
        for worker in self.compilers:
            self._loaded[worker] = threading.Event()
            start_thread(self._load_compiler, worker, name="tunegate-compile-worker-load")

    def start_first(self) -> None:
        """Start only the first run worker and wait for it (enough to re-check a stored best)."""
        self.launch(first_only=True)
        self._wait([self.run], runs=1)

    def start(self) -> None:
        """Start every worker and wait for the run workers; raises the first one's setup error
        (a failing reference or baseline among them). Compile workers go on loading the task
        meanwhile (a large library imports for seconds in each): `compile_stream` takes each
        once it has."""
        self.launch()
        self._wait(self.runs, runs=len(self.runs))

    def _load_compiler(self, worker: Worker | LocalWorker) -> None:
        """Start a new compile worker (its fork waits while the compile server imports), wait
        for it to load the task; drop it if it cannot. Once the pool was closed meanwhile, the
        worker is kept for the next pool here (or stopped)."""
        starting = not worker.started
        try:
            if starting:
                worker.launch()
        except Exception as e:  # noqa: BLE001 - said in the pool's notes; its configs compile
            error: WorkerSetupError | None = WorkerSetupError(  # at their first launch
                f"a compile worker could not start: {type(e).__name__}: {e}")
        else:
            error = _try_wait(worker)
        with _IDLE_LOCK:
            stopped = worker not in _LOADING_COMPILERS  # by close_idle_workers
            _LOADING_COMPILERS.discard(worker)
            if starting:
                _STARTING_COMPILERS[0] -= 1
        with self._lock:
            if error is not None and stopped:
                worker.close()
            elif error is not None:
                self._drop_compiler(worker, error)
            self._loaded[worker].set()
            closed = self._closed
        if closed and error is None:
            _keep_or_close("compile", worker, self.identity)

    def _wait(self, workers: list[Worker | LocalWorker], runs: int) -> None:
        """Wait for `workers` to load the task, side by side; on Ctrl-C stop them all (a
        single one stops itself: `Worker.wait`)."""
        if len(workers) == 1:  # in this thread: an in-process worker keeps its CUDA device
            errors = [_try_wait(workers[0])]
        else:
            pool = ThreadPoolExecutor(max_workers=len(workers))
            try:
                errors = list(pool.map(_try_wait, workers))
            except KeyboardInterrupt:
                for w in workers:
                    w.stop()
                raise
            finally:
                pool.shutdown(wait=False)  # never wait on a thread still reading a pipe
        failed = next((e for e in errors[:runs] if e is not None), None)
        if failed is not None:
            self.close()
            raise failed

    def _drop_compiler(self, worker: Worker | LocalWorker, error: Exception) -> None:
        """A compile worker that could not load the task: stopped, with a note; none is
        started for this file again in this process."""
        _UNCOMPILABLE.add(_where(self.setup.ref))
        note = (f"the compile workers could not load the task, so configs compile at their "
                f"first launch instead: {str(error)[:300]}")
        if note not in self.notes:
            self.notes.append(note)
        worker.close()

    @property
    def compilers_have_the_call(self) -> bool:
        """Whether the compile workers specialise on a call's argument dtypes (the drop-in's,
        `TaskRef.compiling`), not on the run worker's draw 0: they can compile before it is
        ready without making inputs of their own."""
        return self.setup.ref.has_call

    def compile_ahead(self, configs: list[Config], timeout: float, target: str) -> None:
        """Start compiling `configs` for `target` now, while the run worker still starts (no
        specialisation of its draw yet: each compile worker has the call's, see
        `TaskRef.compiling`); a `compile_stream` of those configs reads these answers instead
        of asking again."""
        if self.compilers and configs:
            self._ahead = CompileStream(self.compilers, self._loaded, configs, timeout, target,
                                        None)

    def compile_stream(self, configs: list[Config], timeout: float, target: str | None = None
                       ) -> Iterator[tuple[Config, Reply | None]]:
        """Compile `configs` in parallel (for `target`, in compile workers without a GPU,
        specialised on the run worker's draw 0), each config with its reply as soon as it is
        compiled, so that timing starts on the first while the others compile (see
        `CompileStream`); the answers of a `compile_ahead` of them where there is one. Without
        compile workers, none. Closed early, it waits for the compiles in flight."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.target == target and set(configs) <= ahead.configs:
            stream = ahead
        else:
            if ahead is not None:
                ahead.close()
            if not self.compilers:
                return
            specs = self.runs[0].arg_specs if self.runs else None
            stream = CompileStream(self.compilers, self._loaded, configs, timeout, target, specs)
        try:
            yield from stream.replies(configs)
        finally:
            self.compilers = [w for w in self.compilers if w.alive()]

    def close(self) -> None:
        """Keep the live, idle workers for the next pool of this process; stop the rest. A
        compile worker still loading the task is kept by its loading thread once loaded."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:  # its compiles in flight end first
            ahead.close()
        with self._lock:
            self._closed = True
            loading = {w for w, loaded in self._loaded.items() if not loaded.is_set()}
        roles = [(f"run{i}", w) for i, w in enumerate(self.runs)] + [
            ("compile", w) for w in self.compilers if w not in loading]
        for role, w in roles:
            _keep_or_close(role, w, self.identity)
        self.runs, self.compilers = [], []


def _keep_or_close(role: str, worker: Worker | LocalWorker, identity: Hashable) -> None:
    """Keep a live, idle worker for the next pool of this process (a run worker imports the
    preloads it lacks); stop it otherwise."""
    try:
        with _IDLE_LOCK:
            kept = _IDLE.setdefault((identity, role), [])
            if worker.idle() and len(kept) < _KEPT_PER_ROLE:
                worker.unload()
                kept.append(worker)
                if _imports_preloads(role, kept, worker):
                    _send_preloads([worker])
                return
    except OSError:  # it died just now
        pass
    worker.close()
