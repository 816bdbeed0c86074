"""The drop-in `triton.autotune`: the one-line import change, Triton's key, validation, gating."""

from __future__ import annotations

import logging

import pytest
import torch
import triton
import triton.language as tl

import tunegate
from tunegate.autotune.dropin import Autotuner
from tunegate.autotune.outputs import stored_arguments


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_import_line_change_tunes_checks_and_keys_on_dtype(write_policy, monkeypatch, caplog):
    policy = write_policy("""
        schema = 1
        [[rule]]
        id = "deep-pipelines"
        title = "Deep kernel-wide pipelines are not allowed in this project"
        action = "disable"
        features = ["num_stages"]
        match = "num_stages > 3"
        reason = "A test rule that removes one of the three configs."
        """, name="extra.toml")
    monkeypatch.setenv("TUNEGATE_POLICY", str(policy))
    from tests.kernels import dropin_softmax as mod

    caplog.set_level(logging.DEBUG, logger="tunegate")
    x = torch.randn(5, 20)
    assert torch.allclose(mod.softmax(x), torch.softmax(x, dim=1), atol=1e-6)
    kernel = mod.softmax_kernel
    assert isinstance(kernel, Autotuner) and isinstance(kernel, triton.runtime.Autotuner)
    assert isinstance(kernel.best_config, triton.Config)
    assert kernel.best_config in kernel.configs and kernel.best_config.num_stages == 3
    dropped = [r.getMessage() for r in caplog.records if "dropped config" in r.getMessage()]
    assert len(dropped) == 1 and "deep-pipelines" in dropped[0] and "num_stages: 4" in dropped[0]
    # One INFO line says what the tuning did: kernel, key, winner, what the policy excluded.
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(lines) == 1 and lines[0].startswith("softmax_kernel [")
    assert "1 of 3 excluded by the policy (deep-pipelines)" in lines[0], lines[0]
    assert kernel.last_result is not None and kernel.last_result.best is not None
    # Triton's key: the key arguments' values, then every tensor argument's dtype.
    assert list(kernel.cache) == [(20, "torch.float32", "torch.float32")]
    xh = torch.randn(5, 20, dtype=torch.float16)
    assert torch.allclose(mod.softmax(xh).float(), torch.softmax(xh.float(), dim=1), atol=2e-3)
    assert (20, "torch.float16", "torch.float16") in kernel.cache


def test_a_baseline_the_policy_excludes_gives_way_to_an_allowed_listed_config(
        write_policy, monkeypatch):
    """A library list whose most conservative point is excluded here still tunes, compared
    with the allowed listed config closest to it (the program must not break)."""
    policy = write_policy("""
        schema = 1
        [[rule]]
        id = "no-single-warp"
        title = "One warp is not allowed in this project"
        action = "disable"
        match = "num_warps == 1"
        reason = "A test rule that removes the baseline."
        """, name="extra.toml")
    monkeypatch.setenv("TUNEGATE_POLICY", str(policy))
    from tests.kernels import dropin_scale as mod

    x = torch.randn(100)
    assert torch.equal(mod.double(x), 2 * x)
    result = mod.scale_kernel.last_result
    assert result is not None and result.best is not None and result.best["num_warps"] > 1
    assert any("usual baseline config" in n and "no-single-warp" in n for n in result.notes)
    assert "BLOCK=32" in result.compared_with and "num_warps=2" in result.compared_with


@pytest.mark.parametrize("options, message", [
    ({"configs": [{"BLOCK": 16}], "key": ["n"]}, "list of triton.Config"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": "n"}, "list of argument names"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["size"]}, "not kernel arguments"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "reset_to_zero": ["out"]},
     "reset_to_zero contains names that are not kernel arguments: out"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "prune_configs_by": {"top": 2}},
     "unknown keys"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "pre_hook": 3}, "callable"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "rep": -1}, ">= 0"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "warmup": float("nan")}, ">= 0"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "cache_results": "yes"},
     "True or False"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "budget_configs": 4},
     "unknown options"),
    ({"configs": [triton.Config({"BLOCK": 16})], "key": ["n"], "outputs": ["z_ptr"]},
     "not an argument"),
])
def test_options_are_checked_when_decorating(options, message):
    with pytest.raises(ValueError, match=message) as info:
        tunegate.autotuned(**options)(_copy)
    assert isinstance(info.value, tunegate.TunegateError)


