"""The judge: unwritten means unwritten (two poisons), outputs the baseline does not write or
writes with unspecified contents are not compared, zeroed workspaces, enough stress draws.
Real kernels under the interpreter, through the Runner (no worker processes)."""

import pytest
import torch

from tests.kernels import judge_kernels as jk
from tunegate.autotune import Task
from tunegate.autotune.check import compare, follows_poison, poison
from tunegate.autotune.runner import Runner
from tunegate.autotune.stress import StressCheck, StressReport
from tunegate.space import Config

pytestmark = pytest.mark.interpreter


def _runner(task: Task, baseline: dict | None = None) -> Runner:
    return Runner(task, seed=0, baseline=None if baseline is None else Config(values=baseline))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int32, torch.uint8])
def test_an_element_that_follows_both_poisons_is_unwritten(dtype):
    a, b = torch.empty(3, dtype=dtype), torch.empty(3, dtype=dtype)
    poison(a)
    poison(b, second=True)
    assert not bool((a == b).any())
    b[1] = a[1]  # written with the first poison's value: the right value, written
    assert follows_poison(a, b).tolist() == [True, False, True]


@pytest.mark.parametrize("kernel", ["ROOT", "NEGATIVE"])
@pytest.mark.parametrize("with_reference", [True, False])
def test_skipping_an_element_whose_right_value_is_the_poison_fails(kernel, with_reference):
    spec = getattr(jk, kernel)
    reference = None
    if with_reference:
        reference = ((lambda x_ptr, y_ptr, n: x_ptr.sqrt()) if kernel == "ROOT"
                     else (lambda x_ptr, y_ptr, n: x_ptr < 0))
    runner = _runner(Task(**spec, reference=reference),
                     None if with_reference else {"BLOCK": 64, "SKIP": 0})
    assert runner.check(Config(values={"BLOCK": 64, "SKIP": 0}), 1).mismatch is None
    checked = runner.check(Config(values={"BLOCK": 64, "SKIP": 1}), 1)
    bad, draw = checked.mismatch, checked.draw
    assert bad is not None and draw == 0 and bad.unwritten == 1
    assert bad.first_index == [jk.N - 1]


@pytest.mark.parametrize("with_reference", [True, False])
def test_a_stress_check_adds_the_second_poison_only_where_the_first_could_hide_a_skip(
        with_reference):
    """One launch per draw under the first poison; a draw whose right output holds NaN is
    launched again under the second, so a skipped NaN element still fails; a draw whose
    right output holds no NaN gets no second launch (every element not NaN was written)."""
    spec = jk.ROOT
    reference = (lambda x_ptr, y_ptr, n: x_ptr.sqrt()) if with_reference else None
    runner = _runner(Task(**spec, reference=reference),
                     None if with_reference else {"BLOCK": 64, "SKIP": 0})
    once = StressCheck(min_launches=1, max_launches=1, draws=1)
    report = runner.stress(Config(values={"BLOCK": 64, "SKIP": 1}), once)
    assert not report.passed and report.launches == 2 and report.first_mismatch.unwritten == 1
    report = runner.stress(Config(values={"BLOCK": 64, "SKIP": 0}), once)
    assert report.passed and report.launches == 2

    runner = _runner(Task(**{**spec, "make_inputs": _positive_root_inputs}, reference=reference),
                     None if with_reference else {"BLOCK": 64, "SKIP": 0})
    three = StressCheck(min_launches=3, max_launches=3, draws=3)
    report = runner.stress(Config(values={"BLOCK": 64, "SKIP": 0}), three)
    assert report.passed and report.launches == 3
    report = runner.stress(Config(values={"BLOCK": 64, "SKIP": 1}), three)  # NaN where a number
    assert report.wrong == 3 and report.launches == 3 and report.first_mismatch.unwritten == 1


def _positive_root_inputs(seed: int, device: str) -> dict:
    """`jk.root_inputs` with every x positive: no right y is NaN."""
    args = jk.root_inputs(seed, device)
    return {**args, "x_ptr": args["x_ptr"].abs() + 0.5}


