"""The Helion adapter against real Helion on the CPU: configs from a real kernel's ConfigSpec go
through the gate, Helion's own autotuner calls it, and nothing tunegate does raises inside Helion.

Helion runs no kernel on the CPU (its launcher needs a GPU driver), so timing and the accuracy
check of experimental configs run on the GPU: tests/helion/test_helion_gpu.py.
"""

from __future__ import annotations

import logging
import random

import pytest

helion = pytest.importorskip("helion", exc_type=ImportError)
hl = pytest.importorskip("helion.language", exc_type=ImportError)
torch = pytest.importorskip("torch")

from tunegate.helion import HelionGate  # noqa: E402
from tunegate.policy import Policy, detect_environment  # noqa: E402

NO_PIPELINING = """schema = 1
[[rule]]
id = "no-pipelined-loops"
title = "test: no software-pipelined loops"
action = "disable"
features = ["range_num_stages"]
match = "range_num_stages > 1"
reason = "a test rule"
"""


@helion.kernel(autotune_effort="none")
def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


def gate(tmp_path, **kw):
    path = tmp_path / "policies.toml"
    path.write_text(NO_PIPELINING)
    env = detect_environment(probe_device=False).with_overrides(
        {"device": "cuda", "capability": "9.0", "triton": "3.6.0"})
    return HelionGate(Policy.load(extra=[str(path)]), env, **kw)


def spec_configs(n: int):
    from helion.autotuner.config_generation import ConfigGeneration

    bound = softmax.bind((torch.randn(64, 128),))
    random.seed(0)  # Helion's generator draws from the global random module
    gen = ConfigGeneration(bound.config_spec)
    return bound, [bound.config_spec.default_config()] + [gen.random_config() for _ in range(n)]


def test_the_gate_drops_exactly_what_the_policy_disables_in_real_helion_configs(tmp_path):
    g = gate(tmp_path)
    _, configs = spec_configs(60)
    kept = [g(c) for c in configs]
    pipelined = [any(s > 1 for s in c.config.get("range_num_stages", [])) for c in configs]
    assert [k is None for k in kept] == pipelined and any(pipelined) and not all(pipelined)
    assert all(k is c for k, c in zip(kept, configs) if k is not None)  # returned unchanged
    assert g.counts.seen == len(configs) and g.counts.excluded == sum(pipelined)
    assert g.counts.rules == {"no-pipelined-loops": sum(pipelined)}
    assert g.counts.unreadable == 0 and g.counts.experimental > 0  # built-in flatten rule


def test_a_config_tunegate_cannot_read_is_allowed_with_a_warning(tmp_path, caplog):
    g = gate(tmp_path)
    odd = helion.Config(block_sizes=["invalid"], num_warps=4)
    with caplog.at_level(logging.WARNING, logger="tunegate.helion"):
        assert g(odd) is odd
    assert g.counts.unreadable == 1
    assert "tunegate cannot read Helion config" in caplog.text and "block_sizes" in caplog.text


def test_an_experimental_config_that_cannot_be_run_is_dropped_not_raised(tmp_path, caplog):
    g = gate(tmp_path)
    bound, _ = spec_configs(0)
    g.autotuner_fn(inner=lambda b, a, **k: None)(bound, (torch.randn(64, 128),))
    flattened = helion.Config(block_sizes=[32], range_flattens=[True], num_warps=4)
    with caplog.at_level(logging.WARNING, logger="tunegate.helion"):
        assert g(flattened) is None  # no GPU driver here: the check cannot run, so no timing
    assert g.counts.experimental == 1 and g.counts.checked_wrong == 1
    assert "failed its accuracy check run" in caplog.text


def test_helions_own_autotuner_calls_the_gate_before_compiling(tmp_path):
    g = gate(tmp_path, reference=lambda x: torch.softmax(x, dim=1))
    configs = [helion.Config(block_sizes=[16], num_warps=4, range_num_stages=[3]),
               helion.Config(block_sizes=[32], num_warps=4)]
    kernel = helion.kernel(softmax.fn, configs=configs, autotune_precompile=False,
                           autotune_benchmark_subprocess=False, **g.settings())
    x = torch.randn(64, 128)
    bound, compiled = kernel.bind((x,)), []  # the bound kernel Helion's autotuner compiles with
    real = bound.compile_config
    bound.compile_config = lambda config, **kw: (compiled.append(dict(config)),
                                                 real(config, **kw))[1]
    with pytest.raises(Exception) as raised:  # Helion cannot launch on the CPU
        kernel(x)
    assert "tunegate" not in type(raised.value).__module__
    assert g.counts.seen == 2 and g.counts.excluded == 1
    assert compiled and all(c.get("range_num_stages", [0])[0] <= 1 for c in compiled)


def test_helions_settings_copy_keeps_the_one_gate_even_after_it_saw_the_kernel():
    from copy import deepcopy

    from helion.runtime.settings import Settings

    gate = HelionGate(Policy.load(), detect_environment())
    gate._kernel = (logging, lambda: None)  # a bound kernel holds modules: deepcopy fails on them
    settings = Settings(**gate.settings())
    assert deepcopy(settings).autotune_config_filter is gate
    assert settings.to_dict()["autotune_config_filter"] is gate


def test_an_experimental_config_near_cancellation_is_compared_allowing_the_baseline_s_move():
    """Column sums of centred data (every element near cancellation): another order of the
    additions differs from the baseline's beyond the tolerance, but not beyond how far the
    baseline's output moves when its inputs move by float32's rtol; a dropped block does."""
    from tunegate.autotune.check import perturb, perturbation
    from tunegate.helion import _mismatches

    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g) * 100
    x = x - x.mean(0, keepdim=True)
    expected = (x.sum(0), None)
    other_order = (x.view(32, 8, 8).sum(1).flip(0).sum(0), None)
    dropped = (x[:-8].sum(0), None)
    moved_x = x.clone()
    scale = perturb([moved_x], perturbation([moved_x]), seed=0)
    moved = ((moved_x.sum(0), None), scale, perturbation([moved_x]))
    assert _mismatches(other_order, expected, None)
    assert not _mismatches(other_order, expected, None, moved=moved)
    (wrong,) = _mismatches(dropped, expected, None, moved=moved)
    assert wrong.perturbed == 1e-4