def test_no_warmup_is_an_option_as_in_triton():
    """Triton's benchmark launches at least once whatever `warmup` and `rep` say."""
    tunegate.autotuned(configs=[triton.Config({"BLOCK": 16})], key=["n"], warmup=0, rep=0,
                       cache_results=1)(_copy)


def test_call_site_meta_parameter_conflict_is_triton_s_error():
    """The program's mistake, raised as Triton raises it (a ValueError when tuning, a
    TypeError from the launch once the key is tuned), not as tunegate's."""
    kernel = tunegate.autotuned(configs=[triton.Config({"BLOCK": 16}),
                                         triton.Config({"BLOCK": 32})], key=["n"])(_copy)
    x = torch.randn(8)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK") as info:
        kernel[(1,)](x, torch.empty(8), 8, BLOCK=16)
    assert not isinstance(info.value, tunegate.TunegateError)
    kernel[(1,)](x, torch.empty(8), 8)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'BLOCK'"):
        kernel[(1,)](x, torch.empty(8), 8, BLOCK=16)


def test_single_config_runs_without_tuning_and_call_site_launch_options_merge():
    kernel = tunegate.autotuned(configs=[triton.Config({"BLOCK": 16}, num_warps=2)],
                                key=["n"])(_copy)
    x, y = torch.randn(20), torch.empty(20)
    kernel[(2,)](x, y, 20, num_ctas=1, num_warps=8)  # the config's num_warps wins (Triton
    assert torch.equal(x, y) and kernel.best_config is kernel.configs[0]  # raises TypeError)


def test_outputs_are_the_arguments_only_written():
    from tests.kernels.mylib import layernorm, matmul, reduce

    # Scalars in an address (strides) are candidates too; the decorator keeps tensors only.
    assert stored_arguments(matmul.matmul_kernel) == ("c_ptr", "stride_cm", "stride_cn")
    assert stored_arguments(layernorm.layer_norm_fwd) == ("Y", "Mean", "Rstd")
    assert stored_arguments(reduce.row_sum_kernel) == ()  # atomics add into it: not poisoned
    assert stored_arguments(reduce.scale_in_place_kernel) == ()  # in place: an input


def test_task_takes_triton_configs():
    from tunegate.autotune import Task

    task = Task(name="copy", kernel=_copy, grid=(1,), make_inputs=lambda seed: {},
                outputs=("y_ptr",), configs=[triton.Config({"BLOCK": 16}),
                                             triton.Config({"BLOCK": 32}, num_warps=8)])
    assert [c.values["BLOCK"] for c in task.configs] == [16, 32]
    assert task.configs[1].values["num_warps"] == 8 and task.configs[0].values["maxnreg"] is None


def test_config_pre_hook_and_pruning_are_kept():
    from tests.kernels import dropin_hooks as mod

    x = torch.randn(100)
    out = torch.full((1,), 123.0)  # the configs' pre_hook zeroes it, in workers and here
    mod.split_sum[(2,)](x, out, 100)
    assert torch.allclose(out, x.sum().reshape(1), atol=1e-4)
    assert mod.split_sum.best_config.kwargs["BLOCK"] in (16, 32)
    trials = mod.split_sum.last_result.trials
    assert len(trials) == 2 and all(t.status == "ok" for t in trials)


