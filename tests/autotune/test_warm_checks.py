"""Warming the checks' kernels runs the checks on slices of draw 0 and changes nothing the
tuning sees. Real kernels under the interpreter, through the Runner."""

import pytest
import torch

from tests.kernels import judge_kernels as jk
from tunegate.autotune import Task
from tunegate.autotune.inputs import CallerData
from tunegate.autotune.runner import Runner
from tunegate.autotune.warm_checks import warm_checks
from tunegate.space import Config

pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize("own_data", [False, True])
def test_warming_the_checks_keeps_the_runner_as_it_was(own_data):
    call = CallerData(jk.scale_inputs(0, "cpu"), seed=0) if own_data else None
    runner = Runner(jk.SCALE, seed=0, baseline=Config(values={"BLOCK": 64, "WRONG": 0}),
                    inputs=call)
    pristine, expected = runner.draw(0)
    before = {n: t.clone() for n, t in pristine.items() if isinstance(t, torch.Tensor)}
    state = (dict(runner.not_compared), dict(runner._bounds), runner.poisoned, runner.in_place,
             len(runner._stress_kept), runner._fresh)
    warm_checks(runner)
    assert state == (dict(runner.not_compared), dict(runner._bounds), runner.poisoned,
                     runner.in_place, len(runner._stress_kept), runner._fresh)
    assert all(torch.equal(pristine[n].nan_to_num(), t.nan_to_num()) for n, t in before.items())
    assert runner.check(Config(values={"BLOCK": 32, "WRONG": 0}), 1).mismatch is None
    assert runner.check(Config(values={"BLOCK": 32, "WRONG": 1}), 1).mismatch is not None


def test_bool_outputs_are_warmed_bit_for_bit():
    runner = Runner(Task(**jk.NEGATIVE), seed=0, baseline=Config(values={"BLOCK": 64, "SKIP": 0}))
    warm_checks(runner)
    assert not runner._bounds
    assert runner.check(Config(values={"BLOCK": 64, "SKIP": 1}), 1).mismatch is not None