def test_an_output_the_baseline_never_writes_is_no_output_and_a_tail_is_not_compared():
    runner = _runner(jk.SCALE, {"BLOCK": 64, "WRONG": 0})  # used to raise BaselineError
    # z_ptr is watched for writes alone (a config writing it disputes the baseline)
    assert not runner.not_compared and not bool(runner.draw(0)[1].written["z_ptr"].any())
    assert runner.check(Config(values={"BLOCK": 32, "WRONG": 0}), 2).mismatch is None
    bad = runner.check(Config(values={"BLOCK": 32, "WRONG": 1}), 1).mismatch
    assert bad is not None and bad.argument == "y_ptr" and bad.mismatched == jk.N  # not N + 16
    report = runner.stress(Config(values={"BLOCK": 32, "WRONG": 0}),  # both poisons, per draw
                           StressCheck(min_launches=4, max_launches=4, draws=2))
    assert report.passed, report.summary()


def test_outputs_with_unspecified_contents_are_not_compared():
    runner = _runner(jk.ROW_MAX, {"WRONG": 0})
    assert "unspecified" in runner.not_compared["idx_ptr"]
    for _ in range(3):  # whichever tie the launch picks
        assert runner.check(Config(values={"WRONG": 0}), 1).mismatch is None
    bad = runner.check(Config(values={"WRONG": 1}), 1).mismatch
    assert bad is not None and bad.argument == "val_ptr"
    report = runner.stress(Config(values={"WRONG": 0}),
                           StressCheck(min_launches=2, max_launches=2, draws=1))
    assert report.passed, report.summary()
    assert "idx_ptr" in report.not_compared and "idx_ptr not compared" in report.summary()


def test_scratch_arguments_are_never_compared():
    task = jk.SCALE.model_copy(update={"scratch": ("z_ptr",),
                                       "reference": lambda x_ptr, y_ptr, z_ptr, n: None})
    runner = _runner(task)
    assert runner.not_compared == {"z_ptr": "scratch"}
    assert "z_ptr" not in runner.draw(0)[1].tensors


@pytest.mark.parametrize("zeros", [True, False])
def test_a_reset_to_zero_workspace_may_be_all_zero_and_the_reference_sees_it_zeroed(zeros):
    runner = _runner(jk.total_task(zeros))  # all zeros: used to raise "input is all zeros"
    assert runner.check(Config(values={"BLOCK": 32, "TWICE": 0}), 2).mismatch is None
    assert runner.check(Config(values={"BLOCK": 64, "TWICE": 0}), 1).mismatch is None
    bad = runner.check(Config(values={"BLOCK": 32, "TWICE": 1}), 1).mismatch
    assert bad is not None and bad.argument == "ws_ptr"


def test_stress_defaults_cover_a_one_in_three_input_bug():
    gpu = StressCheck().resolved("gpu")
    assert gpu.draws >= 12 and (2 / 3) ** gpu.draws <= 0.01 and gpu.min_launches >= gpu.draws
    light = StressCheck(min_launches=4).light("interpreter")
    assert light.draws <= light.min_launches
    runner = _runner(jk.SHIFTED)
    settings = StressCheck(min_launches=12, max_launches=12, draws=12)
    report = runner.stress(Config(values={"BLOCK": jk.N, "BUGGY": 1}), settings)
    assert report.draws == 12 and 0 < report.wrong < 12
    assert "over 12 fresh draws" in report.summary() and "first on draw" in report.summary()
    right = runner.stress(Config(values={"BLOCK": jk.N, "BUGGY": 0}), settings)
    assert right.passed and "12 fresh input draws" in right.summary()


def test_stress_report_summary_names_the_draws():
    text = StressReport(launches=8, draws=4, wrong=0, differing=0, deterministic=True).summary()
    assert "8 launches over 4 fresh input draws" in text


def test_against_a_baseline_small_elements_are_not_judged_by_their_row_s_largest():
    """Independent elements of every size: a config that flushes the small ones to zero is
    wrong, however small they are beside their row's largest (judged by the row's magnitude,
    it passed); one that rounds some in their last bit is right."""
    runner = _runner(jk.RESCALE, {"BLOCK": 16, "VIA": 0, "FLUSH": 0})
    assert runner.check(Config(values={"BLOCK": 16, "VIA": 1, "FLUSH": 0}), 2).mismatch is None
    bad = runner.check(Config(values={"BLOCK": 16, "VIA": 0, "FLUSH": 1}), 1).mismatch
    assert bad is not None and not bad.row_scaled and bad.perturbed
    assert bad.max_abs_error < 0.01  # what a row-scaled tolerance let through


