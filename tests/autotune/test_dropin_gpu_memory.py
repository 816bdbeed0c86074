"""On a GPU, the drop-in's copies of nested and viewed tensors hold: a wrong config writing
through a host descriptor, into a tuple's tensor, past its tensor's end or through a view's
strides is rejected, and the right ones are kept (the same kernels run under the interpreter
in test_dropin_nested.py and test_dropin_data.py)."""

from __future__ import annotations

import pytest
import torch
import triton

from tests.kernels import dropin_data as data
from tests.kernels import dropin_nested as nested

pytestmark = pytest.mark.gpu
M, N = 24, 32


def _statuses(kernel, name):
    return {t.config[name]: t.status for t in kernel.last_result.trials}


def test_a_wrong_config_behind_a_host_descriptor_is_rejected_on_the_gpu():
    x, y = torch.randn(M, N, device="cuda"), torch.zeros(M, N, device="cuda")
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
    nested.scale_desc[grid](nested.TensorDescriptor.from_tensor(x, [8, 8]),
                            nested.TensorDescriptor.from_tensor(y, [8, 8]), M, N)
    assert nested.scale_desc.best_config.kwargs["BUG"] == 0
    assert torch.equal(y, x * 2 + 1)
    trials = nested.scale_desc.last_result.trials
    assert {t.status for t in trials if t.config["BUG"] == 1} == {"wrong"}
    assert {t.status for t in trials if t.config["BUG"] == 0} == {"ok"}
    z = torch.randn(M, N, device="cuda")
    before = z.clone()
    nested.bump_desc[grid](nested.TensorDescriptor.from_tensor(z, [8, 8]), M, N)
    assert torch.equal(z, before + 1)  # tuning launched on copies, not on the caller's z


def test_a_wrong_config_writing_a_tuple_s_tensor_is_rejected_on_the_gpu():
    src = torch.randn(100, device="cuda")
    a, b = torch.empty_like(src), torch.empty_like(src)
    nested.pair_scale[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](src, (a, b), 100)
    assert torch.equal(a, src * 3) and torch.equal(b, src + 1)
    assert _statuses(nested.pair_scale, "BUG") == {0: "ok", 1: "wrong"}


@pytest.mark.parametrize("layout, n", [("own", 100), ("view", 90)])  # a key each: both tune
def test_a_config_storing_past_its_tensor_s_end_is_rejected_on_the_gpu(layout, n):
    """Past the end of a tensor of its own (a missing tail mask), or of a view into the
    caller's larger buffer, whose tail stays as the caller left it."""
    x = torch.randn(n, device="cuda")
    buf = torch.full((164,), -1.0, device="cuda")
    y = torch.empty(n, device="cuda") if layout == "own" else buf[:n]
    data.overrun_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.equal(y, 2 * x) and bool((buf[n:] == -1).all())
    trials = {t.config["BLOCK"]: t for t in data.overrun_kernel.last_result.trials}
    assert not data.overrun_kernel.last_result.reused
    assert trials.pop(64).reason.evidence["outside"] > 0
    assert {t.status for t in trials.values()} == {"ok"}


def test_a_view_s_strides_and_the_buffer_around_it_hold_on_the_gpu():
    wide = torch.full((8, 160), 7.0, device="cuda")
    x = torch.randn(8, 256, device="cuda")[:, 8:40]
    before = x.clone()
    y = wide[:, 16:48]
    data.strided_double_kernel[(8,)](x, y, 32, x.stride(0), y.stride(0))
    assert torch.equal(y, 2 * before) and torch.equal(x, before)
    assert bool((wide[:, :16] == 7).all()) and bool((wide[:, 48:] == 7).all())
    statuses = {(t.config["BLOCK"], t.config["SKIP"]): t.status
                for t in data.strided_double_kernel.last_result.trials}
    assert statuses == {(16, 0): "ok", (32, 1): "wrong", (32, 0): "ok"}, statuses
