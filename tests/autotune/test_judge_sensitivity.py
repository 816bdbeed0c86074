"""The judge on an output near cancellation everywhere: configs that only add in another order
pass (their difference is within how far the expected output moves when the inputs move by
float32's rtol), a config that drops a block of the sum still fails. Real kernels under the
interpreter, through the Runner."""

import pytest
import torch

from tests.kernels import judge_kernels as jk
from tunegate.autotune.check import compare, perturb, perturbation, sensitivity
from tunegate.autotune.runner import Runner
from tunegate.space import Config

pytestmark = pytest.mark.interpreter

RIGHT, OTHER_ORDER, DROPS_A_BLOCK = ({"BLOCK": 8, "WRONG": 0}, {"BLOCK": 64, "WRONG": 0},
                                     {"BLOCK": 64, "WRONG": 1})


def _exact_sums(x_ptr, y_ptr, rows, COLS):
    return x_ptr.double().sum(0).float()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("with_reference", [False, True])
def test_another_order_of_a_cancelling_sum_passes_and_a_dropped_block_fails(dtype,
                                                                         with_reference):
    task = jk.column_sums_task(dtype, _exact_sums if with_reference else None)
    runner = Runner(task, seed=0, baseline=None if with_reference else Config(values=RIGHT))
    pristine, expected = runner.draw(0)
    got = runner._launch(pristine, Config(values=OTHER_ORDER))["y_ptr"]
    if dtype == torch.float32:  # the tolerance alone rejects the other order: every element
        # is near cancellation, so no element or row gives a scale (float16 inputs cancel less)
        assert compare("y_ptr", got, expected.tensors["y_ptr"]) is not None
    assert runner.check(Config(values=OTHER_ORDER), 2).mismatch is None
    wrong = runner.check(Config(values=DROPS_A_BLOCK), 2).mismatch
    assert wrong is not None and wrong.perturbed == perturbation([got])
    assert "move by 0.0001 (relative)" in wrong.summary()


def test_the_stress_check_allows_the_slack_too():
    runner = Runner(jk.column_sums_task(torch.float32), seed=0, baseline=Config(values=RIGHT))
    from tunegate.autotune.stress import StressCheck

    settings = StressCheck(min_launches=4, max_launches=4, draws=2)
    assert runner.stress(Config(values=OTHER_ORDER), settings).passed
    report = runner.stress(Config(values=DROPS_A_BLOCK), settings)
    assert report.wrong == 4 and report.first_mismatch.perturbed


def test_sensitivity_is_each_element_s_move_at_least_its_row_s_median_and_ignores_nan():
    expected = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [0.0, float("nan"), 0.0, 0.0, 0.0]])
    moved = torch.tensor([[1.5, 2.2, 3.1, 4.0, 5.0], [0.0, 1.0, float("inf"), 0.0, 0.0]])
    slack = sensitivity(expected, moved)
    assert torch.allclose(slack[0], torch.tensor([0.5, 0.2, 0.1, 0.1, 0.1]))
    assert slack[1].tolist() == [0.0] * 5


def test_perturbation_is_float32s_rtol_unless_every_float_is_float64():
    assert perturbation([torch.zeros(1, dtype=torch.float16), torch.zeros(1)]) == 1e-4
    assert perturbation([torch.zeros(1, dtype=torch.float64), torch.zeros(1, dtype=torch.int8)]) \
        == 1e-7


def test_data_far_from_zero_moves_as_its_spread_and_zeros_stay():
    """Logits near 1000 move by about 1e-4 of their spread (~1), not of 1000: a softmax's
    output then moves by ~1e-4 of itself, and a 0.5% error stays an error."""
    torch.manual_seed(0)
    logits = 1000 + torch.randn(4, 64)
    moved = logits.clone()
    zeros = torch.zeros(8)
    perturb([moved, zeros], 1e-4, seed=0)
    assert 0 < (moved - logits).abs().max() < 1e-4 * 5  # the spread's share, not 1000's
    assert bool((zeros == 0).all())
    slack = sensitivity(logits.softmax(-1), moved.softmax(-1))
    assert bool((slack <= 1e-3 * logits.softmax(-1)).all())


def test_the_slack_is_at_least_a_few_rounding_units_of_the_row_s_magnitude():
    """What no input perturbation shows (integer codes times float scales; a scan that
    climbs and falls back) still gets ROUNDING_UNITS of its row's magnitude."""
    from tunegate.autotune.check import ROUNDING_UNITS

    expected = torch.tensor([[9000.0, 4000.0, 0.5]])
    slack = sensitivity(expected, expected.clone())  # nothing moved
    floor = ROUNDING_UNITS * torch.finfo(torch.float32).eps / 2 * 9000.0
    assert torch.allclose(slack, torch.full((1, 3), floor))


def test_a_layer_norm_of_rows_far_from_zero_keeps_other_orders_and_rejects_n_minus_1():
    """Rows of mean 100: moving each input by 1e-4 of 100 moved the normalised outputs by ~2%,
    and a variance divided by N - 1 (0.1% off) passed; moved by 1e-4 of their spread, it fails,
    and summing 64 at a time instead of 16 passes."""
    runner = Runner(jk.LAYER_NORM_OFFSET, seed=0, baseline=Config(values={"CHUNK": 16,
                                                                          "UNBIASED": 0}))
    assert runner.check(Config(values={"CHUNK": 64, "UNBIASED": 0}), 2).mismatch is None
    bad = runner.check(Config(values={"CHUNK": 16, "UNBIASED": 1}), 1).mismatch
    assert bad is not None and bad.perturbed
