"""What a timed launch does besides the kernel: what triton.autotune does (restore_value,
reset_to_zero) and no more, so that timing measures the kernel, not tunegate's copies."""

import pytest
import torch

from tests.kernels.dropin_data import accumulate_kernel
from tunegate.autotune import Task
from tunegate.autotune.runner import Runner
from tunegate.space import Choice, Config, Parameter, Space

pytestmark = pytest.mark.interpreter


def _inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(40, generator=g).to(device),
            "out_ptr": torch.empty(40, device=device),
            "acc_ptr": torch.randn(40, generator=g).to(device), "n": 40}


TASK = Task(name="accumulate", kernel=accumulate_kernel.fn,
            space=Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(16,), default=16))}),
            grid=lambda meta: (triton_cdiv(40, meta["BLOCK"]),), make_inputs=_inputs,
            outputs=("out_ptr", "acc_ptr"), restore_value=("acc_ptr",),
            reset_to_zero=("out_ptr",),
            reference=lambda x_ptr, out_ptr, acc_ptr, n: {"out_ptr": x_ptr,
                                                          "acc_ptr": acc_ptr * 2 + x_ptr})


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_a_timed_launch_restores_what_triton_restores_and_copies_no_input(monkeypatch):
    runner = Runner(TASK, seed=0, baseline=None)
    pristine = runner.draw(0)[0]
    sources: list[int] = []
    copy = torch.Tensor.copy_

    def counted(self, src, *args, **kwargs):
        sources.append(src.data_ptr())
        return copy(self, src, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "copy_", counted)
    result = runner.time(Config(values={"BLOCK": 16}))
    assert result.mismatch is None  # each launch zeroed `out` and restored `acc`
    assert sources.count(pristine["x_ptr"].data_ptr()) == 1  # read only: copied once, for all
    assert sources.count(pristine["acc_ptr"].data_ptr()) >= 3  # restored before each launch
