"""GPU-only behaviour: real faults cost one config, and the pipelining hazard is kept out.

Run on a GPU machine with `python -m pytest -m gpu`; without a GPU these skip.
"""

import pytest

from tests.conftest import KERNELS, ROOT
from tunegate.autotune import Store, Tuner
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy, builtin_policy_path

pytestmark = pytest.mark.gpu


def statuses(result, **where):
    return {t.status for t in result.trials
            if all(t.config[k] == v for k, v in where.items())}


def test_sticky_misaligned_address_costs_one_config(tmp_path):
    from tests.kernels import gpu_faults

    result = Tuner(gpu_faults.TD_TASK, TaskRef(str(KERNELS / "gpu_faults.py"), "TD_TASK"),
                   policy=Policy([]), store=Store(tmp_path / "s.sqlite"),
                   compile_workers=2).run()
    assert statuses(result, XBLOCK=4, NUM_STAGES=3) == {"crashed"}
    bad = next(t for t in result.trials if t.status == "crashed")
    assert "misaligned address" in bad.reason.evidence["error"]
    assert statuses(result, XBLOCK=32) == {"ok"}  # later configs ran in a fresh worker
    assert not (result.best["XBLOCK"] == 4 and result.best["NUM_STAGES"] == 3)


def test_builtin_policy_never_compiles_the_misaligned_config(tmp_path):
    import torch

    from tests.kernels import gpu_faults

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("tensor descriptors need sm_90")
    result = Tuner(gpu_faults.TD_TASK, TaskRef(str(KERNELS / "gpu_faults.py"), "TD_TASK"),
                   policy=Policy.from_files(builtin_policy_path()),
                   store=Store(tmp_path / "s.sqlite")).run()
    assert statuses(result, XBLOCK=4, NUM_STAGES=3) == set()  # the 16-byte tile: never run
    assert statuses(result, XBLOCK=32, NUM_STAGES=3) == {"ok"}  # 128 bytes: right on an H200
    assert result.removals["tensor-descriptor-deep-pipeline-misaligned"] == 1


def test_warp_specialize_on_hopper_costs_one_config(tmp_path):
    import torch

    from tests.kernels import gpu_faults

    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the compiler failure is Hopper's")
    result = Tuner(gpu_faults.WS_TASK, TaskRef(str(KERNELS / "gpu_faults.py"), "WS_TASK"),
                   policy=Policy([]), store=Store(tmp_path / "s.sqlite"),
                   compile_workers=2).run()
    assert statuses(result, WS=True) <= {"compile_error", "crashed", "error"}
    assert statuses(result, WS=True) and statuses(result, WS=False) == {"ok"}
    assert result.best["WS"] is False


def test_pipelined_store_load_is_excluded_and_the_result_is_right(tmp_path):
    from examples import store_load

    result = Tuner(store_load.TASK, TaskRef(str(ROOT / "examples" / "store_load.py"), "TASK"),
                   policy=Policy.from_files(builtin_policy_path()),
                   store=Store(tmp_path / "s.sqlite")).run()
    assert all(t.config["INNER_STAGES"] == 1 for t in result.trials)
    assert result.removals["pipelined-store-load"] == 72 and result.timing == "gpu"


def test_the_check_catches_the_hazard_when_the_rule_is_only_experimental(tmp_path,
                                                                          write_policy):
    from examples import store_load

    policy = write_policy('''
        schema = 1
        [[rule]]
        id = "pipelining-is-risky"
        title = "check pipelined loops"
        action = "experimental"
        features = ["range_num_stages"]
        reason = "r"
        ''')
    result = Tuner(store_load.TASK, TaskRef(str(ROOT / "examples" / "store_load.py"), "TASK"),
                   policy=Policy.from_files(policy), store=Store(tmp_path / "s.sqlite")).run()
    pipelined = [t for t in result.trials if t.config["INNER_STAGES"] > 1]
    assert pipelined and {t.status for t in pipelined} == {"wrong"}
    assert result.best["INNER_STAGES"] == 1


def test_intermittent_6691_race_at_four_stages_is_rejected_by_the_stress_check(tmp_path):
    """triton#6691 at num_stages=4 (fp16, block 64, 4 warps) was wrong in ~2% of launches on an
    H200: the built-in policy makes it experimental, and the stress check must reject it."""
    from benchmarks.race_6691 import measure
    from tests.kernels import race_6691
    from tunegate.autotune.stress import StressCheck

    # The race's rate is the GPU's, not ours: 2% on one H200, 1 in 2000 on another day's
    # (benchmarks/results/session-0412). Measured first with plain Triton; under 0.5% no
    # affordable check catches it reliably, and the test says so instead of flaking.
    wrong = measure(64, 4, 4, draws=4, launches=500, sync=False)["wrong_launches"]
    if wrong < 10:
        pytest.skip(f"the #6691 race showed in {wrong} of 2000 plain launches on this GPU today")
    # draws=1: the quick check is one draw (a launch or two), so the stress check all but
    # alone decides. Experimental configs get a quarter of it during the search: 500 launches
    # miss a 0.5% race with probability 0.995**500 < 0.1, and the full 2000 launches with
    # probability < 1e-4.
    result = Tuner(race_6691.TASK, TaskRef(str(KERNELS / "race_6691.py"), "TASK"),
                   policy=Policy.from_files(builtin_policy_path()),
                   store=Store(tmp_path / "s.sqlite"), draws=1,
                   stress=StressCheck(min_launches=2000, max_launches=4000, seconds=2.0)).run()
    assert result.removals["dot-trans-with-sum-two-stages"] == 1  # wrong in every launch
    four = next(t for t in result.trials if t.config["num_stages"] == 4)
    assert four.status == "wrong", four
    if "stress check" in four.reason.summary:  # else the quick check's launch or two saw it
        evidence = four.reason.evidence
        assert evidence["launches"] >= 500 and evidence["wrong"] + evidence["differing"] > 0
    assert result.best["num_stages"] != 4
    assert result.check_seconds < result.wall_seconds
