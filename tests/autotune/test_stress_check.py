"""The stress check, in-place and zeroed outputs, fail-fast and no-reference semantics, on real
kernels under the interpreter."""

import json

import pytest
import torch

from tests.conftest import KERNELS, run_cli
from tunegate.autotune import Store, TuneError, Tuner
from tunegate.autotune.stress import StressCheck
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy, builtin_policy_path
from tunegate.space import Choice, Parameter

pytestmark = pytest.mark.interpreter


def tuner(name, tmp_path, **options):
    from tests.kernels import trust

    options.setdefault("policy", Policy.from_files(builtin_policy_path()))
    return Tuner(getattr(trust, name), TaskRef(str(KERNELS / "trust.py"), name),
                 store=Store(tmp_path / "s.sqlite"), **options)


def test_a_fast_config_wrong_in_one_of_seven_launches_is_never_returned(tmp_path):
    result = tuner("INTERMITTENT", tmp_path).run()
    by_mode = {t.config["MODE"]: t for t in result.trials}
    assert result.best == {"MODE": 0}
    flaky, noisy = by_mode[1], by_mode[2]
    assert flaky.status == "wrong" and flaky.stressed
    assert "stress check: wrong in 2 of 16 launches" in flaky.reason.summary
    assert flaky.reason.evidence["wrong"] == 2 and flaky.reason.evidence["argument"] == "y_ptr"
    # within tolerance every time, but not repeatable: a kernel without atomics must be
    assert noisy.status == "wrong" and noisy.reason.evidence["wrong"] == 0
    assert "launches differ bit for bit" in noisy.reason.summary
    # its timing's output on draw 1, then 16 stress launches over 4 fresh draws
    assert by_mode[0].status == "ok"
    assert by_mode[0].checked() == "stress-checked: 17 launches on 5 draws"


def test_a_fastest_config_right_only_on_the_timing_draw_is_never_returned(tmp_path):
    """Each config's timing is checked on draw 1 only; the winner's stress check (fresh draws)
    is what finds a bug that shows on other inputs, and the next config wins."""
    from tests.kernels import trust

    assert float(trust.make_inputs(0, "cpu")["x_ptr"][0]) < 0  # the timing draw hides the bug
    result = tuner("INPUT_DEPENDENT", tmp_path).run()
    by_mode = {t.config["MODE"]: t for t in result.trials}
    assert result.best == {"MODE": 0}
    assert by_mode[1].status == "wrong" and by_mode[1].stressed
    assert by_mode[1].reason.summary.startswith("stress check: wrong in ")
    assert by_mode[0].status == "ok" and by_mode[0].stressed


def test_a_short_tunings_winner_gets_the_minimum_and_extra_launches_for_two_percent_of_it():
    short = StressCheck().resolved("gpu", tuned_seconds=3.0)
    assert short.min_launches == 200 and short.draws == 12 and short.seconds == pytest.approx(0.06)
    assert StressCheck().resolved("gpu", tuned_seconds=100.0).seconds == 0.25
    assert StressCheck(seconds=1.0).resolved("gpu", tuned_seconds=3.0).seconds == 1.0  # asked for
    assert StressCheck().resolved("interpreter", tuned_seconds=3.0).seconds == 2.0


def test_stress_sizing_defaults_and_validation():
    gpu = StressCheck().resolved("gpu")
    assert gpu.min_launches == 200 and (1 - 0.02) ** gpu.min_launches < 0.02
    assert StressCheck(min_launches=300).resolved("gpu").max_launches == 1000
    assert StressCheck().light("gpu").min_launches == 50
    assert StressCheck().resolved("interpreter").min_launches >= 7
    with pytest.raises(ValueError, match="min_launches <= max_launches"):
        StressCheck(min_launches=10, max_launches=5)


def test_in_place_kernel_is_restored_not_poisoned_and_float64_reference_is_cast(tmp_path):
    from tests.kernels import trust

    assert trust.IN_PLACE.written_in_place() == ("x_ptr",)
    result = tuner("IN_PLACE", tmp_path).run()
    assert {t.status for t in result.trials} == {"ok"} and result.best is not None
    assert all(t.checked_launches >= 1 for t in result.trials)


