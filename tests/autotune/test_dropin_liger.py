"""Optional: tune a Liger-Kernel kernel (a library's own `triton.autotune`) through tunegate.

Liger's kernels use libdevice or tensor descriptors, which Triton 3.9's CPU interpreter cannot
run ("'NoneType' object has no attribute 'dtype'" for libdevice tanh), so this needs a GPU.
"""

from __future__ import annotations

import pytest
import torch

import tunegate


@pytest.mark.gpu
def test_liger_dyt_forward_is_tuned_and_right(monkeypatch):
    dyt = pytest.importorskip("liger_kernel.ops.dyt")
    original = dyt._dyt_fwd_kernel
    kernel = tunegate.wrap(original, budget=3)  # 18 configs: measure 3 under the interpreter
    monkeypatch.setattr(dyt, "_dyt_fwd_kernel", kernel)
    x = torch.randn(4, 96, device="cuda")
    alpha = torch.tensor([0.7], device="cuda")
    gamma, beta = torch.randn(96, device="cuda"), torch.randn(96, device="cuda")
    y = dyt.liger_dyt_fwd(x, alpha, gamma, beta)
    assert torch.allclose(y, torch.tanh(alpha * x) * gamma + beta, atol=1e-5)
    assert kernel.best_config in original.configs
    assert kernel.last_result is not None and kernel.last_result.best is not None
