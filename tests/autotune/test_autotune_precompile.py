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