def test_split_k_into_a_zeroed_output_is_accepted(tmp_path):
    result = tuner("SPLIT_K_ZEROED", tmp_path,
                   stress=StressCheck(min_launches=4, max_launches=4)).run()
    statuses = {t.config["SPLIT_K"]: t.status for t in result.trials}
    assert statuses == {1: "ok", 2: "ok", 4: "ok"}
    split = [t for t in result.trials if t.config["SPLIT_K"] > 1]
    # experimental (split-k-atomics): stress-checked during the search (a light check: 1 launch
    # of the 4 asked for, after the 2 quick draws, and before the timing); the zeroed output
    # holds no poison, so no draw is launched a second time under the other one
    # (the winner, if a split one is fastest under the interpreter's noise, gets the whole one)
    assert all(t.checked_launches == 2 + 1 + 1 for t in split if not t.stressed)


def test_a_raising_reference_stops_the_run_before_the_search(tmp_path):
    with pytest.raises(TuneError, match="reference function raised RuntimeError"):
        tuner("RAISING_REFERENCE", tmp_path).run()
    assert Store(tmp_path / "s.sqlite").history("x", _config({"BLOCK": 32})) == []
    out = run_cli("tune", "tests/kernels/trust.py:RAISING_REFERENCE", "--json",
                  "--store", str(tmp_path / "s.sqlite"))
    assert out.returncode == 1
    assert "reference is broken" in json.loads(out.stdout)["error"]


def test_without_a_reference_results_say_so(tmp_path):
    from tests.kernels import pipelined_copy

    store = tmp_path / "s.sqlite"
    result = Tuner(pipelined_copy.TASK, TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK"),
                   policy=Policy([]), store=Store(store)).run()
    assert result.compared_with.endswith("not ground truth")
    assert any("compared with the baseline config" in n for n in result.notes)
    explain = run_cli("policy", "explain", "BLOCK=32, STAGES=2", "--kernel",
                      "tests/kernels/pipelined_copy.py:TASK", "--store", str(store))
    assert "checked  against the baseline config (the task has no reference), not ground " \
        "truth" in explain.stdout, explain.stderr


def test_a_baseline_outvoted_by_agreeing_configs_stops_the_run(tmp_path):
    with pytest.raises(TuneError, match="baseline config looks wrong: 3 configs agree") as e:
        tuner("WRONG_BASELINE", tmp_path).run()
    assert e.value.result is not None and e.value.result.best is None
    assert e.value.result.error.startswith("the baseline config looks wrong")


def test_configs_found_wrong_against_an_outvoted_baseline_are_not_quarantined(tmp_path):
    """A later run on the same store must measure them again: skipped as quarantined, they
    would leave the wrong baseline unopposed, and it would be returned."""
    for _ in range(2):
        with pytest.raises(TuneError, match="baseline config looks wrong: 3 configs agree"):
            tuner("WRONG_BASELINE", tmp_path).run()
    store = Store(tmp_path / "s.sqlite")
    assert store.outcomes(("wrong",)) == []
    unjudged = store.outcomes(("baseline_error",))
    assert len(unjudged) == 6 and all(r.summary.startswith("not judged: wrong output")
                                      for _, _, _, r in unjudged)
    explain = run_cli("policy", "explain", "BLOCK=64, VARIANT=1", "--kernel",
                      f"{KERNELS / 'trust.py'}:WRONG_BASELINE", "--store", str(tmp_path / "s.sqlite"))
    assert "REJECTED" not in explain.stdout and "not judged: " in explain.stdout, explain.stdout


_KILLED_AT_THE_FIRST_WRONG = """
import os, sys
sys.path.insert(0, {root!r})
from tests.autotune.test_stress_check import tuner
from pathlib import Path

def killed(event):
    if event.get("event") == "trial" and event["trial"].status == "wrong":  # before the vote
        os._exit(9)

tuner("WRONG_BASELINE", Path({tmp!r}), progress=killed).run()
"""


