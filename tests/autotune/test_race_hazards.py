"""Race hazards size the winner's stress check and break timing ties (autotune/hazards.py), on
real kernels: a launch without a hazard has no race for 200 launches to find."""

import pytest
import triton
import triton.language as tl

from examples import splitk, tutorial_softmax
from tunegate.autotune import Store
from tunegate.autotune.evaluator import Evaluator, Trial
from tunegate.autotune.hazards import race_hazards
from tunegate.autotune.ledger import Ledger
from tunegate.autotune.local import LocalWorker
from tunegate.autotune.store import TrialKey
from tunegate.autotune.stress import StressCheck
from tunegate.autotune.winner import winner
from tunegate.autotune.workload import Setup, TaskRef
from tunegate.outcome import Outcome
from tunegate.policy import detect_traits
from tunegate.policy.env import Environment
from tunegate.policy.region import gate
from tunegate.space import Choice, Parameter, Space
from tunegate.space.space import Config


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _hazards(kernel, space, values, **options):
    region = gate(space, [], Environment(), detect_traits(kernel))
    return race_hazards(region, space.complete(values), **options)


def test_a_loopless_elementwise_kernel_has_no_hazard_at_any_num_stages():
    space = Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(64,), default=64)),
                              "num_stages": Parameter(domain=Choice(choices=(1, 4), default=1))})
    assert _hazards(scale, space, {"num_stages": 4}) == ()
    assert _hazards(scale, space, {"num_stages": 1}, launch_unread=True) == (
        "the task's own launch function (what it launches beyond the kernel is not read)",)


@triton.jit
def scale_unrolled(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for u in tl.static_range(2):  # unrolled when compiled: nothing for num_stages to pipeline
        offs = (tl.program_id(0) * 2 + u) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_a_static_range_is_no_loop_to_pipeline():
    space = Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(64,), default=64)),
                              "num_stages": Parameter(domain=Choice(choices=(1, 4), default=1))})
    assert _hazards(scale_unrolled, space, {"num_stages": 4}) == ()


def test_a_pipelined_loop_is_a_hazard_and_the_same_loop_at_one_stage_is_not():
    space = tutorial_softmax.TASK.space
    kernel = tutorial_softmax.softmax_kernel
    assert _hazards(kernel, space, {"num_warps": 1, "num_stages": 1}) == ()
    assert "range_num_stages in loops [0]" in _hazards(kernel, space,
                                                       {"num_warps": 1, "num_stages": 2})
    no_stages = Space(parameters={"BLOCK_SIZE": space.parameters["BLOCK_SIZE"]})
    assert _hazards(kernel, no_stages, {}) == (  # Triton's default num_stages pipelines it
        "num_stages=3 pipelines the kernel's loops",)


def test_atomics_and_dots_are_hazards_of_every_config():
    hazards = _hazards(splitk.splitk_matmul, splitk.TASK.space, {"SPLIT_K": 1})
    assert [h.split(" (")[0] for h in hazards] == [
        "the kernel's atomics", "the kernel's dot", "num_stages=3 pipelines the kernel's loops"]
    assert "tl.atomic_add" in hazards[0]


