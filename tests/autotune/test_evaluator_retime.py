"""Timing again: a contender's retiming is not compared (its first timing's output was), and
what the first timing's compare sees still decides. Real kernels under the interpreter."""

import pytest

from examples import tutorial_softmax
from tests.kernels import judge_kernels as jk
from tunegate.autotune.evaluator import Evaluator
from tunegate.autotune.local import LocalWorker
from tunegate.autotune.runner import Runner
from tunegate.autotune.stress import StressCheck
from tunegate.autotune.workload import Setup, TaskRef
from tunegate.outcome import Outcome
from tunegate.space import Config

pytestmark = pytest.mark.interpreter


def test_a_retiming_is_timed_but_not_compared_again():
    worker = LocalWorker(Setup(TaskRef("", "TASK", local=tutorial_softmax.TASK), seed=0,
                               baseline_json=None, deterministic=True))
    worker.start()
    evaluator = Evaluator(worker, draws=1, stress=StressCheck(), timeout=120)
    config = tutorial_softmax.TASK.space.complete({"num_warps": 1, "num_stages": 1})
    first = evaluator.evaluate(config, experimental=False)
    assert first.status is Outcome.OK and first.checked_launches == 1
    again = evaluator.retime(first)
    assert again.status is Outcome.OK and again.time_ms is not None
    assert again.checked_launches == 1


def test_the_first_timing_compares_and_a_timing_asked_not_to_does_not():
    runner = Runner(jk.SCALE, seed=0, baseline=Config(values={"BLOCK": 64, "WRONG": 0}))
    wrong = Config(values={"BLOCK": 32, "WRONG": 1})
    timed = runner.time(wrong)
    assert timed.compared and timed.mismatch is not None
    unchecked = runner.time(wrong, compare=False)
    assert not unchecked.compared and unchecked.mismatch is None and unchecked.seconds == 0
