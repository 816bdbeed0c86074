"""Triton's C helpers built off a tuning's critical path, each once, by whoever is first.

With an empty Triton cache, a process's first launch builds two C extensions with the system
compiler: the driver's utilities (once per Triton install) and a launcher per kernel signature
(0.4-1.0 s each on an H200 host, most of a 16-config softmax's start-up and first timing). Both
are cached on disk by their C source. Here they are built ahead: the driver's utilities by a
background process as a tuning program starts (`build_driver_ahead`), a signature's launcher
in a thread beside the first compile of that signature, in a compile worker as in a run worker
(`build_launchers_beside_compiles`), and in a run worker from its draw 0 once it has said that
it is ready, before any config is compiled (`build_launcher_ahead`). A worker about to build a
helper that another process or thread is building waits for it (`building`) and then finds it
in the cache, instead of building it too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .._threads import start as start_thread
from . import trace

__all__ = ["build_driver_ahead", "build_launcher_ahead", "build_launchers_beside_compiles",
           "building", "driver_helper", "dry_warmup", "launcher_helper"]

log = logging.getLogger(__name__)

WAIT_S = 30.0  # at most this long for another process's build; then build it here as well
_POLL_S = 0.005


def _cache_dir() -> str:
    """Triton's cache folder as its knobs default it (no Triton import): helpers built for
    another cache are not waited for."""
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton", "cache")


def driver_helper() -> str:
    """The name under which the driver's utilities are built."""
    return _name("driver")


def launcher_helper(signature: dict[str, Any]) -> str | None:
    """The name under which the launcher of `signature` (argument name -> Triton type) is
    built; None for one with tensor descriptors, whose launcher also depends on the compiled
    kernel's metadata."""
    types = list(signature.values())
    if any(isinstance(t, str) and t.startswith("tensordesc") for t in types):
        return None
    return _name(f"launcher {types!r}")  # the C source depends on the types, in order


def _name(what: str) -> str:
    return hashlib.sha256(f"{_cache_dir()}|{what}".encode()).hexdigest()[:32]


def _lock_path(name: str) -> Path:
    folder = Path(tempfile.gettempdir()) / f"tunegate-{os.getuid()}" / "building"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.lock"


_THREAD_LOCKS: dict[str, threading.Lock] = {}  # a flock is per open file: threads of one
_THREAD_LOCKS_LOCK = threading.Lock()  # process wait for each other here first
_HELD = threading.local()  # the helpers this thread holds: a nested `building` goes straight on


@contextmanager
def building(name: str, wait: float = WAIT_S) -> Iterator[bool]:
    """Hold the lock of helper `name` while building (or loading) it: a thread or process that
    holds it already is waited for, at most `wait` seconds. Yields whether the lock is held
    (False: no locks on this platform, or the wait ran out; build it anyway). A helper built
    here or elsewhere before (`_built`) is loaded without the lock: a run worker's launches
    waited in turn behind every compile worker loading the launcher it had built (0.1 s for
    a softmax's second config on an H100)."""
    held: set[str] | None = getattr(_HELD, "names", None)
    if held is None:
        held = _HELD.names = set()
    if name in held or _built(name):
        yield True
        return
    with _THREAD_LOCKS_LOCK:
        thread_lock = _THREAD_LOCKS.setdefault(name, threading.Lock())
    deadline = time.monotonic() + wait
    if not thread_lock.acquire(timeout=wait):
        log.debug("helper %s: still being built by another thread after %.0f s", name, wait)
        yield False
        return
    try:
        with _file_lock(name, deadline) as locked:
            done = _built(name)  # while this waited
            if not done:
                held.add(name)
                try:
                    yield locked
                finally:
                    held.discard(name)
                _mark_built(name)
        if done:
            yield True
    finally:
        thread_lock.release()


def _marker(name: str) -> Path:
    """The file that says helper `name` is in Triton's cache: inside that cache, so that it
    goes with it."""
    return Path(_cache_dir()) / "tunegate-built" / name


def _built(name: str) -> bool:
    return name in _BUILT or _marker(name).exists()


def _mark_built(name: str) -> None:
    _BUILT.add(name)
    try:
        _marker(name).parent.mkdir(parents=True, exist_ok=True)
        _marker(name).touch()
    except OSError:
        pass  # the next process takes the lock, finds the helper in the cache, and loads it


_BUILT: set[str] = set()  # the helpers this process has built or loaded