def test_one_outlier_in_a_row_does_not_widen_its_tolerance_past_a_wrong_element():
    """A massive activation (3e4 among values of about 1) set the row's scale, and rtol 1e-4 of
    it passed an element zeroed by a wrong config; rounding-sized errors still pass."""
    torch.manual_seed(0)
    want = torch.randn(4, 256)
    want[:, 5], want[:, 63] = 3e4, 1.5
    dropped = want.clone()
    dropped[:, 63] = 0.0
    bad = compare("y", dropped, want, row_scaled=True)
    assert bad is not None and bad.mismatched == 4 and "(at most 8x its mean)" in bad.summary()
    rounded = want + 1e-4 * want.abs().mean() * torch.randn(4, 256)  # near-cancellation noise
    assert compare("y", rounded, want, row_scaled=True) is None
    assert compare("y", rounded, want) is not None  # which elementwise tolerance condemns


def test_integers_stay_bit_for_bit_when_row_scaled():
    want = torch.tensor([[1000, 1]], dtype=torch.int32)
    assert compare("i", want + torch.tensor([[0, 1]], dtype=torch.int32), want,
                   row_scaled=True).mismatched == 1


def test_a_float32_result_of_float16_tensors_is_judged_at_float16_precision():
    """Both directions: the float16 roundings another BLOCK places differently are no error
    (float32's tolerance alone condemns them), a dropped block still is, and says why."""
    runner = _runner(jk.HALF_SUMS, {"BLOCK": 16, "WRONG": 0})
    pristine, expected = runner.draw(0)
    args = runner.prepare(pristine)
    jk.HALF_SUMS.run(args, Config(values={"BLOCK": 64, "WRONG": 0}))
    assert compare("y_ptr", args["y_ptr"], expected.tensors["y_ptr"], row_scaled=True) is not None
    for block in (32, 64):
        assert runner.check(Config(values={"BLOCK": block, "WRONG": 0}), 2).mismatch is None
    bad = runner.check(Config(values={"BLOCK": 32, "WRONG": 1}), 1).mismatch
    assert bad is not None and bad.working == "float16" and bad.rtol == 1e-2
    assert "float32 computed from float16 tensors" in bad.summary()


def test_the_working_precision_is_the_narrowest_float_and_an_override_wins():
    from tunegate.autotune.check import tolerance, working_dtype

    tensors = [torch.zeros(2), torch.zeros(2, dtype=torch.bfloat16), torch.zeros(2, dtype=torch.int64)]
    assert working_dtype(tensors) == torch.bfloat16
    assert working_dtype([torch.zeros(2, dtype=torch.int32)]) is None
    assert tolerance(torch.float32, working=torch.float16) == (1e-2, 1e-2)
    assert tolerance(torch.float16, working=torch.float32) == (1e-2, 1e-2)  # never tighter
    assert tolerance(torch.float32, {"float32": (1e-6, 0.0)}, working=torch.float16) == (1e-6, 0.0)
    assert tolerance(torch.int32, working=torch.float16) == (0.0, 0.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.int8,
                                   torch.bool, torch.complex64])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_bits_differ_sees_one_flipped_bit_between_any_two_layouts(dtype, offset):
    """Compared as the widest words both tensors allow: a view at any storage offset against
    its aligned copy, a transposed view against a contiguous one."""
    from tunegate.autotune.check import bits_differ

    base = torch.zeros(offset + 24, dtype=dtype)
    view = base[offset:offset + 24].view(4, 6)
    for a, b in ((view, view.clone()), (view.t(), view.t().contiguous())):
        assert not bool(bits_differ(a, b))
        flipped = b.clone()
        flipped.view(-1)[:1].view(torch.uint8)[0] ^= 1
        assert bool(bits_differ(a, flipped))


def test_timings_are_compared_through_one_kept_bound_per_written_output():
    """Draw 0's expected output gets one kept tolerance bound (its input none: what a launch
    only reads is compared bit for bit); a config that rounds otherwise passes through it, a
    wrong one after it still fails, with the evidence of the comparison that allows the
    baseline's slack (what the kept bound cannot decide is compared so)."""
    runner = _runner(jk.RESCALE, {"BLOCK": 16, "VIA": 0, "FLUSH": 0})

    def timed(via: int, flush: int):
        return runner.time(Config(values={"BLOCK": 16, "VIA": via, "FLUSH": flush})).mismatch

    assert timed(0, 0) is None and timed(1, 0) is None
    bad = timed(1, 1)
    assert bad is not None and bad.argument == "y_ptr"
    # one kept bound, and one with the baseline's slack once FLUSH=1 failed the first
    assert list(runner._bounds) == [("y_ptr", torch.float32, False), ("y_ptr", torch.float32, True)]
    assert not runner._bounds[("y_ptr", torch.float32, False)].exact  # VIA=1 differed in its bits
    args = runner.prepare(runner.inputs(0))
    runner.task.run(args, Config(values={"BLOCK": 16, "VIA": 1, "FLUSH": 1}))
    expected = runner.draw(0)[1]
    assert bad == compare("y_ptr", args["y_ptr"], expected.tensors["y_ptr"],
                          slack=runner._slack(expected)["y_ptr"], perturbed=1e-4)