@pytest.mark.gpu
def test_wrapped_library_matmul_on_the_gpu(monkeypatch):
    from tests.kernels.mylib import matmul

    kernel = tunegate.wrap(matmul.matmul_kernel)
    monkeypatch.setattr(matmul, "matmul_kernel", kernel)
    a = torch.randn(300, 200, device="cuda", dtype=torch.float16)
    b = torch.randn(200, 100, device="cuda", dtype=torch.float16)
    c = matmul.matmul(a, b)
    assert torch.allclose(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
    assert kernel.best_config in kernel.configs
    assert kernel.last_result is not None and kernel.last_result.timing == "gpu"


def test_a_kernel_autotuned_in_another_module_than_its_jit_function_is_tuned():
    import torch

    from tests.kernels.wrapped_elsewhere import copy

    x = torch.randn(512)
    y = torch.empty_like(x)
    copy[lambda meta: (triton.cdiv(512, 4 * meta["BLOCK"]),)](x, y, 512)
    assert torch.equal(x, y) and copy.last_result is not None
    assert {t.status for t in copy.last_result.trials} == {"ok"}


def _nested_copy() -> Autotuner:
    """A kernel made inside a function (no worker can import it); SKIP=1 is wrong."""
    @tunegate.autotuned(configs=[triton.Config({"BLOCK": 16, "SKIP": 0}),
                                 triton.Config({"BLOCK": 32, "SKIP": 1}),
                                 triton.Config({"BLOCK": 64, "SKIP": 0})], key=["n"])
    @triton.jit
    def nested_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SKIP: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = offs < n - SKIP  # SKIP=1 forgets the last element
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=keep), mask=keep)

    return nested_copy


