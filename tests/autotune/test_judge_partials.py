"""Partial sums in a zeroed buffer whose layout depends on the config (Liger-Kernel's DyT
backward) are judged by what the caller can rely on, their sums, not slot by slot: right
configs are kept, a config whose partials add up wrong is still rejected (issue 15)."""

from __future__ import annotations

import pytest
import torch

from tests.kernels import partial_sums as mod

pytestmark = pytest.mark.interpreter


def _statuses(kernel) -> dict[int, str]:
    return {t.config["BLOCK_N"]: t.status for t in kernel.last_result.trials}


def test_configs_that_lay_out_their_partials_differently_are_all_right():
    x = torch.randn(7, 40)
    dx, total = mod.sum_of_squares(mod.partial_sums_kernel, x)
    assert torch.allclose(total, (x * x).sum(), rtol=1e-5) and torch.equal(dx, 2 * x)
    assert set(_statuses(mod.partial_sums_kernel).values()) == {"ok"}, \
        mod.partial_sums_kernel.last_result.trials


def test_a_config_whose_partials_add_up_wrong_is_rejected():
    x = torch.randn(7, 40)
    dx, total = mod.sum_of_squares(mod.lossy_partial_sums_kernel, x)
    statuses = _statuses(mod.lossy_partial_sums_kernel)
    assert statuses[64] == "wrong" and statuses[16] == statuses[32] == "ok", statuses
    assert torch.allclose(total, (x * x).sum(), rtol=1e-5)
