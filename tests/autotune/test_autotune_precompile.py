"""Compiling for a GPU target without a GPU fills the Triton cache a later launch reads.

Each step runs in a fresh process: Triton decides at decoration time whether a kernel is
interpreted, and the test session itself interprets kernels when there is no GPU.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

COMPILE = """
import json, sys
from tests.kernels.pipelined_copy import chunked_copy
from tunegate.autotune.precompile import TensorSpec, gpu_target, precompile
out = []
for block, stages in json.loads(sys.argv[1]):
    done = precompile(chunked_copy, {"x_ptr": TensorSpec("float32"), "y_ptr": TensorSpec("float32"),
                                     "n": 512}, {"BLOCK": block, "STAGES": stages, "num_warps": 4},
                      gpu_target((9, 0)))
    out.append(done.hash)
print(json.dumps(out))
"""

LAUNCH = """
import json, torch
from tests.kernels.pipelined_copy import chunked_copy
x = torch.randn(512, device="cuda"); y = torch.empty_like(x)
k = chunked_copy[(4,)](x, y, 512, BLOCK=32, STAGES=2, num_warps=4)
torch.cuda.synchronize()
assert torch.equal(x[:512], y)
print(json.dumps([k.hash]))
"""


def run_python(code: str, cache: Path, *args: str, gpu: bool = False) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(TRITON_CACHE_DIR=str(cache), PYTHONPATH=path)  # keep where pydantic may live
    if not gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""  # the compiling process never sees a GPU
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache: Path) -> set[str]:
    return {p.name for p in cache.iterdir()} if cache.exists() else set()


def test_compiles_a_cubin_per_config_into_the_cache(tmp_path):
    cache = tmp_path / "cache"
    hashes = run_python(COMPILE, cache, json.dumps([[32, 1], [32, 2]]))
    assert len(set(hashes)) == 2  # num_stages is part of the key
    assert len(entries(cache)) == 2
    assert len(list(cache.glob("*/chunked_copy.cubin"))) == 2
    again = run_python(COMPILE, cache, json.dumps([[32, 2]]))
    assert again == hashes[1:] and len(entries(cache)) == 2  # a second process finds it


@pytest.mark.gpu
def test_the_launch_on_the_gpu_loads_the_precompiled_binary(tmp_path):
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the test compiles for sm_90")
    cache = tmp_path / "cache"
    compiled = run_python(COMPILE, cache, json.dumps([[32, 2]]))
    kernel_files = {p: p.stat().st_mtime_ns for p in cache.glob("*/chunked_copy*")}
    launched = run_python(LAUNCH, cache, gpu=True)
    assert launched == compiled
    # The kernel was not compiled again: its files are the precompiled ones, untouched. (The
    # first launch of a process with a fresh cache still builds Triton's own launcher and
    # driver helpers, which are cache entries of their own and hold no kernel.)
    assert {p: p.stat().st_mtime_ns for p in cache.glob("*/chunked_copy*")} == kernel_files


# A drop-in call's configs, compiled ahead from the dtypes of the call's tensors alone (what a
# compile worker is sent), and from the tensors themselves: the same cache entries, i.e. the
# ones the launch looks up (see the GPU test above for that link).
DROPIN = """
import json, sys, torch
from tests.kernels.dropin_scale import scale_kernel
from tunegate.autotune.callsite import CallSite, Configs, make_task
from tunegate.autotune.inputs import CallerData
from tunegate.autotune.precompile import TaskCompiler, gpu_target, precompile
x = torch.randn(100); y = torch.empty(100)
bound = {"x_ptr": x, "y_ptr": y, "n": 100}
configs = list(scale_kernel.configs)
listed = Configs(configs, {})
if sys.argv[1] == "ahead":
    compiled = {p.key(): c.all_kwargs() for p, c in zip(listed.points, configs)}
    call = CallSite(depth=0, problem="p", entries=tuple(range(len(configs))), grids={},
                    launch={}, outputs=("y_ptr",), compiled=compiled)
    compiler = TaskCompiler(make_task(scale_kernel, call, configs), seed=0,
                            inputs=CallerData(bound, seed=0).specs())
    print(json.dumps([compiler.compile(p, "cuda:90:32") for p in listed.points]))
else:
    print(json.dumps([precompile(scale_kernel.fn, bound, c.all_kwargs(), gpu_target((9, 0))).hash
                      for c in configs]))
"""


def test_a_dropin_call_compiles_ahead_from_its_tensors_dtypes_alone(tmp_path):
    run_python(DROPIN, tmp_path / "ahead", "ahead")
    run_python(DROPIN, tmp_path / "real", "real")
    assert len(entries(tmp_path / "ahead")) == 4
    assert entries(tmp_path / "ahead") == entries(tmp_path / "real")


@pytest.mark.gpu
def test_the_dropin_compiles_its_configs_ahead_in_compile_workers():
    """Four configs (DROPIN_COMPILE_AHEAD): compiled ahead, none left to its first launch."""
    import torch

    from tests.kernels import dropin_scale as mod

    x = torch.randn(4096, device="cuda")
    assert torch.equal(mod.double(x), 2 * x)
    result = mod.scale_kernel.last_result
    assert result is not None and result.compile_seconds > 0, result
    assert not any("compile" in n and ("could not" in n or "first launch" in n)
                   for n in result.notes), result.notes


@pytest.mark.gpu
def test_a_tuning_on_a_gpu_in_use_compiles_its_list_while_its_run_worker_starts(
        tmp_path, monkeypatch):
    """In a process already working on its GPU whose compile workers have the call's dtypes
    (a drop-in's program), the list goes to the compile workers before the run worker is
    ready (slowed by 3 s here, as the baseline's compile slows it): every config is compiled
    by then, and none is asked for again."""
    import torch

    from tests.conftest import KERNELS
    from tests.kernels.pipelined_copy import SlowRunWorkerCall
    from tunegate.autotune import Store, Tuner, trace
    from tunegate.autotune.pool import close_idle_workers
    from tunegate.autotune.worker import TaskRef
    from tunegate.kernelfile import load_module
    from tunegate.policy import Policy

    torch.zeros(1, device="cuda")  # this process uses its GPU, as the drop-in's program does
    close_idle_workers()
    events = tmp_path / "trace.jsonl"
    monkeypatch.setenv(trace.ENV, str(events))
    monkeypatch.setenv("SLOW_INPUTS_S", "3")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = KERNELS / "pipelined_copy.py"
    task = load_module(path).TASK_SLOW_RUN_WORKER
    ref = TaskRef(str(path), "TASK_SLOW_RUN_WORKER", inputs=SlowRunWorkerCall())
    result = Tuner(task, ref, policy=Policy([]),
                   store=Store(tmp_path / "s.sqlite"), compile_workers=2).run()
    close_idle_workers()
    assert result.best is not None, result.notes
    log = trace.read(str(events))
    run = {e["pid"] for e in log if e["event"] == "worker start" and e.get("role") == "run"}
    ready = min(e["t"] for e in log if e["event"] == "load task" and e["pid"] in run)
    compiled = [e["t"] for e in log if e["event"] == "Compile"]
    assert len(compiled) == len(task.configs) and max(compiled) < ready