def test_a_kernel_defined_inside_a_function_is_tuned_and_checked_in_this_process(caplog):
    """No worker can import a kernel made inside a function (a test, a factory), but Triton's
    autotuner tunes it: so does the drop-in, in this process, with the same checks."""
    nested_copy = _nested_copy()
    caplog.set_level(logging.INFO, logger="tunegate")
    x = torch.randn(100)
    y = torch.zeros(100)
    nested_copy[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
    assert torch.equal(y, x)
    result = nested_copy.last_result
    assert result is not None and result.best["SKIP"] == 0
    wrong = [t for t in result.trials if t.config["SKIP"] == 1]
    assert wrong and all(t.status == "wrong" for t in wrong)
    assert any("tuned in this process" in r.getMessage() for r in caplog.records)


def test_a_reference_no_worker_can_be_sent_is_used_in_this_process(caplog):
    """A lambda `reference=` does not pickle: the call is tuned here, checked against it."""
    from tests.kernels import dropin_scale as mod

    caplog.set_level(logging.INFO, logger="tunegate")
    x = torch.randn(100)
    assert torch.equal(mod.double_checked(x), 2 * x)
    result = mod.scale_with_lambda.last_result
    assert result is not None and result.compared_with == "the reference function"
    assert any("cannot be sent to a worker process" in r.getMessage() for r in caplog.records)


def test_a_kernel_module_no_worker_can_import_is_tuned_in_this_process(monkeypatch):
    """The worker's import fails (the module needs this process's state): tuned here."""
    import builtins

    monkeypatch.setattr(builtins, "_tunegate_test_parent", True, raising=False)
    from tests.kernels import parent_only as mod

    x = torch.randn(100)
    assert torch.equal(mod.negate(x), -x)
    result = mod.negate_kernel.last_result
    assert result is not None and result.best is not None
    assert any("no worker process could load negate_kernel" in n and "in this process" in n
               for n in result.notes), result.notes


def test_hooks_that_read_state_only_this_process_set_up_are_tuned_in_this_process(caplog):
    """Every baseline raised in the workers (KeyError: the hook's state is set at run time),
    while each config launches here without error: stock Triton runs such a program, so the
    call is tuned here, checked as in a worker."""
    from tests.kernels import program_state as mod

    caplog.set_level(logging.INFO, logger="tunegate")
    mod.STATE["bias"] = 2.5
    x, bias, y = torch.randn(100), torch.empty(100), torch.empty(100)
    mod.add_bias[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, bias, y, 100)
    assert torch.equal(y, x + 2.5)
    result = mod.add_bias.last_result
    assert result is not None and all(t.status == "ok" for t in result.trials)
    assert any("raised in isolated workers, not in this process" in r.getMessage()
               and "KeyError" in r.getMessage() for r in caplog.records)


def test_heuristics_are_checked_with_the_values_the_program_works_out(monkeypatch):
    """A heuristic reads a flag the program set at run time: the workers launch each config
    with the heuristic's values worked out in the program, so the variant the program runs is
    the one checked (the module's default in a worker hid a wrong config)."""
    from tests.kernels import program_state as mod

    monkeypatch.setitem(mod.SETTINGS, "fast", True)
    x, y = torch.randn(300), torch.empty(300)
    mod.exp_of[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, y, 300)
    torch.testing.assert_close(y, x.exp())
    result = mod.exp_of.last_result
    assert result is not None and result.best["BLOCK"] != 128
    (wrong,) = [t for t in result.trials if t.config["BLOCK"] == 128]
    assert wrong.status == "wrong"


def test_a_baseline_that_fails_in_this_process_gives_way_to_the_next(monkeypatch):
    """Tuned here, the in-process worker loads the task (the baseline on draw 0) when the pool
    starts, as a worker process does: a baseline that cannot be built gives way to the next
    config there, instead of failing the first measurement and ending the search unmeasured."""
    import builtins

    monkeypatch.setattr(builtins, "_tunegate_test_parent", True, raising=False)
    from tests.kernels import parent_only as mod

    x = torch.randn(100)
    assert torch.equal(mod.negate_first_unbuildable(x), -x)
    result = mod.negate_first_unbuildable_kernel.last_result
    assert result is not None and result.best is not None and result.best.values["BLOCK"] == 64
    assert any("baseline config could not run here" in n for n in result.notes), result.notes


def test_what_triton_s_autotuner_tells_after_a_tuning_is_told(monkeypatch, capsys):
    """As Triton's own autotuner: `configs_timings` (every listed config, the wrong one at
    infinity) and `bench_time` after a tuning, the TRITON_PRINT_AUTOTUNING lines, and Triton's
    autotuning listener where this Triton has one."""
    told_copy = _nested_copy()  # a key of its own: the store must not have it yet
    autotuning = triton.knobs.autotuning
    heard: list[dict] = []
    if hasattr(autotuning, "listener"):
        monkeypatch.setattr(autotuning, "listener", lambda **told: heard.append(told))
    monkeypatch.setattr(autotuning, "print", True)
    x = torch.randn(96)
    y = torch.zeros(96)
    told_copy[lambda meta: (triton.cdiv(96, meta["BLOCK"]),)](x, y, 96)
    assert torch.equal(y, x)
    timings = told_copy.configs_timings
    assert list(timings) == told_copy.configs
    assert [t[0] == float("inf") for t in timings.values()] == [False, True, False]
    assert all(len(t) == 3 and 0 < t[0] < float("inf") for c, t in timings.items()
               if c.kwargs["SKIP"] == 0)
    assert told_copy.best_config == min(timings, key=timings.get)
    assert 0 < told_copy.bench_time < 600
    printed = capsys.readouterr().out
    assert "Triton autotuning for function nested_copy" in printed and "(96," in printed
    assert [line for line in printed.splitlines() if line.startswith("Autotuning kernel")] == [
        f"Autotuning kernel nested_copy with config {c}" for c in told_copy.configs]
    if hasattr(autotuning, "listener"):
        assert len(heard) == 1 and heard[0]["best_config"] is told_copy.best_config
        assert heard[0]["configs_timings"] is timings and heard[0]["cache_hit"] is False
        assert heard[0]["key"] == (96, "torch.float32", "torch.float32")
        assert heard[0]["fn"] is told_copy.fn
    told_copy[lambda meta: (triton.cdiv(96, meta["BLOCK"]),)](x, y, 96)  # cached: quiet
    assert "Triton autotuning" not in capsys.readouterr().out and len(heard) <= 1


def test_a_key_argument_left_at_its_default_is_not_named_in_the_key():
    """Triton's key leaves out a `key` argument the call does not pass: its text must not
    give the next key argument's name to a dtype."""
    @triton.jit
    def copy_mode(x_ptr, y_ptr, n, MODE: tl.constexpr = 0, BLOCK: tl.constexpr = 16):
        offs = tl.arange(0, BLOCK) + MODE
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    tuner = tunegate.autotuned(configs=[triton.Config({"BLOCK": 16}),
                                        triton.Config({"BLOCK": 32})], key=["n", "MODE"])(copy_mode)
    tuner.nargs = {"x_ptr": torch.empty(4), "y_ptr": torch.empty(4), "n": 4}
    from tunegate.autotune.callsite import key_text

    key = tuner._key({})
    assert key == (4, "torch.float32", "torch.float32")
    assert key_text(tuner._key_names({}), key) == "n=4,torch.float32,torch.float32"
    assert key_text(tuner._key_names({"MODE": 1}), tuner._key({"MODE": 1})) == \
        "n=4,MODE=1,torch.float32,torch.float32"
    assert key_text(["n", "x_ptr"], (4, torch.zeros(3, 100), "torch.float32")) == \
        "n=4,x_ptr=tensor[3, 100],torch.float32"  # a tensor in the key: its shape, not values


def test_optional_arguments_named_in_reset_to_zero_and_restore_value_may_be_none():
    """As Triton's hooks, the drop-in skips a `reset_to_zero` / `restore_value` argument the
    call passes as None; where it is a tensor, it is restored and zeroed as usual."""
    from tests.kernels import dropin_hooks as mod

    x = torch.randn(100)
    out = torch.empty(100)

    def grid(meta):
        return (triton.cdiv(100, meta["BLOCK"]),)

    mod.add_residual[grid](x, None, None, out, 100, HAS_RES=False)
    assert torch.equal(out, x)
    res, total = torch.randn(100), torch.full((1,), 7.0)
    want = x + res
    mod.add_residual[grid](x, res, total, out, 100, HAS_RES=True)
    assert torch.equal(out, want) and torch.equal(res, want)
    assert torch.allclose(total, want.sum().reshape(1), atol=1e-4)  # zeroed after the tuning


def test_a_call_pruned_to_one_config_is_launched_as_it_is_without_a_reset():
    from tests.kernels import dropin_hooks as mod

    x, total = torch.randn(50), torch.full((1,), 5.0)
    mod.add_into[lambda meta: (triton.cdiv(50, meta["BLOCK"]),)](x, total, 50)
    assert torch.allclose(total, 5.0 + x.sum().reshape(1), atol=1e-4)  # as under Triton


def test_a_grid_reads_a_constexpr_left_at_its_default_in_the_signature():
    from tests.kernels import dropin_hooks as mod

    x, y = torch.randn(100), torch.empty(100)
    mod.unrolled_copy[lambda meta: (triton.cdiv(100, meta["BLOCK"] * meta["UNROLL"]),)](x, y, 100)
    assert torch.equal(y, x)


def test_a_grid_gets_the_kernel_s_parameters_as_triton_s_binder_gives_them_and_no_options():
    from tests.kernels import dropin_hooks as mod

    seen: list[set[str]] = []

    def grid(meta):
        seen.append(set(meta))
        return (triton.cdiv(100, meta["BLOCK"] * meta["UNROLL"]),)

    x, y = torch.randn(100), torch.empty(100)
    mod.unrolled_copy[grid](x, y, 100)
    assert torch.equal(y, x)
    assert seen and all(keys == {"x_ptr", "y_ptr", "n", "BLOCK", "UNROLL"} for keys in seen)
