"""The judge's store side: a config quarantined as wrong is never a stored best nor reused, a
failed winner's best is forgotten, a task's fingerprint is one in every process, a prior from a
differently pruned key is filtered, and an in-place kernel without outputs casts no vote."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import KERNELS, ROOT
from tunegate.autotune import Store, TuneError, Tuner
from tunegate.autotune.store import TrialKey
from tunegate.autotune.strategies import make_strategy
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy, detect_environment
from tunegate.reasons import Reason
from tunegate.space import Config, Parameter, PowerOfTwo, Space

WRONG = Reason(kind="accuracy", summary="wrong output")


def key(run: str = "r") -> TrialKey:
    return TrialKey(run=run, task="t", kernel="k", kernel_name="copy", problem="n=8", env="e",
                    policy="p")


def cfg(block: int) -> Config:
    return Config(values={"BLOCK": block})


def test_a_quarantined_config_is_refused_and_never_read_back(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.record(key(), cfg(32), "wrong", reason=WRONG)
    assert store.save_best(key(), cfg(32), 1.0, "gpu") is None  # refused, nothing stored
    assert store.best("t", "n=8", "e") is None
    assert store.save_best(key(), cfg(64), 3.0, "gpu").config == cfg(64)
    store.save_best(key(), cfg(16), 2.0, "gpu")
    store.record(key("later"), cfg(16), "wrong", reason=WRONG)  # proven wrong after storing
    assert store.best("t", "n=8", "e") is None and not store.has_best("t", "e")
    other = TrialKey(**{**key().__dict__, "env": "other"})  # quarantine is per environment
    assert store.save_best(other, cfg(32), 1.0, "gpu").config == cfg(32)


def test_a_partial_best_proven_wrong_is_dropped_not_promoted(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert store.save_best(key(), cfg(16), 1.0, "gpu", partial=True, measured=1,
                           budget=4).partial
    store.record(key("next"), cfg(16), "wrong", reason=WRONG)  # the next run's finding
    kept = store.save_best(key("next"), cfg(64), 4.0, "gpu")  # slower, complete
    assert kept.config == cfg(64) and not kept.partial and kept.time_ms == 4.0


def test_forget_best_of_one_config_keeps_another(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.save_best(key(), cfg(16), 1.0, "gpu")
    store.forget_best("t", "n=8", "e", cfg(32))
    assert store.best("t", "n=8", "e").config == cfg(16)
    store.forget_best("t", "n=8", "e", cfg(16))
    assert store.best("t", "n=8", "e") is None


@pytest.mark.interpreter
def test_a_stored_best_failing_its_stress_check_or_quarantined_later_is_never_reused(tmp_path):
    from tests.kernels import trust

    store = Store(tmp_path / "s.sqlite")

    def tune(**options):
        return Tuner(trust.INTERMITTENT, TaskRef(str(KERNELS / "trust.py"), "INTERMITTENT"),
                     policy=Policy([]), store=store, **options).run()

    first = tune()
    assert first.best == {"MODE": 0}
    # An earlier tunegate stored the flaky MODE 1 as the (fastest) best, before the judge.
    store.clear_quarantine()
    planted = TrialKey(run="old", task=first.task_fingerprint, kernel="k",
                       kernel_name="intermittent", problem=first.problem, env=first.env,
                       policy=first.policy)
    store.save_best(planted, Config(values={"MODE": 1}), 1e-6, "interpreter")
    second = tune(retune=True)
    assert second.best == {"MODE": 0}
    stored = store.best(first.task_fingerprint, first.problem, first.env)
    assert stored is not None and stored.config == Config(values={"MODE": 0})
    # Found wrong later (say by `tunegate check`): the best row stays, but is never reused.
    store.record(TrialKey(**{**planted.__dict__, "run": "check"}), stored.config, "wrong",
                 reason=WRONG)
    with pytest.raises(TuneError) as third:
        tune()
    assert not third.value.result.reused
    assert {t.config["MODE"]: t.status for t in third.value.result.trials}[0] == "wrong"


TASK_MODULE = '''
import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Parameter, PowerOfTwo, Space


@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class Launcher:
    """A launch by a bound method of an object holding another object: reprs with addresses."""

    def __init__(self):
        self.state = (object(),)
        self.blocks = 2

    def launch(self, args, config):
        kernel[(self.blocks,)](**args, **config.values)


def inputs_for(n):
    hidden = object()

    def make_inputs(seed, device):
        assert hidden is not None
        return {"x_ptr": torch.randn(n), "y_ptr": torch.empty(n), "n": n}
    return make_inputs


TASK = Task(name="copy", kernel=kernel,
            space=Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=64, high=128))}),
            grid=(1,), launch=Launcher().launch, make_inputs=inputs_for(128),
            outputs=("y_ptr",))
'''

DROPIN_MODULE = '''
import tunegate.triton as triton
import triton.language as tl
from tunegate.policy import Policy


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                 key=["n"], cache_results=True, policy=Policy([]))
@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''

PRINT_FINGERPRINTS = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from tunegate.autotune.dropin import CallSite
from tunegate.kernelfile import load_module
from tunegate.policy import Policy
POLICY = Policy([])
import builtins
builtins.POLICY = POLICY
task = load_module(sys.argv[1] + "/task_mod.py").TASK
dropin = load_module(sys.argv[1] + "/dropin_mod.py").copy
dropin._gate()
call = CallSite(depth=0, problem="n=128", entries=(0, 1), grids={}, launch={},
                outputs=("y_ptr",))
print(json.dumps([task.fingerprint(), call.task(dropin).fingerprint()]))
'''


@pytest.mark.interpreter
def test_task_fingerprints_are_one_in_every_process(tmp_path):
    (tmp_path / "task_mod.py").write_text(textwrap.dedent(TASK_MODULE))
    (tmp_path / "dropin_mod.py").write_text(textwrap.dedent(DROPIN_MODULE))
    script = tmp_path / "print_fingerprints.py"
    script.write_text(PRINT_FINGERPRINTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "TRITON_INTERPRET": "1"}
    prints = [json.loads(subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
        check=True, env=env, cwd=tmp_path).stdout.splitlines()[-1]) for _ in range(2)]
    assert prints[0] == prints[1]
    assert prints[0][0] != prints[0][1]


TUNE_TWICE = '''
import json, sys
import torch
from tunegate.kernelfile import load_module
if __name__ == "__main__":  # the workers are spawned: they re-import this script
    kernel = load_module(sys.argv[1] + "/dropin_mod.py").copy
    x, y = torch.randn(128), torch.empty(128)
    kernel[lambda meta: (-(-128 // meta["BLOCK"]),)](x, y, 128)
    assert torch.equal(x, y)
    print(json.dumps(kernel.last_result.reused))
'''


@pytest.mark.interpreter
def test_cache_results_reuses_a_dropin_best_in_the_next_process(tmp_path):
    (tmp_path / "dropin_mod.py").write_text(textwrap.dedent(DROPIN_MODULE))
    script = tmp_path / "tune.py"
    script.write_text(TUNE_TWICE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "TRITON_INTERPRET": "1",
           "TUNEGATE_STORE": str(tmp_path / "s.sqlite")}
    reused = [json.loads(subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
        check=True, env=env, cwd=tmp_path).stdout.splitlines()[-1]) for _ in range(2)]
    assert reused == [False, True]


def test_a_prior_naming_configs_outside_the_space_is_not_an_error():
    space = Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=16, high=32))})
    region = Policy([]).gate(space, detect_environment(probe_device=False))
    prior = {cfg(128): 0.0, cfg(32): 0.5, Config(values={"BLOCK": 16, "num_warps": 4}): 0.0}
    for points in (None, [cfg(16), cfg(32)]):
        strategy = make_strategy("exhaustive", region, random.Random(0), budget=4,
                                 points=points, prior=prior)
        assert strategy.next_batch({})[0] == cfg(32)  # the one favoured config it may try


PRUNED_MODULE = '''
import tunegate.triton as triton
import triton.language as tl
from tunegate.policy import Policy


def at_most_n(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64)], key=["n"],
                 prune_configs_by={"early_config_prune": at_most_n}, policy=Policy([]),
                 store=STORE)
@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


@pytest.mark.interpreter
def test_dropin_with_pruning_tunes_a_key_whose_prior_holds_pruned_configs(tmp_path):
    import torch

    from tunegate.kernelfile import load_module

    path = tmp_path / "pruned_mod.py"
    path.write_text(PRUNED_MODULE.replace("STORE", repr(str(tmp_path / "s.sqlite"))))
    kernel = load_module(path).copy
    for n in (64, 32):  # 64 measures BLOCK 64, which the key n=32 prunes away
        x = torch.randn(n)
        y = torch.empty(n)
        kernel[lambda meta: (-(-n // meta["BLOCK"]),)](x, y, n)
        assert torch.equal(x, y) and kernel.best_config.kwargs["BLOCK"] <= n


INPLACE_MODULE = '''
import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, Space


@triton.jit
def scale(x_ptr, n, FACTOR: tl.constexpr, WARPS_HINT: tl.constexpr):
    offs = tl.arange(0, 64)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(64, generator=g).to(device), "n": 64}


SPACE = Space(parameters={"FACTOR": Parameter(domain=Choice(choices=(2, 3, 4), default=2)),
                          "WARPS_HINT": Parameter(domain=Choice(choices=(0, 1), default=0))})
# FACTOR=2 is right (the baseline, and one more config); 3 and 4 are wrong, each its own way.
TASK = Task(name="scale", kernel=scale, space=SPACE, grid=(1,), make_inputs=make_inputs,
            outputs=(), restore_value=("x_ptr",),
            configs=tuple(SPACE.complete(v) for v in ({"FACTOR": 2}, {"FACTOR": 2, "WARPS_HINT": 1},
                                                      {"FACTOR": 3}, {"FACTOR": 4})))
# No config agrees with the baseline: three outputs, none more likely right than another.
UNSUPPORTED = TASK.model_copy(update={"configs": TASK.configs[:1] + TASK.configs[2:]})
'''


@pytest.mark.interpreter
def test_an_in_place_kernel_without_outputs_keeps_its_right_baseline(tmp_path):
    from tunegate.kernelfile import load_module

    path = tmp_path / "inplace_mod.py"
    path.write_text(INPLACE_MODULE)
    result = Tuner(load_module(path).TASK, TaskRef(str(path), "TASK"), policy=Policy([]),
                   store=Store(tmp_path / "s.sqlite")).run()
    by_config = {(t.config["FACTOR"], t.config["WARPS_HINT"]): t.status for t in result.trials}
    assert result.best["FACTOR"] == 2
    assert by_config == {(2, 0): "ok", (2, 1): "ok", (3, 0): "wrong", (4, 0): "wrong"}


@pytest.mark.interpreter
def test_a_baseline_no_config_agrees_with_is_not_trusted(tmp_path):
    """Three configs, three different outputs, no reference: the baseline is no likelier right
    than either other (a default BLOCK too small for the row looks just like this), so none is
    returned."""
    from tunegate.kernelfile import load_module

    path = tmp_path / "inplace_mod.py"
    path.write_text(INPLACE_MODULE)
    with pytest.raises(TuneError, match="baseline config looks wrong: 2 configs disagree among "
                                        "themselves and with the baseline config FACTOR=2"):
        Tuner(load_module(path).UNSUPPORTED, TaskRef(str(path), "UNSUPPORTED"),
              policy=Policy([]), store=Store(tmp_path / "s.sqlite")).run()
