"""Kernels for the trust tests: an intermittently wrong, an input-dependent and a non-repeatable
config that are fastest by design, an in-place kernel, split-K into a zeroed output, a wrong baseline."""

import time
from collections import Counter

import torch
import triton
import triton.language as tl

from examples import splitk
from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, PowerOfTwo, Space


@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr, VARIANT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if VARIANT == 0:
        tl.store(y_ptr + offs, x, mask=mask)  # forgot the factor: the wrong baseline
    else:
        tl.store(y_ptr + offs, 2 * x, mask=mask)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(256, generator=g).to(device),
            "y_ptr": torch.empty(256, device=device), "n": 256}


def reference(x_ptr, y_ptr, n):
    return 2 * x_ptr


_launches: Counter = Counter()


def launch_modes(args, config):
    """MODE 0: right and slow. MODE 1: fastest, one element wrong every seventh launch.
    MODE 2: next fastest, one element off by one ulp (within tolerance) every third launch."""
    mode = config.values["MODE"]
    time.sleep({0: 0.08, 1: 0.0, 2: 0.02}[mode])
    double[(1,)](args["x_ptr"], args["y_ptr"], args["n"], BLOCK=256, VARIANT=1)
    _launches[mode] += 1
    y = args["y_ptr"]
    if mode == 1 and _launches[mode] % 7 == 0:
        y[5] += 1.0
    if mode == 2 and _launches[mode] % 3 == 0:
        y[5] = torch.nextafter(y[5], torch.tensor(float("inf")))


INTERMITTENT = Task(
    name="intermittent", kernel=double,
    space=Space(parameters={"MODE": Parameter(domain=Choice(choices=(0, 1, 2), default=0))}),
    grid=(1,), launch=launch_modes, make_inputs=make_inputs, outputs=("y_ptr",),
    reference=reference)

def launch_sign_bug(args, config):
    """MODE 0: right and slow. MODE 1: fastest, and wrong on every input whose first element is
    positive (draw 0's is negative: its timing's output is right)."""
    mode = config.values["MODE"]
    time.sleep(0.05 if mode == 0 else 0.0)
    double[(1,)](args["x_ptr"], args["y_ptr"], args["n"], BLOCK=256, VARIANT=1)
    if mode == 1 and float(args["x_ptr"][0]) > 0:
        args["y_ptr"][0] += 1.0


INPUT_DEPENDENT = INTERMITTENT.model_copy(update={
    "name": "input_dependent", "launch": launch_sign_bug,
    "space": Space(parameters={"MODE": Parameter(domain=Choice(choices=(0, 1), default=0))})})

WRONG_BASELINE = Task(
    name="wrong_baseline", kernel=double,
    space=Space(parameters={
        "BLOCK": Parameter(domain=Choice(choices=(64,), default=64)),
        "VARIANT": Parameter(domain=Choice(choices=(0, 1, 2, 3), default=0))}),
    grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), make_inputs=make_inputs,
    outputs=("y_ptr",))  # no reference: VARIANT=0, the baseline, is the one that is wrong


@triton.jit
def add_into(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x + y, mask=mask)


def make_pair(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(200, generator=g).to(device),
            "y_ptr": torch.randn(200, generator=g).to(device), "n": 200}


def add_reference(x_ptr, y_ptr, n):
    return x_ptr.double() + y_ptr.double()  # float64, not cast back: float32 tolerances apply


def _raising_reference(x_ptr, y_ptr, n):
    raise RuntimeError("reference is broken")


IN_PLACE = Task(
    name="add_into", kernel=add_into,
    space=Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=32, high=64))}),
    grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), make_inputs=make_pair,
    outputs=("x_ptr",), reference=add_reference)

RAISING_REFERENCE = IN_PLACE.model_copy(update={"reference": _raising_reference})