def test_tutorial_kernels_in_fp16_keep_their_configs_and_a_block_too_small_fails():
    """Triton's tutorial matmul and softmax (fp16 out, fp32 math) against their float64
    references. The matmul's timing outputs differ from the reference in some bits and pass
    through the kept 16-bit bound; no right softmax output holds NaN, so no check launches
    twice; a softmax BLOCK_SIZE below the row length (the tutorial's own assumption broken)
    fails on every path, the kept bound's included."""
    from examples import tutorial_matmul, tutorial_softmax

    runner = _runner(tutorial_matmul.TASK)
    for config in tutorial_matmul.TASK.configs[:2]:
        timed = runner.time(config)
        assert timed.compared and timed.mismatch is None
    (kept,) = [b for b in runner._bounds.values() if b is not None]
    assert kept.narrow and not kept.exact  # the reference's bits differ: the bound decided

    runner = _runner(tutorial_softmax.TASK)
    right = tutorial_softmax.TASK.space.complete({"num_warps": 1, "num_stages": 1})
    assert runner.time(right).mismatch is None
    assert runner.check(right, 1).launches == 1
    report = runner.stress(right, StressCheck(min_launches=2, max_launches=2, draws=2))
    assert report.passed and report.launches == 2
    short = Config(values={**right.values, "BLOCK_SIZE": 64})  # rows are 96 long
    assert runner.time(short).mismatch is not None
    (kept,) = [b for b in runner._bounds.values() if b is not None]
    assert kept.narrow and not kept.exact
    assert runner.check(short, 1).mismatch is not None
    assert not runner.stress(short, StressCheck(min_launches=2, max_launches=2,
                                                draws=2)).passed


def test_the_tutorial_softmax_stressed_on_draws_made_ahead():
    """The stress draws a run worker makes while it waits are the check's own: on them the
    tutorial softmax's right config passes and a BLOCK_SIZE below the row length fails."""
    from examples import tutorial_softmax

    runner = _runner(tutorial_softmax.TASK)
    assert runner.stress_draws_ahead(2, due=lambda: False) == 2
    two = StressCheck(min_launches=2, max_launches=2, draws=2)
    right = tutorial_softmax.TASK.space.complete({"num_warps": 1, "num_stages": 1})
    assert runner.stress(right, two).passed
    short = Config(values={**right.values, "BLOCK_SIZE": 64})  # rows are 96 long
    assert not runner.stress(short, two).passed
    assert runner.ahead_failure is None and len(runner._stress_kept) == 2


def test_a_wrong_bool_is_not_called_unwritten_since_either_bool_is_a_poison():
    got, want = torch.tensor([True, False, True]), torch.tensor([True, True, False])
    bad = compare("flags", got, want)
    assert bad is not None and bad.mismatched == 2
    assert "either bool is a poison" in bad.summary() and "unwritten or NaN" not in bad.summary()
    nan = compare("y", torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0]))
    assert nan is not None and "1 unwritten or NaN" in nan.summary()


def test_a_tensor_whose_every_value_is_below_atol_is_judged_by_its_own_scale():
    """A gradient of magnitude 1e-9: doubled, it is wrong, though every error is below
    float32's atol 1e-5; another order of the multiplications is right. A user's own
    tolerances for the dtype are taken as given."""
    runner = _runner(jk.TINY_GRADIENT, {"BLOCK": 256, "VIA": 0, "DOUBLE": 0})
    right = runner.check(Config(values={"BLOCK": 1024, "VIA": 1, "DOUBLE": 0}), 2)
    assert right.mismatch is None
    bad = runner.check(Config(values={"BLOCK": 1024, "VIA": 0, "DOUBLE": 1}), 1).mismatch
    assert bad is not None and bad.mismatched > 1900 and bad.atol < 1e-12
    loose = Task(**{**dict(jk.TINY_GRADIENT), "tolerances": {"float32": (1e-4, 1e-5)}})
    runner = _runner(loose, {"BLOCK": 256, "VIA": 0, "DOUBLE": 0})
    assert runner.check(Config(values={"BLOCK": 1024, "VIA": 0, "DOUBLE": 1}), 1).mismatch is None
