"""Triton's C helpers built ahead (issue 16): one process builds, the others wait and load.

The lock is exercised with real processes on any machine; the launcher built beside a compile
needs a Triton that builds one per signature and a CUDA driver to link against (the GPU host).
"""

import os
import subprocess
import sys
import threading
import time

import pytest

from tests.autotune.test_autotune_precompile import run_python
from tests.conftest import ROOT
from tunegate.autotune import launchers
from tunegate.autotune.launchers import building, launcher_helper

HOLD = """
import sys, time
from tunegate.autotune.launchers import building
with building(sys.argv[1]) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(name: str, seconds: float) -> subprocess.Popen:
    """A process that holds the lock of helper `name` for `seconds` (once it prints)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, name, str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_helper_being_built_elsewhere_is_waited_for_then_taken():
    name = f"test-wait-{os.getpid()}-{time.monotonic_ns()}"
    holder = _holder(name, 1.5)
    start = time.monotonic()
    with building(name) as held:
        waited = time.monotonic() - start
    holder.wait(timeout=30)
    assert held and waited > 0.8  # it waited for the other process's build to end


def test_a_wait_that_runs_out_goes_on_without_the_lock():
    name = f"test-out-{os.getpid()}-{time.monotonic_ns()}"
    holder = _holder(name, 5)
    start = time.monotonic()
    try:
        with building(name, wait=0.3) as held:
            waited = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert not held and 0.3 <= waited < 3  # built here as well rather than held up


def test_threads_of_one_process_wait_for_each_other_and_a_nested_hold_goes_on():
    name = f"test-threads-{os.getpid()}-{time.monotonic_ns()}"
    taken = threading.Event()

    def hold() -> None:
        with building(name):
            with building(name, wait=0.1) as again:  # the same thread: held already
                assert again
            taken.set()
            time.sleep(1.0)

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    start = time.monotonic()
    with building(name) as held:
        waited = time.monotonic() - start
    thread.join()
    assert held and waited > 0.5


def test_a_free_helper_is_taken_at_once():
    start = time.monotonic()
    with building(f"test-free-{os.getpid()}") as held:
        assert held and time.monotonic() - start < 0.5