def test_hazards_the_trait_walk_once_missed_are_found():
    """`offs + x_ptr` (the pointer second) hid an argument both loaded and stored: programs
    that read what a neighbour writes; inline assembly's effects are not read at all."""
    shifted = detect_traits(source=(
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs + 1, tl.load(offs + x_ptr))\n"))
    assert "in_place" in shifted.traits
    strided = detect_traits(source=(
        "def k(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n"))
    assert "in_place" not in strided.traits  # a stride both use is no shared pointer
    asm = detect_traits(source=(
        "def k(x_ptr, BLOCK: tl.constexpr):\n"
        "    v = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
        "    tl.inline_asm_elementwise('red.global.add.f32 [$1], $2;', '=r,l,f', [x_ptr, v],\n"
        "                              dtype=tl.int32, is_pure=False, pack=1)\n"))
    assert "inline_asm" in asm.traits


def test_a_helper_the_walk_cannot_follow_is_a_hazard():
    """Ten helpers deep the walk stops following: what the last one does is unknown."""
    helpers = "".join(f"@triton.jit\ndef h{i}(p):\n    h{i + 1}(p)\n\n" for i in range(10))
    source = (helpers + "@triton.jit\ndef h10(p):\n    tl.atomic_add(p, 1.0)\n\n"
              "@triton.jit\ndef k(x_ptr):\n    h0(x_ptr)\n")
    traits = detect_traits(source=source, name="k")
    assert "opaque_call" in traits.traits and "atomics" not in traits.traits


def test_kernels_with_readable_helpers_and_no_assembly_have_neither_trait():
    """The must-not side of `inline_asm` and `opaque_call`: a tutorial kernel, and kernels that
    call `@triton.jit` helpers from another module and from their own."""
    from tests.kernels import loop_kernels

    for kernel in (tutorial_softmax.softmax_kernel, loop_kernels.helper_store_load,
                   loop_kernels.seed_store_load, splitk.splitk_matmul):
        traits = detect_traits(kernel).traits
        assert not {"inline_asm", "opaque_call"} & traits, (kernel, traits)


def test_a_config_without_hazards_gets_one_launch_per_draw_and_no_more():
    light = StressCheck().resolved("gpu", tuned_seconds=100.0, can_race=False)
    assert (light.min_launches, light.max_launches, light.draws, light.seconds) == (12, 12, 12, 0)
    assert StressCheck().resolved("gpu", tuned_seconds=100.0).min_launches == 200
    asked = StressCheck(min_launches=300, draws=5).resolved("gpu", can_race=False)
    assert (asked.min_launches, asked.max_launches, asked.draws) == (300, 300, 5)
    capped = StressCheck(max_launches=10).resolved("gpu", can_race=False)  # the user's cap
    assert (capped.min_launches, capped.max_launches, capped.draws) == (10, 10, 10)
    interpreter = StressCheck().resolved("interpreter", can_race=False)
    assert (interpreter.min_launches, interpreter.draws) == (4, 4)


def _contest(tmp_path, times: dict[int, float], found_wrong: tuple[int, ...] = ()
             ) -> tuple[Config, list[Trial]]:
    """The winner among tutorial_softmax configs (num_warps=1) timed at `times` per
    num_stages (those in `found_wrong` found wrong by an earlier trial first, as a stored
    best's re-check on a fresh draw), stress-checked for real in this process."""
    task = tutorial_softmax.TASK
    region = gate(task.space, [], Environment(), detect_traits(task.kernel))
    ledger = Ledger(Store(str(tmp_path / "s.sqlite")), lambda event: None)
    ledger.open(TrialKey(run="r", task="t", kernel="k", kernel_name="softmax", problem="p",
                         env="e", policy="p"), "interpreter")
    for stages in found_wrong:
        ledger.record(Trial(config=task.space.complete({"num_warps": 1, "num_stages": stages}),
                            status=Outcome.WRONG, checked_draws=1, checked_launches=1))
    for stages, ms in times.items():
        ledger.record(Trial(config=task.space.complete({"num_warps": 1, "num_stages": stages}),
                            status=Outcome.OK, time_ms=ms, checked_draws=1,
                            checked_launches=1))
    worker = LocalWorker(Setup(TaskRef("", "TASK", local=task), seed=0, baseline_json=None,
                               deterministic=True))
    worker.start()
    evaluator = Evaluator(worker, draws=1, stress=StressCheck(min_launches=2, draws=2),
                          timeout=120)
    best, _ = winner(ledger, evaluator, hazards=lambda c: race_hazards(region, c))
    return best, ledger.trials


@pytest.mark.interpreter
def test_a_tie_goes_to_the_config_without_a_hazard_and_a_real_lead_wins(tmp_path):
    best, trials = _contest(tmp_path, {2: 1.000, 1: 1.008})
    assert best["num_stages"] == 1
    assert [t.stressed for t in trials] == [False, True]  # the pipelined one never checked
    best, trials = _contest(tmp_path, {2: 1.000, 1: 1.050})
    assert best["num_stages"] == 2 and trials[0].stressed


@pytest.mark.interpreter
def test_a_config_found_wrong_once_never_wins_on_its_later_right_trials(tmp_path):
    """A stored best that failed its re-check on a fresh draw is measured again by the search,
    on other draws, where a bug that depends on the data may not show: it does not win."""
    best, _ = _contest(tmp_path, {2: 1.000, 1: 1.500}, found_wrong=(2,))
    assert best["num_stages"] == 1


def test_the_progress_line_says_why_the_winner_is_stressed_as_it_is():
    from tunegate._render import progress_line

    config = Config(values={"BLOCK": 64})
    line = progress_line({"event": "winner_check", "config": config, "hazards": ()})
    assert line.endswith("BLOCK=64 (no race hazard: its fresh draws, one launch each)")
    line = progress_line({"event": "winner_check", "config": config,
                          "hazards": ("the kernel's atomics (line 3: tl.atomic_add(p, x))",)})
    assert line.endswith("(race hazards: the kernel's atomics (line 3: tl.atomic_add(p, x)))")
