"""A chunked copy whose winner uses software pipelining unless a policy forbids it."""

import os
import time

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Config, IntRange, Parameter, PowerOfTwo, Space


@triton.jit
def chunked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    base = tl.program_id(0) * 4 * BLOCK
    for i in tl.range(0, 4, num_stages=STAGES):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(512, generator=g).to(device),
            "y_ptr": torch.empty(512, device=device), "n": 512}


TASK = Task(
    name="chunked_copy", kernel=chunked_copy,
    space=Space(parameters={
        "BLOCK": Parameter(domain=PowerOfTwo(low=32, high=64)),
        "STAGES": Parameter(domain=IntRange(low=1, high=3), features=["range_num_stages"])}),
    grid=lambda meta: (triton.cdiv(meta["n"], 4 * meta["BLOCK"]),), make_inputs=make_inputs,
    outputs=("y_ptr",))  # no reference: the baseline config (STAGES=1) is the reference

TASK_WITH_REFERENCE = TASK.model_copy(update={"reference": lambda x_ptr, y_ptr, n: x_ptr})


def _noting_inputs(seed, device):
    """make_inputs, noting in $INPUTS_MARKER_FILE whether a compile worker made them."""
    with open(os.environ["INPUTS_MARKER_FILE"], "a", encoding="utf-8") as marker:
        marker.write(("compile" if os.environ.get("TUNEGATE_COMPILE_ONLY") == "1" else "run")
                     + "\n")
    return make_inputs(seed, device)


TASK_NOTING_INPUTS = TASK_WITH_REFERENCE.model_copy(update={"make_inputs": _noting_inputs})


def _noting_environment(seed, device):
    """make_inputs, noting this process and its TORCHINDUCTOR_CACHE_DIR in $ENV_MARKER_FILE."""
    with open(os.environ["ENV_MARKER_FILE"], "a", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()} {os.environ.get('TORCHINDUCTOR_CACHE_DIR')}\n")
    return make_inputs(seed, device)


TASK_NOTING_ENVIRONMENT = TASK_WITH_REFERENCE.model_copy(
    update={"make_inputs": _noting_environment})


def _slow_in_the_run_worker(seed, device):
    """make_inputs, $SLOW_INPUTS_S seconds slower outside compile workers: a run worker that
    takes long to start (as a drop-in's does, compiling and launching its baseline first)."""
    if os.environ.get("TUNEGATE_COMPILE_ONLY") != "1":
        time.sleep(float(os.environ.get("SLOW_INPUTS_S", "0")))
    return make_inputs(seed, device)


TASK_SLOW_RUN_WORKER = TASK.model_copy(update={
    "make_inputs": _slow_in_the_run_worker,
    "configs": tuple(Config(values={"BLOCK": b, "STAGES": s})
                     for b in (32, 64) for s in (1, 2, 3))})


class SlowRunWorkerCall:
    """A drop-in call's data as its workers get it (`inputs.CallerData`, a TaskRef's `inputs`):
    the run worker's arguments are `_slow_in_the_run_worker`'s, the compile workers' `specs`,
    their dtypes alone."""

    def __call__(self, seed, device):
        return _slow_in_the_run_worker(seed, device)

    def specs(self):
        from tunegate.autotune.inputs import CallerData

        return CallerData(make_inputs(0, "cpu"), seed=0).specs()