@contextmanager
def _file_lock(name: str, deadline: float) -> Iterator[bool]:
    """The lock of helper `name` among processes (flock), waited for until `deadline`."""
    try:
        import fcntl
    except ImportError:  # Windows: no waiting, each process builds what it lacks
        yield False
        return
    try:
        fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield False
        return
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    log.debug("helper %s: still being built elsewhere", name)
                    yield False
                    return
                time.sleep(_POLL_S)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_BUILDERS: list[subprocess.Popen] = []  # kept: reaped at exit, never reported as leaked


def build_driver_ahead() -> None:
    """Start a background process that builds the driver's utilities for this host's GPU
    (a no-op where they are cached); only on a host with an NVIDIA or AMD GPU, not under the
    interpreter. Workers that make the driver wait for it (see `worker_child`)."""
    if os.environ.get("TRITON_INTERPRET") == "1" or not _gpu_backend():
        return
    try:
        _BUILDERS.append(subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    except OSError as e:
        log.debug("the driver's utilities are not built ahead: %s", e)


def _gpu_backend() -> str | None:
    """Triton's backend for this host's GPU, told by its device nodes (no CUDA call)."""
    if os.path.exists("/dev/nvidiactl"):
        return "nvidia"
    if os.path.exists("/dev/kfd"):
        return "amd"
    return None


def _driver_module(backend: str) -> Any:
    """The module of Triton's driver for `backend`: where its helpers' classes live."""
    from triton.backends import backends

    return sys.modules[backends[backend].driver.__module__]


def _helper_class(module: Any, suffix: str) -> Any:
    """The class of `module` whose name ends with `suffix` (CudaUtils, HIPLauncher, ...)."""
    for name, value in vars(module).items():
        if name.endswith(suffix) and isinstance(value, type) \
                and value.__module__ == module.__name__:
            return value
    raise LookupError(f"no *{suffix} class in {module.__name__}")


def _build_driver() -> None:
    """Build (or find in the cache) the utilities of this host's Triton driver."""
    backend = _gpu_backend()
    if backend is None:
        return
    with building(driver_helper()):
        _helper_class(_driver_module(backend), "Utils")()


class _NoMetadata:
    """A compiled kernel's metadata as a launcher reads it, for a signature without tensor
    descriptors: none of it shapes the launcher's C source."""

    tensordesc_meta = None

    def __getattr__(self, name: str) -> int:
        return 0


_STARTED: set[str] = set()  # the launchers this process has built, or is building
_STARTED_LOCK = threading.Lock()


def _forget_the_parents() -> None:
    """In a forked child: a lock another thread held as it forked would stay held, and a
    build it had under way is not this process's."""
    global _THREAD_LOCKS_LOCK, _STARTED_LOCK
    _THREAD_LOCKS_LOCK, _STARTED_LOCK = threading.Lock(), threading.Lock()
    _THREAD_LOCKS.clear()
    _STARTED.clear()
    _BUILDERS.clear()


os.register_at_fork(after_in_child=_forget_the_parents)


def build_launchers_beside_compiles() -> None:
    """From now on, in this process, the first compile of each kernel signature starts a
    thread that builds the signature's launcher while the kernel compiles; and a launcher made
    here waits for one being built elsewhere. Nothing where Triton has no compile hook or
    builds no launcher per signature (the Triton 3.9 of our CPU machine launches through
    one helper)."""
    backend = _gpu_backend()
    try:
        from triton import knobs

        if backend is None or not hasattr(_driver_module(backend), "make_launcher"):
            return
    except (ImportError, KeyError):
        return
    runtime = getattr(knobs, "runtime", None)
    if runtime is None or not hasattr(runtime, "jit_cache_hook") or _hook_in_place():
        return
    previous = runtime.jit_cache_hook

    def hook(**kwargs: Any) -> Any:
        try:
            _launcher_beside(kwargs["fn"].jit_function, kwargs["compile"])
        except Exception as e:  # noqa: BLE001 - an optimisation: the launch builds it as ever
            log.debug("no launcher built ahead: %s: %s", type(e).__name__, e)
        return previous(**kwargs) if previous is not None else None

    hook._tunegate = True  # type: ignore[attr-defined]
    runtime.jit_cache_hook = hook


def _hook_in_place() -> bool:
    """Whether Triton's compile hook in this process is the one of
    `build_launchers_beside_compiles` (not replaced since by the program)."""
    runtime = getattr(sys.modules.get("triton.knobs"), "runtime", None)
    return getattr(getattr(runtime, "jit_cache_hook", None), "_tunegate", False)


def build_launcher_ahead(kernel: Any, args: dict[str, Any]) -> None:
    """Start building the launcher `kernel` will launch through with `args` (a run worker's
    draw 0) before any of its configs is compiled (a 16-config softmax's first timing waited
    0.17-0.28 s for it), where launchers are built beside compiles in this process."""
    if not _hook_in_place():
        return
    try:
        seen = dry_warmup(kernel, args)
        if seen is not None:
            _launcher_beside(seen["fn"], seen["compile"])
    except Exception as e:  # noqa: BLE001 - an optimisation: the launch builds it as ever
        log.debug("no launcher built ahead of %r: %s: %s", kernel, type(e).__name__, e)


def dry_warmup(kernel: Any, args: dict[str, Any]) -> dict[str, Any] | None:
    """What Triton's compile hook is told of a launch of the @triton.jit function inside
    `kernel` with `args` ({"fn": that function, "compile": its signature, constants, ...}),
    with nothing compiled: the hook, replaced in this thread for the call, skips the compile.
    Constexpr parameters that `args` lacks (a config's) get a stand-in, since they are
    constexprs whatever their value. None where `args` lacks another parameter, where the
    launch is compiled in this process already (the hook is not asked), or where the function
    has pre-run hooks (they would see the stand-ins, and may write to `args`)."""
    jit = kernel
    while not hasattr(jit, "params") and hasattr(jit, "fn"):  # autotuners, heuristics
        jit = jit.fn
    if not hasattr(jit, "params") or not hasattr(jit, "warmup") \
            or getattr(jit, "pre_run_hooks", None):
        return None
    missing = [p for p in jit.params if p.name not in args and not p.has_default]
    if any(not p.is_constexpr for p in missing):
        return None
    from triton import knobs

    runtime = knobs.runtime
    previous = runtime.jit_cache_hook
    caller = threading.get_ident()
    seen: dict[str, Any] = {}

    def capture(**kwargs: Any) -> Any:
        if threading.get_ident() != caller:  # another thread's compile goes on as ever
            return previous(**kwargs) if previous is not None else None
        seen.update(fn=kwargs["fn"].jit_function, compile=kwargs["compile"])
        return True  # no compile

    runtime.jit_cache_hook = capture
    try:
        jit.warmup(grid=(1,), **args, **{p.name: 1 for p in missing})
    finally:
        runtime.jit_cache_hook = previous
    return seen or None


def _launcher_beside(fn: Any, compile: dict[str, Any]) -> None:
    """Start building the launcher of the signature `fn` is compiled for, once per process."""
    signature = compile["signature"]
    name = launcher_helper(signature)
    if name is None:
        return
    with _STARTED_LOCK:
        if name in _STARTED:
            return
        _STARTED.add(name)
    launcher = _launcher_class()
    if launcher is None:
        return
    from triton.compiler import ASTSource

    configs = compile.get("configs") or [None]
    src = ASTSource(fn, signature, compile.get("constants"), configs[0])

    unwrapped = getattr(launcher, "unwrapped", launcher)  # the build holds the lock itself

    def build() -> None:
        try:
            with trace.span("launcher ahead"), building(name):
                unwrapped(src, _NoMetadata())
        except Exception as e:  # noqa: BLE001 - see `hook`
            log.debug("the launcher of %s was not built ahead: %s: %s", fn, type(e).__name__, e)

    start_thread(build, name="tunegate-launcher")


def _launcher_class() -> Any:
    """The launcher class of the driver in use: the real driver's in a run worker, where a
    launcher made for a launch now waits for one being built elsewhere; the target's backend's
    in a compile worker, whose driver is a compile-only stand-in (see `precompile`)."""
    from triton.runtime.driver import driver

    active = driver.active
    launcher = getattr(active, "launcher_cls", None)
    if launcher is not None:
        if not getattr(launcher, "_tunegate", False):
            active.launcher_cls = launcher = _waiting(launcher)
        return launcher
    target = active.get_current_target()
    from triton.backends import backends

    for backend in backends.values():
        if backend.compiler.supports_target(target):
            return _helper_class(sys.modules[backend.driver.__module__], "Launcher")
    return None


def _waiting(launcher: type) -> type:
    """`launcher`, made only once no other process or thread builds the same one."""

    class Waiting(launcher):  # type: ignore[misc, valid-type]
        _tunegate = True
        unwrapped = launcher

        def __init__(self, src: Any, metadata: Any) -> None:
            signature = getattr(src, "signature", None)
            name = launcher_helper(signature) if isinstance(signature, dict) else None
            if name is None:
                super().__init__(src, metadata)
                return
            with trace.span("launcher"), building(name):  # waited for, built or loaded
                super().__init__(src, metadata)

    Waiting.__name__ = Waiting.__qualname__ = launcher.__name__
    return Waiting


if __name__ == "__main__":  # the background process of `build_driver_ahead`
    try:
        _build_driver()
    except Exception:  # noqa: BLE001 - the first launch builds it as ever
        sys.exit(1)
