"""The drop-in tunes on the caller's own data: right configs kept, wrong ones caught, the
caller's tensors untouched (kernels in tests/kernels/dropin_data.py)."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest
import torch
import triton

from tunegate.autotune.check import compare
from tunegate.kernelfile import jit_function
from tunegate.autotune.inputs import NOISE, CallerData
from tests.kernels import dropin_data as mod


def _statuses(kernel: Any) -> dict[str, str]:
    """Each tried config's status, keyed by its constexpr values."""
    return {str(sorted((k, v) for k, v in t.config.items() if k.isupper())): t.status
            for t in kernel.last_result.trials}


def test_draw_zero_is_the_caller_s_data_and_later_draws_keep_sign_and_scale():
    storage = torch.rand(12) + 0.5
    args = {"x": storage[2:8].view(2, 3), "view": storage[1:5], "t": torch.randn(3, 4).t(),
            "h": -torch.rand(40, dtype=torch.bfloat16) - 1, "i": torch.arange(5), "n": 3,
            "mask": torch.tensor([-65504, 65504, float("-inf"), float("nan"), 0, 1],
                                 dtype=torch.float16)}
    before = {k: v.clone() for k, v in args.items() if isinstance(v, torch.Tensor)}
    make = pickle.loads(pickle.dumps(CallerData(args, seed=7)))
    assert len(make.storages) == 5  # one host copy per storage (x and view share one)
    same = make(7, "cpu")
    for name, want in before.items():
        got = same[name]
        assert torch.equal(got.nan_to_num(), want.nan_to_num()) and got.dtype == want.dtype
        assert (got.stride(), got.storage_offset()) == (args[name].stride(),
                                                       args[name].storage_offset())
    assert same["x"].untyped_storage().data_ptr() == same["view"].untyped_storage().data_ptr()
    other = make(8, "cpu")
    assert torch.equal(other["i"], args["i"]) and other["n"] == 3
    for name in ("x", "t", "h"):
        ratio = other[name].double() / args[name].double()
        assert not torch.equal(other[name], args[name])
        assert bool((ratio - 1).abs().le(NOISE + 1e-2 * (name == "h")).all())  # bf16 rounding
    mask = other["mask"]  # finite values stay finite, the rest are kept
    assert bool(mask[:2].isfinite().all()) and mask[0] < -60000 < 60000 < mask[1]
    assert mask[2] == float("-inf")
    assert bool(mask[3].isnan()) and mask[4] == 0 and mask[5] != 1
    assert torch.equal(make(8, "cpu")["t"], other["t"])  # a seed gives the same draw
    assert all(torch.equal(args[k].nan_to_num(), v.nan_to_num()) for k, v in before.items())


def test_only_a_storage_that_no_read_tensor_views_is_left_undrawn():
    """Outputs poisoned before every launch are never read: their storage is allocated, not
    drawn, on other draws; one that a read tensor views too is drawn."""
    storage = torch.rand(12) + 0.5
    args = {"x": storage[2:8], "y": storage[:4], "out": torch.full((6,), 7.0), "n": 3}
    make = CallerData(args, seed=7)
    assert make._viewed_only_by({"out", "y"}) == {1} and make._viewed_only_by({"y"}) == set()
    own = make(7, "cpu", unread={"out", "y"})
    assert torch.equal(own["out"], args["out"]) and torch.equal(own["x"], args["x"])
    other = make(8, "cpu", unread={"out", "y"})
    ratio = other["x"] / args["x"]
    assert not torch.equal(other["x"], args["x"]) and bool((ratio - 1).abs().le(NOISE).all())
    assert other["y"].untyped_storage().data_ptr() == other["x"].untyped_storage().data_ptr()
    assert other["out"].shape == (6,) and other["out"].dtype == torch.float32