def test_a_run_killed_before_its_vote_on_the_baseline_quarantines_nothing(tmp_path):
    """Configs found wrong against the baseline are stored as not judged until the vote on it:
    a run killed before the vote must not leave them quarantined, or the next run would skip
    them, leave the wrong baseline unopposed and return it."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    killed = subprocess.run([sys.executable, "-c", _KILLED_AT_THE_FIRST_WRONG.format(
        root=str(ROOT), tmp=str(tmp_path))], capture_output=True, text=True, timeout=300)
    assert killed.returncode == 9, killed.stderr[-3000:]
    store = Store(tmp_path / "s.sqlite")
    assert store.outcomes(("wrong",)) == []
    assert [r.summary.startswith("not judged yet: wrong output")
            for _, _, _, r in store.outcomes(("baseline_error",))] == [True]
    with pytest.raises(TuneError, match="baseline config looks wrong: 3 configs agree"):
        tuner("WRONG_BASELINE", tmp_path).run()  # every config measured again: outvoted


def test_configs_found_wrong_against_a_baseline_the_vote_kept_are_quarantined(tmp_path):
    from tests.kernels import trust

    task = trust.WRONG_BASELINE.model_copy(update={"space": trust.WRONG_BASELINE.space.model_copy(
        update={"parameters": {**trust.WRONG_BASELINE.space.parameters,
                               "VARIANT": Parameter(domain=Choice(choices=(1, 2, 0), default=1))}})})
    Tuner(task, TaskRef(str(KERNELS / "trust.py"), "WRONG_BASELINE"),
          policy=Policy.from_files(builtin_policy_path()), store=Store(tmp_path / "s.sqlite")).run()
    wrong = Store(tmp_path / "s.sqlite").outcomes(("wrong",))
    assert len(wrong) == 1 and Store(tmp_path / "s.sqlite").outcomes(("baseline_error",)) == []


def _config(values):
    from tunegate.space import Config

    return Config(values=values)


def test_mismatch_names_the_output_dtype_and_tolerance():
    from tunegate.autotune import compare

    want = torch.full((4,), 8.80284, dtype=torch.float64)
    assert compare("out", want.float(), want) is None  # float32 tolerance, not float64's
    bad = compare("out", want.float() + 1, want)
    assert "(float32, rtol 0.0001, atol 1e-05)" in bad.summary()
    assert compare("i", torch.ones(2, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
                   ).summary().endswith("(int32, compared bit for bit)")


def test_a_reference_of_the_wrong_shape_is_refused_at_once():
    from tests.kernels import trust
    from tunegate.autotune.runner import BaselineError, Runner

    task = trust.IN_PLACE.model_copy(update={"reference": lambda x_ptr, y_ptr, n: x_ptr[:10]})
    with pytest.raises(BaselineError, match=r"reference's 'x_ptr' has shape \(10,\), but the "
                                            r"argument has shape \(200,\)"):
        Runner(task, seed=0, baseline=None)


def test_the_6691_kernel_is_right_here_and_experimental_at_four_stages_on_an_h200():
    """The premise of the GPU test: the kernel matches its reference (interpreter, small N),
    shows the trait, and the built-in policy checks it at num_stages=4 on an H200."""
    from tests.kernels import race_6691
    from tunegate.autotune.runner import Runner
    from tunegate.policy import Environment, detect_traits

    task = race_6691.SMALL
    config = task.space.complete({"num_stages": 4})
    assert Runner(task, seed=0, baseline=None).check(config, 1).mismatch is None
    traits = detect_traits(task.kernel)
    assert "dot_trans_and_sum" in traits.traits
    h200 = Environment(triton="3.6.0", torch="2.11.0", python="3.12.3", cuda="13.0",
                       device="cuda", capability="9.0")
    region = Policy.from_files(builtin_policy_path()).gate(task.space, h200, traits)
    assert region.verdict(config).status == "experimental"
    assert region.verdict(task.space.complete({"num_stages": 2})).status == "excluded"


def _stress(task, mode, launches, spy=None):
    from tunegate.autotune.runner import Runner

    runner = Runner(task, seed=0, baseline=None)
    if spy is not None:
        prepare = runner.prepare
        runner.prepare = lambda *a, **k: (spy.append(k.get("keep")), prepare(*a, **k))[1]
    return runner.stress(_config({"MODE": mode}), StressCheck(
        min_launches=launches, max_launches=launches, draws=2))


def test_an_input_every_launch_leaves_alone_is_not_copied_again_after_the_first():
    from tests.kernels import trust

    keeps = []
    report = _stress(trust.TOUCHING_INPUT.model_copy(update={"reference": trust.reference}),
                     2, 8, keeps)  # MODE 2: never touches x
    assert report.passed and report.launches == 8
    launched = [k for k in keeps if k is not None]
    assert launched[:2] == [frozenset()] * 2 and set(launched[2:]) == {frozenset({"x_ptr"})}


def test_an_input_the_kernel_writes_though_named_nowhere_is_restored_before_every_launch():
    from tests.kernels import trust

    report = _stress(trust.TOUCHING_INPUT, 0, 8)  # x += 1 each launch, as the reference does
    assert report.passed, report.summary()


def test_an_input_corrupted_by_one_launch_fails_that_launch_and_is_restored_for_the_next():
    from tests.kernels import trust

    trust._launches[("touch", 1)] = 0
    report = _stress(trust.TOUCHING_INPUT.model_copy(update={"reference": trust.reference}),
                     1, 10)
    # launches 5 and 10 corrupt x; had x not been restored, every later launch on that draw
    # would have been wrong too
    assert report.wrong == 2 and report.first_mismatch.argument == "x_ptr", report.summary()


def test_an_input_every_launch_leaves_alone_is_compared_only_after_the_first_and_at_the_end():
    from tests.kernels import trust
    from tunegate.autotune.runner import Runner

    runner = Runner(trust.TOUCHING_INPUT.model_copy(update={"reference": trust.reference}),
                    seed=0, baseline=None)
    asked: list[tuple[bool, frozenset[str]]] = []  # (a draw's first launch, names compared)
    changed, kept_changed = runner._changed, runner._kept_changed
    runner._changed = lambda outputs, firsts, pristines: (
        asked.extend((f is None, frozenset(o)) for o, f in zip(outputs, firsts)),
        changed(outputs, firsts, pristines))[1]
    ends: list[list[frozenset[str]]] = []
    runner._kept_changed = lambda draws, kept: (ends.append(list(kept)),
                                                kept_changed(draws, kept))[1]
    report = runner.stress(_config({"MODE": 2}), StressCheck(min_launches=8, max_launches=8,
                                                             draws=2))
    assert report.passed and report.launches == 8
    assert [names for first, names in asked if "x_ptr" in names] == \
        [names for first, names in asked if first] and len(asked) == 8
    assert ends == [[frozenset({"x_ptr"})] * 2]  # compared once more, after the last launch


@pytest.mark.parametrize("draws, launches, nan_draws", [(2, 2, [1]), (3, 3, [1]), (4, 6, [1, 3])])
def test_a_second_poison_round_over_some_draws_only_checks_those_draws(draws, launches,
                                                                       nan_draws):
    from tests.kernels import trust
    from tunegate.autotune.runner import Runner

    # The odd draws expect a NaN: those not yet launched under the second poison are launched
    # under it at the end, a round over some draws only (which crashed before)
    runner = Runner(trust.NAN_ON_SOME_DRAWS, seed=0, baseline=None)
    check = StressCheck(min_launches=launches, max_launches=launches, draws=draws)
    right = runner.stress(_config({"MODE": 0}), check)
    assert right.passed and right.differing == 0, right.summary()
    assert launches < right.launches <= launches + len(nan_draws)
    skipping = runner.stress(_config({"MODE": 1}), check)  # leaves its NaN result unwritten
    assert not skipping.passed and skipping.first_wrong_draw in nan_draws, skipping.summary()
    assert skipping.first_mismatch.argument == "y_ptr"


def test_a_draw_launched_once_is_not_compared_again_at_the_end():
    from tests.kernels import trust
    from tunegate.autotune.runner import Runner

    runner = Runner(trust.TOUCHING_INPUT.model_copy(update={"reference": trust.reference}),
                    seed=0, baseline=None)
    ends: list[list[frozenset[str]]] = []
    kept_changed = runner._kept_changed
    runner._kept_changed = lambda draws, kept: (ends.append(list(kept)),
                                                kept_changed(draws, kept))[1]
    once = StressCheck(min_launches=2, max_launches=2, draws=2)
    assert runner.stress(_config({"MODE": 2}), once).passed  # leaves x alone
    assert ends == [[frozenset(), frozenset()]]  # its first launch's check saw x unchanged
    trust._launches[("touch", 1)] = 4  # the next launch, a draw's only one, corrupts x
    report = runner.stress(_config({"MODE": 1}), once)
    assert report.wrong == 1 and report.first_mismatch.argument == "x_ptr", report.summary()


def _counting_runner(task):
    """A runner of `task` and the seeds of the draws it makes from now on."""
    from tunegate.autotune.runner import Runner

    made: list[int] = []

    def make_inputs(seed, device):
        made.append(seed)
        return task.make_inputs(seed, device)

    runner = Runner(task.model_copy(update={"make_inputs": make_inputs}), seed=0, baseline=None)
    made.clear()
    return runner, made


def test_a_tunings_stress_checks_share_fresh_draws_and_still_catch_an_input_dependent_config():
    from tests.kernels import trust

    runner, made = _counting_runner(trust.INPUT_DEPENDENT)
    six = StressCheck(min_launches=6, max_launches=6, draws=6)
    assert runner.stress(_config({"MODE": 0}), six).passed
    first = list(made)
    assert len(first) == 6 and 0 not in first  # fresh: not the quick checks' draw 0
    report = runner.stress(_config({"MODE": 1}), six)  # wrong where x[0] > 0
    assert made == first, "the second config's check made draws of its own"
    assert not report.passed and report.first_mismatch.argument == "y_ptr", report.summary()
    runner.stress(_config({"MODE": 0}), StressCheck(min_launches=8, max_launches=8, draws=8))
    assert made == first + [first[-1] + 1, first[-1] + 2]  # only the two it lacked


def test_stress_draws_made_ahead_are_the_ones_the_check_uses_and_stop_when_work_is_due():
    """What a run worker makes while it waits (`stress_draws_ahead`) is what the stress check
    would have made: the same seeds, none made again, and an input-dependent config still
    fails on them; `due` stops it between draws."""
    from tests.kernels import trust

    ahead, made = _counting_runner(trust.INPUT_DEPENDENT)
    calls = iter([False, False, True])
    assert ahead.stress_draws_ahead(6, due=lambda: next(calls)) == 2
    assert ahead.stress_draws_ahead(6, due=lambda: False) == 6
    first = list(made)
    six = StressCheck(min_launches=6, max_launches=6, draws=6)
    report = ahead.stress(_config({"MODE": 1}), six)
    assert made == first, "the stress check made draws of its own"
    plain, made_plain = _counting_runner(trust.INPUT_DEPENDENT)
    same = plain.stress(_config({"MODE": 1}), six)
    assert made_plain == first
    assert not report.passed and (report.wrong, report.first_wrong_draw) == \
        (same.wrong, same.first_wrong_draw), report.summary()
    assert ahead.stress(_config({"MODE": 0}), six).passed


def test_a_draw_that_failed_ahead_fails_only_the_stress_checks_that_need_it():
    """A draw whose inputs (or reference, or baseline) raise when made ahead is not made again:
    a check of fewer draws passes, one that needs it fails with that error, as it would have
    failed making it."""
    from tests.kernels import trust
    from tunegate.autotune.runner import FRESH_DRAWS, BaselineError, Runner

    made: list[int] = []

    def make_inputs(seed, device):
        made.append(seed)
        if seed == FRESH_DRAWS + 3:
            raise ValueError("no such input")
        return trust.INPUT_DEPENDENT.make_inputs(seed, device)

    task = trust.INPUT_DEPENDENT.model_copy(update={"make_inputs": make_inputs})
    runner = Runner(task, seed=0, baseline=None)
    made.clear()
    assert runner.stress_draws_ahead(6, due=lambda: False) == 3
    assert made == [FRESH_DRAWS + i for i in range(4)]
    three = StressCheck(min_launches=3, max_launches=3, draws=3)
    assert runner.stress(_config({"MODE": 0}), three).passed
    with pytest.raises(BaselineError, match="no such input"):
        runner.stress(_config({"MODE": 0}), StressCheck(min_launches=6, max_launches=6,
                                                         draws=6))
    assert len(made) == 4, "the failed draw was made again"


def test_stress_draws_ahead_keep_no_more_than_a_check_would(monkeypatch):
    from tests.kernels import trust
    from tunegate.autotune import runner as runner_module

    monkeypatch.setattr(runner_module, "KEPT_STRESS_BYTES", 300_000)  # a draw takes 260 kB
    runner, made = _counting_runner(trust.INPUT_DEPENDENT)
    assert runner.stress_draws_ahead(6, due=lambda: False) == 1
    assert len(made) == 2  # the second was made, found not to fit and dropped
    one = StressCheck(min_launches=1, max_launches=1, draws=1)
    assert runner.stress(_config({"MODE": 0}), one).passed
    assert len(made) == 2, "the kept draw was made again"


def test_stress_draws_too_big_to_keep_are_made_anew_for_each_check(monkeypatch):
    from tests.kernels import trust
    from tunegate.autotune import runner as runner_module

    monkeypatch.setattr(runner_module, "KEPT_STRESS_BYTES", 1024)  # one draw takes 3 KiB
    runner, made = _counting_runner(trust.INPUT_DEPENDENT)
    two = StressCheck(min_launches=2, max_launches=2, draws=2)
    for _ in range(2):
        assert runner.stress(_config({"MODE": 0}), two).passed
    assert len(made) == len(set(made)) == 4


def test_split_k_atomics_into_an_unzeroed_output_fail_on_the_draws_a_right_config_passed():
    """The tutorial-style split-K matmul: SPLIT_K=1 stores its tile (right), SPLIT_K=2 adds
    into an output nobody zeroed (wrong on every draw); the draws it shares are the right
    config's, and none is made again. Zeroed first (`reset_to_zero`), SPLIT_K=2 is right."""
    from examples import splitk
    from tests.kernels import trust

    four = StressCheck(min_launches=4, max_launches=4, draws=4)
    tile = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4}
    runner, made = _counting_runner(splitk.TASK)
    assert runner.stress(_config({**tile, "SPLIT_K": 1}), four).passed
    first = list(made)
    report = runner.stress(_config({**tile, "SPLIT_K": 2}), four)
    assert made == first and not report.passed and report.wrong == 4, report.summary()
    zeroed, _ = _counting_runner(trust.SPLIT_K_ZEROED)
    assert zeroed.stress(_config({**tile, "SPLIT_K": 2}), four).passed