LOCK_ONLY = """
import sys, time
from tunegate.autotune.launchers import _file_lock
with _file_lock(sys.argv[1], time.monotonic() + 5) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_helper_built_before_is_loaded_without_waiting_for_the_lock(tmp_path, monkeypatch):
    """Once a helper was built (here, or by another process into the same cache), taking it
    again does not queue behind another process that holds its lock to load it; a build that
    raised marks nothing, so its lock is waited for as before."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    name, broken = (f"test-built-{os.getpid()}-{time.monotonic_ns()}-{i}" for i in range(2))
    with building(name) as held:
        assert held
    with pytest.raises(RuntimeError):
        with building(broken):
            raise RuntimeError("the compiler failed")
    monkeypatch.setattr(launchers, "_BUILT", set())  # as another process: only the cache says
    for helper, waits in ((name, False), (broken, True)):
        holder = subprocess.Popen([sys.executable, "-c", LOCK_ONLY, helper, "5"], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            start = time.monotonic()
            with building(helper, wait=0.5) as held:
                waited = time.monotonic() - start
            assert (held, waited >= 0.5) == (not waits, waits), helper
        finally:
            holder.kill()
            holder.wait()


def test_launchers_are_named_by_their_argument_types_and_cache(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/one")
    one = launcher_helper({"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    assert one == launcher_helper({"a": "*fp32", "b": "i32", "C": "constexpr"})  # same C source
    assert one != launcher_helper({"x_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"})
    assert launcher_helper({"d": "tensordesc<fp16[64, 64]>"}) is None  # shaped by compiling
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/two")
    assert one != launcher_helper({"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"})


DRY = """
import json
from tests.kernels.pipelined_copy import chunked_copy
from tunegate.autotune.launchers import dry_warmup
from tunegate.autotune.precompile import TensorSpec, _compiling_for, _stand_in, gpu_target
args = {"x_ptr": _stand_in(TensorSpec("float32")), "y_ptr": _stand_in(TensorSpec("float32")),
        "n": 512}
with _compiling_for(gpu_target((9, 0)), chunked_copy):
    seen = dry_warmup(chunked_copy, args)  # BLOCK and STAGES, a config's, are not given
    lacking = dry_warmup(chunked_copy, {"x_ptr": args["x_ptr"], "n": 512})
print(json.dumps([seen["compile"]["signature"], seen["fn"] is chunked_copy, lacking]))
"""


def test_a_dry_warmup_tells_a_launchs_signature_and_compiles_nothing(tmp_path):
    """What a run worker builds the launcher from before any config is compiled: the
    signature of a launch with its draw-0 arguments, the config's constexprs stood in for."""
    cache = tmp_path / "cache"
    signature, same_function, lacking = run_python(DRY, cache)
    assert signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
                         "STAGES": "constexpr"}
    assert same_function and lacking is None  # y_ptr's type is unknown: nothing to build from
    assert not cache.exists() or not any(cache.iterdir())  # nothing was compiled


COMPILE_WITH_LAUNCHER = """
import json, threading
from tests.kernels.pipelined_copy import chunked_copy
from tunegate.autotune import launchers
from tunegate.autotune.precompile import TensorSpec, gpu_target, precompile
launchers.build_launchers_beside_compiles()
precompile(chunked_copy, {"x_ptr": TensorSpec("float32"), "y_ptr": TensorSpec("float32"),
                          "n": 512}, {"BLOCK": 32, "STAGES": 2, "num_warps": 4},
           gpu_target((9, 0)))
for t in threading.enumerate():
    if t.name == "tunegate-launcher":
        t.join()
print(json.dumps(sorted(launchers._STARTED)))
"""

LAUNCH = """
import json, sys, torch
from tests.kernels.pipelined_copy import chunked_copy
if sys.argv[1:] == ["beside"]:  # as a run worker: its own compile builds the launcher beside
    from tunegate.autotune import launchers
    launchers.build_launchers_beside_compiles()
x = torch.randn(512, device="cuda"); y = torch.empty_like(x)
chunked_copy[(16,)](x, y, 512, BLOCK=32, STAGES=2, num_warps=4)
torch.cuda.synchronize()
assert torch.equal(x, y)
print(json.dumps([]))
"""


@pytest.mark.gpu
def test_a_compile_worker_builds_the_launcher_its_launch_then_loads(tmp_path):
    from triton.backends.nvidia import driver

    if not hasattr(driver, "make_launcher"):
        pytest.skip("this Triton builds no launcher per kernel signature")
    cache = tmp_path / "cache"
    assert run_python(COMPILE_WITH_LAUNCHER, cache)  # one signature's launcher started
    launchers = sorted(cache.glob("*/__triton_launcher*.so"))
    assert len(launchers) == 1  # built by the process that compiled, which has no GPU
    run_python(LAUNCH, cache, gpu=True)
    assert sorted(cache.glob("*/__triton_launcher*.so")) == launchers  # found, not rebuilt


@pytest.mark.gpu
def test_a_run_worker_that_compiles_builds_the_launcher_beside_and_launches_at_once(tmp_path):
    from triton.backends.nvidia import driver

    if not hasattr(driver, "make_launcher"):
        pytest.skip("this Triton builds no launcher per kernel signature")
    cache = tmp_path / "cache"
    start = time.monotonic()
    run_python(LAUNCH, cache, "beside", gpu=True)
    assert time.monotonic() - start < 20  # its launch waited for its own thread, not a timeout
    assert len(list(cache.glob("*/__triton_launcher*.so"))) == 1


AHEAD = """
import json, os, threading, torch
from pathlib import Path
from tests.kernels.pipelined_copy import chunked_copy
from tunegate.autotune import launchers
launchers.build_launchers_beside_compiles()  # as in a run worker
x = torch.randn(512, device="cuda"); y = torch.empty_like(x)
launchers.build_launcher_ahead(chunked_copy, {"x_ptr": x, "y_ptr": y, "n": 512})
for t in threading.enumerate():
    if t.name == "tunegate-launcher":
        t.join()
cache = Path(os.environ["TRITON_CACHE_DIR"])
before = [sorted(map(str, cache.glob("*/__triton_launcher*.so"))), len(list(cache.glob("*/*.cubin")))]
chunked_copy[(4,)](x, y, 512, BLOCK=32, STAGES=2, num_warps=4)
torch.cuda.synchronize()
assert torch.equal(x, y)
print(json.dumps(before + [sorted(map(str, cache.glob("*/__triton_launcher*.so")))]))
"""


@pytest.mark.gpu
def test_a_run_worker_builds_the_launcher_from_its_draw_before_any_compile(tmp_path):
    from triton.backends.nvidia import driver

    if not hasattr(driver, "make_launcher"):
        pytest.skip("this Triton builds no launcher per kernel signature")
    launchers_before, cubins_before, launchers_after = run_python(AHEAD, tmp_path / "cache",
                                                                  gpu=True)
    assert len(launchers_before) == 1 and cubins_before == 0  # built, nothing compiled yet
    assert launchers_after == launchers_before  # the launch that compiled found it