def test_right_configs_are_kept_on_valid_values_that_a_redraw_would_break(caplog):
    caplog.set_level(logging.DEBUG, logger="tunegate")
    plain = jit_function(mod.normalize_kernel)
    x, bad_var = torch.randn(4, 40), -torch.rand(4)  # as a randn redraw of a variance can be
    y0, y1 = torch.empty_like(x), torch.empty_like(x)
    plain[(4,)](x, bad_var, y0, 40, BLOCK=16, GUARD=0)
    plain[(4,)](x, bad_var, y1, 40, BLOCK=16, GUARD=1)
    assert compare("y", y1, y0) is not None  # the premise: guards disagree off the domain

    var = torch.rand(4) + 0.1  # the caller's: a real variance
    y = torch.empty_like(x)
    mod.normalize_kernel[(4,)](x, var, y, 40)
    assert torch.allclose(y, x / torch.sqrt(var + 1e-6)[:, None])
    assert set(_statuses(mod.normalize_kernel).values()) == {"ok"}
    assert len(mod.normalize_kernel.last_result.trials) == 3
    assert not [r for r in caplog.records if "rejected config" in r.getMessage()]


def test_a_config_wrong_only_on_the_caller_s_large_logits_is_rejected():
    plain = jit_function(mod.softmax_kernel)
    small = torch.randn(3, 16)
    stable, unstable = torch.empty_like(small), torch.empty_like(small)
    plain[(3,)](stable, small, 16, BLOCK=16, STABLE=1)
    plain[(3,)](unstable, small, 16, BLOCK=16, STABLE=0)
    assert compare("out", unstable, stable) is None  # the premise: right on randn

    logits = torch.randn(3, 16) * 20 + 100  # the program's own, larger logits
    out = torch.empty_like(logits)
    mod.softmax_kernel[(3,)](out, logits, 16, BLOCK=16)
    assert torch.allclose(out, torch.softmax(logits, dim=1), atol=1e-6)
    assert mod.softmax_kernel.best_config.kwargs["STABLE"] == 1
    statuses = _statuses(mod.softmax_kernel)
    assert statuses["[('STABLE', 0)]"] == "wrong" and statuses["[('STABLE', 1)]"] == "ok"


def test_caller_s_tensors_are_written_once_by_the_call_and_never_by_tuning():
    base = torch.randn(60)
    x = base[3:53]  # a view with a storage offset: copied with its layout
    out, acc = torch.randn(50), torch.randn(50)
    before = {"base": base.clone(), "out": out.clone(), "acc": acc.clone()}
    mod.accumulate_kernel[(4,)](x, out, acc, 50)
    assert len(mod.accumulate_kernel.last_result.trials) == 2
    assert torch.equal(base, before["base"])
    # As Triton after its benchmark (`pre_hook(..., reset_only=True)`): `out` zeroed first.
    assert torch.equal(out, x)
    assert torch.equal(acc, before["acc"] * 2 + x)


def test_an_all_zero_input_of_the_caller_is_tuned_on():
    x, out, acc = torch.zeros(40), torch.randn(40), torch.randn(40)
    mod.accumulate_kernel[(4,)](x, out, acc, 40)
    assert mod.accumulate_kernel.last_result.best is not None


def test_host_copies_are_for_workers_that_cannot_open_the_caller_s_memory():
    x = torch.randn(6)
    make = CallerData({"x": x, "n": 6}, seed=3)
    host = make.on_host()
    assert host.storages[0].device.type == "cpu" and host.template == make.template
    assert torch.equal(host(3, "cpu")["x"], x) and torch.equal(host(4, "cpu")["x"],
                                                              make(4, "cpu")["x"])


@pytest.mark.gpu
def test_a_gpu_call_is_shared_with_the_worker_without_a_host_copy():
    # The worker opens the caller's own GPU memory (CUDA IPC), copies it there and never
    # writes it; nothing of it is copied to host memory on the way.
    import multiprocessing as mp

    storage = torch.randn(1 << 20, device="cuda")
    x = storage[10:1010]
    make = CallerData({"x": x, "n": 1000}, seed=0)
    assert make.storages[0].data_ptr() == storage.data_ptr()  # the caller's, not a copy
    before = storage.clone()
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_sum_in_worker, args=(child,))
    proc.start()
    parent.send(make)
    got = parent.recv()
    proc.join(60)
    assert got == pytest.approx(float(x.double().sum()), rel=1e-6)
    assert torch.equal(storage, before)