def test_a_baseline_outnumbered_by_wider_writers_is_replaced_by_the_widest(tmp_path):
    result = tuner("NARROW_BASELINE", tmp_path).run()
    assert {t.config["BLOCK"]: t.status for t in result.trials} == {
        32: "wrong", 64: "wrong", 128: "ok"}
    assert result.best["BLOCK"] == 128 and "BLOCK=128" in result.compared_with
    assert any("the search ran again, compared with BLOCK=128" in n for n in result.notes)
    first = Store(tmp_path / "s.sqlite").outcomes(("baseline_error",))
    assert len(first) == 3 and all(r.summary.startswith("not judged: ") for *_, r in first)


def test_an_interrupted_search_does_not_run_again_against_another_baseline(tmp_path,
                                                                          monkeypatch):
    """A Ctrl-C (or SIGTERM to `tune`) after the search is an end, not a restart: the
    disputed baseline stops the run."""
    from tunegate.autotune import search

    rounds = []
    measured = search.Search.run

    def interrupted(self):
        measured(self)
        rounds.append(1)
        return True  # as if the Ctrl-C came as the search ended

    monkeypatch.setattr(search.Search, "run", interrupted)
    with pytest.raises(TuneError, match="baseline config looks wrong: 2 config value"):
        tuner("NARROW_BASELINE", tmp_path).run()
    assert rounds == [1]


def test_a_config_that_failed_to_run_is_not_measured_again_when_the_search_reruns(tmp_path):
    """Its failure did not depend on the baseline: a hung config costs its timeout once."""
    result = tuner("NARROW_BASELINE_AND_A_BROKEN_CONFIG", tmp_path).run()
    assert result.best["BLOCK"] == 128
    broken = [t for t in result.trials if t.config["BROKEN"] == 1]
    assert len(broken) == 1 and broken[0].status.failed, result.trials
    rows = Store(tmp_path / "s.sqlite").outcomes(("error", "compile_error", "crashed", "timeout"))
    assert [c["BROKEN"] for _, c, _, _ in rows] == [1], rows  # one row, from the first search