SPLIT_K_ZEROED = Task(
    name="splitk_zeroed", kernel=splitk.splitk_matmul, space=splitk.space(16),
    grid=splitk.grid, make_inputs=splitk.inputs(32, 32, 64), outputs=("c_ptr",),
    reset_to_zero=("c_ptr",), reference=splitk.reference)


def launch_touching_input(args, config):
    """Doubles x into y, then MODE 0: adds 1 to x, as its reference does (an input it writes,
    named nowhere); MODE 1: corrupts x every fifth launch; MODE 2: leaves x alone."""
    mode = config.values["MODE"]
    double[(1,)](args["x_ptr"], args["y_ptr"], args["n"], BLOCK=256, VARIANT=1)
    _launches[("touch", mode)] += 1
    if mode == 0:
        args["x_ptr"].add_(1.0)
    elif mode == 1 and _launches[("touch", mode)] % 5 == 0:
        args["x_ptr"][3] += 1.0


def _double_and_increment(x_ptr, y_ptr, n):
    y = 2 * x_ptr
    x_ptr.add_(1.0)
    return y


TOUCHING_INPUT = Task(
    name="touching_input", kernel=double,
    space=Space(parameters={"MODE": Parameter(domain=Choice(choices=(0, 1, 2), default=0))}),
    grid=(1,), launch=launch_touching_input, make_inputs=make_inputs, outputs=("y_ptr",),
    reference=_double_and_increment)


@triton.jit
def double_blocks(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BROKEN: tl.constexpr = 0):
    tl.static_assert(BROKEN == 0, "a config that fails to run")
    for i in range(0, BLOCK, 16):
        offs = tl.program_id(0) * BLOCK + i + tl.arange(0, 16)
        mask = offs < n
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


NARROW_BASELINE = Task(
    name="narrow_baseline", kernel=double_blocks,
    space=Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(32, 64, 128), default=32))}),
    grid=(2,), make_inputs=make_inputs, outputs=("y_ptr",))
"""Two programs whatever the block: only BLOCK=128 writes all of `y`; the baseline, BLOCK=32,
writes its first quarter, and the wider blocks agree with it there."""

_WITH_BROKEN = Space(parameters={
    "BLOCK": Parameter(domain=Choice(choices=(32, 64, 128), default=32)),
    "BROKEN": Parameter(domain=Choice(choices=(0, 1), default=0))})
NARROW_BASELINE_AND_A_BROKEN_CONFIG = NARROW_BASELINE.model_copy(update={
    "name": "narrow_baseline_and_a_broken_config", "space": _WITH_BROKEN,
    "configs": tuple(_WITH_BROKEN.complete(v) for v in (
        {"BLOCK": 32, "BROKEN": 0}, {"BLOCK": 64, "BROKEN": 1}, {"BLOCK": 64, "BROKEN": 0},
        {"BLOCK": 128, "BROKEN": 0}))})


def make_nan_on_odd_seeds(seed, device):
    """`make_inputs`, with a NaN in x on odd seeds only: the expected output holds the first
    poison (NaN) on those draws, so only they need a launch under the second poison."""
    args = make_inputs(seed, device)
    if seed % 2:
        args["x_ptr"][3] = float("nan")
    return args


def launch_skipping_nan(args, config):
    """Doubles x into y; MODE 1 leaves y[3] as it found it where x[3] is NaN (a config that
    does not write its NaN results), which the first poison, NaN itself, hides."""
    y = args["y_ptr"]
    before = y[3].clone()
    double[(1,)](args["x_ptr"], y, args["n"], BLOCK=256, VARIANT=1)
    if config.values["MODE"] == 1 and bool(torch.isnan(args["x_ptr"][3])):
        y[3] = before


NAN_ON_SOME_DRAWS = Task(
    name="nan_on_some_draws", kernel=double,
    space=Space(parameters={"MODE": Parameter(domain=Choice(choices=(0, 1), default=0))}),
    grid=(1,), launch=launch_skipping_nan, make_inputs=make_nan_on_odd_seeds,
    outputs=("y_ptr",), reference=reference)