def _sum_in_worker(conn: Any) -> None:
    make = conn.recv()
    args = make(0, "cuda")
    args["x"].mul_(2)  # the worker's own copy
    conn.send(float(args["x"].double().sum()) / 2)


def test_an_output_atomics_add_into_is_the_caller_s_and_a_wrong_config_is_rejected():
    x = torch.randn(3, 64)
    for _ in range(2):
        out = torch.zeros(3)
        mod.split_sum_kernel[lambda meta: (3, meta["SPLIT"])](x, out, 64)
        assert torch.allclose(out, x.sum(1), atol=1e-5)
    statuses = {(t.config["SPLIT"], t.config["TWICE"]): t.status
                for t in mod.split_sum_kernel.last_result.trials}
    assert statuses == {(1, 0): "ok", (2, 0): "ok", (2, 1): "wrong"}


def test_an_argument_updated_in_place_without_restore_value_is_restored_for_each_launch():
    x = torch.randn(100)
    x0 = x.clone()
    for i in range(2):
        mod.increment_kernel[lambda meta: (-(-100 // meta["BLOCK"]),)](x, 100)
        assert torch.allclose(x, x0 + (i + 1))
    assert {t.status for t in mod.increment_kernel.last_result.trials} == {"ok"}


def test_reset_to_zero_outputs_are_zeroed_before_the_tuning_call_s_launch_as_triton_does():
    x, out = torch.randn(3, 64), torch.full((3,), 123.0)
    mod.reset_sum_kernel[lambda meta: (3, meta["SPLIT"])](x, out, 64)
    assert torch.allclose(out, x.sum(1), atol=1e-5)


@pytest.mark.parametrize("kernel", ["squares_named_kernel", "squares_kernel"])
def test_an_output_a_helper_adds_into_is_restored_and_a_wrong_config_is_rejected(kernel):
    tuned = getattr(mod, kernel)
    x = torch.randn(100)
    y0 = torch.randn(100)
    y = y0.clone()
    tuned[lambda meta: (-(-100 // meta["BLOCK"]),)](x, y, 100)
    assert torch.allclose(y, y0 + x * x)
    statuses = {(t.config["BLOCK"], t.config["TWICE"]): t.status
                for t in tuned.last_result.trials}
    assert statuses == {(32, 0): "ok", (64, 0): "ok", (64, 1): "wrong"}


def test_configs_that_agree_on_leaving_a_tail_unwritten_do_not_outvote_the_baseline():
    x, y = torch.randn(100), torch.zeros(100)
    mod.tail_kernel[lambda meta: (-(-100 // meta["BLOCK"]),)](x, y, 100)
    assert torch.allclose(y, 3 * x)
    assert sum(t.status == "wrong" for t in mod.tail_kernel.last_result.trials) == 2


def test_threads_calling_one_kernel_with_two_keys_are_tuned_each_on_its_own_call():
    import threading

    calls = {n: (torch.randn(n), torch.zeros(n)) for n in (100, 130)}
    errors = []

    def call(n):
        try:
            mod.tail_kernel[lambda meta: (-(-n // meta["BLOCK"]),)](*calls[n], n)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(n,)) for n in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for n, (x, y) in calls.items():
        assert torch.allclose(y, 3 * x), n


def test_a_workspace_named_scratch_is_not_compared_and_unnamed_it_is():
    for kernel, kept in ((mod.workspace_scratch_kernel, {16, 32, 64}),
                         (mod.workspace_kernel, {16})):  # the others leave ws slots unwritten
        x, out = torch.randn(64), torch.zeros(64)
        kernel[lambda meta: (-(-64 // meta["BLOCK"]),)](x, torch.zeros(4), out, 64)
        assert torch.allclose(out, 2 * x)
        assert {t.config["BLOCK"] for t in kernel.last_result.trials if t.status == "ok"} == kept


def test_a_row_sum_whose_first_block_is_too_small_is_refused_and_one_that_covers_is_kept():
    from tunegate.autotune import TuneError

    x = torch.randn(3, 40)
    with pytest.raises(TuneError, match="baseline config looks wrong: 2 configs disagree"):
        mod.row_sum_small_first_kernel[(3,)](x, torch.zeros(3), 40)
    out = torch.zeros(3)
    mod.row_sum_covering_first_kernel[(3,)](x, out, 40)
    assert torch.allclose(out, x.sum(1), atol=1e-5)
    statuses = {t.config["BLOCK"]: t.status
                for t in mod.row_sum_covering_first_kernel.last_result.trials}
    assert statuses == {64: "ok", 128: "ok", 16: "wrong"}


@pytest.mark.parametrize("layout", ["sliced input", "sliced output", "one tensor both",
                                    "broadcast input"])
def test_views_keep_the_caller_s_strides_gaps_and_aliasing_in_every_copy(layout):
    """A kernel reaches a slice of a wider buffer through the caller's strides: each copy a
    worker makes keeps them (a dense copy made it read and write outside it: heap corruption
    under the interpreter), one tensor passed twice stays one tensor, and a broadcast row
    (stride 0, which torch refuses to copy into) is restored once."""
    wide = torch.randn(8, 256)
    x = {"sliced input": wide[:, 8:40], "broadcast input": torch.randn(32).expand(8, 32)}.get(
        layout, torch.randn(8, 32))
    before = x.clone()
    buffer = torch.full((8, 160), 7.0)
    y = {"one tensor both": x, "sliced output": buffer[:, 16:48]}.get(layout, torch.empty(8, 32))
    mod.strided_double_kernel[(8,)](x, y, 32, x.stride(0), y.stride(0))
    assert torch.equal(y, 2 * before)
    if layout == "sliced output":  # the rest of the buffer untouched
        assert torch.equal(buffer[:, :16], torch.full((8, 16), 7.0))
        assert torch.equal(buffer[:, 48:], torch.full((8, 112), 7.0))
    statuses = {(t.config["BLOCK"], t.config["SKIP"]): t.status
                for t in mod.strided_double_kernel.last_result.trials}
    assert statuses == {(16, 0): "ok", (32, 1): "wrong", (32, 0): "ok"}, statuses


def _by_block(tuned):
    return {tuple(t.config.values.get(k) for k in ("BLOCK", "UNMASKED", "num_warps")): t.status
            for t in tuned.last_result.trials}


def test_a_block_that_leaves_the_tail_unwritten_is_never_returned():
    """The grid covers the output only with the largest block. Listed first, a smaller block is
    the baseline, and wider writers agree with it wherever it writes: outnumbered by them, it
    is replaced by the widest and the search runs again; listed after a wider one, it is
    rejected; one block against one is not decided, and the run stops (no wrong answer)."""
    from tunegate.autotune import TuneError

    x = torch.arange(256.0)
    for name in ("narrowest_first_kernel", "wide_first_kernel"):
        y = torch.zeros(256)
        getattr(mod, name)[(2,)](x, y, 256)
        assert torch.equal(y, 2 * x), name
    statuses = _by_block(mod.narrowest_first_kernel)
    assert statuses == {(128, None, 4): "ok", (64, None, 4): "wrong", (32, None, 4): "wrong",
                        (32, None, 2): "wrong"}, statuses
    assert any("the search ran again, compared with BLOCK=128" in n
               for n in mod.narrowest_first_kernel.last_result.notes)
    with pytest.raises(TuneError, match="1 config value.*against 1 that write what it writes"):
        mod.narrow_first_kernel[(2,)](x, torch.zeros(256), 256)


def test_blocks_writing_different_shares_of_a_padded_output_leave_the_caller_right():
    """Every block is right on the n elements the caller reads; the narrowest, outnumbered,
    gives way to a wider one (a right config lost, never a wrong one returned)."""
    x, y = torch.randn(256), torch.empty(256)
    mod.padded_kernel[lambda meta: (triton.cdiv(200, meta["BLOCK"]),)](x, y, 200)
    assert torch.equal(y[:200], 2 * x[:200])
    statuses = _by_block(mod.padded_kernel)
    assert statuses[(64, None, 4)] == statuses[(128, None, 4)] == "ok", statuses


def test_a_config_storing_past_the_end_is_rejected_when_the_others_outnumber_it():
    x, y = torch.randn(256), torch.full((256,), -1.0)
    mod.spilling_kernel[lambda meta: (triton.cdiv(200, meta["BLOCK"]),)](x, y, 200)
    assert torch.equal(y[:200], 2 * x[:200]) and bool((y[200:] == -1).all())
    statuses = _by_block(mod.spilling_kernel)
    assert statuses.pop((64, 1, 4)) == "wrong" and set(statuses.values()) == {"ok"}, statuses


def test_an_output_the_baseline_never_writes_goes_to_the_more_configs_that_write_it():
    """The one-block configs store the row maxima; the multi-block baseline leaves `stats`
    wholly unwritten and is outnumbered: the widest writer replaces it."""
    x, y, stats = torch.randn(3, 40), torch.zeros(3, 40), torch.full((3,), 123.0)
    mod.stats_kernel[(3,)](x, y, stats, 40)
    top = x.max(dim=1).values
    assert torch.equal(stats, top) and torch.allclose(y, x - top[:, None])
    assert _by_block(mod.stats_kernel) == {(64, None, 4): "ok", (128, None, 4): "ok",
                                           (16, None, 4): "wrong"}
    assert any("output stats_ptr, which it writes none of" in n
               for n in mod.stats_kernel.last_result.notes)


def test_an_output_the_call_opts_out_of_stays_the_caller_s_when_one_config_writes_it():
    """The call asks for no sum (SAVE=False); the one config that writes it anyway is
    outnumbered by the two that leave it alone, and rejected."""
    x, y, total = torch.randn(60), torch.empty(60), torch.full((1,), 7.0)
    mod.optional_output_kernel[(1,)](x, y, total, 60, SAVE=False)
    assert torch.equal(y, 2 * x) and total.item() == 7.0
    assert _by_block(mod.optional_output_kernel) == {(64, None, 4): "ok", (256, None, 4): "ok",
                                                     (128, None, 4): "wrong"}


@pytest.mark.parametrize("layout, n", [("own", 100), ("view", 90)])  # a key each: both tune
def test_a_config_storing_past_the_end_of_its_tensor_is_rejected(layout, n):
    """Past the end of a tensor of its own (a missing tail mask), or of a view into the
    caller's larger buffer, whose tail stays as the caller left it."""
    x = torch.randn(n)
    buf = torch.full((164,), -1.0)
    y = torch.empty(n) if layout == "own" else buf[:n]
    mod.overrun_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.equal(y, 2 * x) and bool((buf[n:] == -1).all())
    trials = {t.config["BLOCK"]: t for t in mod.overrun_kernel.last_result.trials}
    assert not mod.overrun_kernel.last_result.reused
    assert trials.pop(64).reason.evidence["outside"] > 0
    assert {t.status for t in trials.values()} == {"ok"}


def test_the_program_s_own_errors_while_tuning_reach_it_as_they_are():
    """As under triton.autotune: its hook's exception, its grid's (the config named in a
    note), its kernel's compile error, not a tuning error of tunegate's."""
    from tunegate import TunegateError

    def behind(error: BaseException) -> list[BaseException]:  # what a traceback shows too
        found = []
        while error is not None and error not in found:
            found.append(error)
            error = error.__cause__ or error.__context__
        return found

    x, y = torch.randn(40), torch.empty(40)
    with pytest.raises(LookupError, match="the program's own hook") as info:
        mod.hook_raising_kernel[(3,)](x, y, 40, BROKEN=False)
    assert not any(isinstance(e, TunegateError) for e in behind(info.value))

    def grid(meta):
        raise ZeroDivisionError("the program's own grid")

    with pytest.raises(ZeroDivisionError, match="the program's own grid") as info:
        mod.maybe_broken_kernel[grid](x, y, 40, BROKEN=False)
    assert any("launch grid of" in note for note in info.value.__notes__)
    with pytest.raises(Exception) as info:
        mod.maybe_broken_kernel[(3,)](x, y, 40, BROKEN=True)
    assert not any(isinstance(e, TunegateError) for e in behind(info.value)), info.value
    assert "shape" in str(info.value)
    from tunegate.autotune.dropin_report import tunings

    assert tunings()[-1].error.startswith("cannot check _copy_or_fail")  # in its table
    mod.maybe_broken_kernel[(3,)](x, y, 40, BROKEN=False)
    assert torch.equal(x, y)
