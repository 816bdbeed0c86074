"""The drop-in gates each call with its problem facts: dtypes, and descriptor blocks as each
config's pre_hook sets them (Liger's SwiGLU pattern), worked out without touching the caller's."""

from __future__ import annotations

import logging

import pytest
import torch
import triton

from tests.kernels import gpu_faults
from tests.kernels.loop_kernels import host_descriptor
from tunegate.autotune.callsite import Configs
from tunegate.autotune.dropin import _called, autotune
from tunegate.kernelfile import jit_function
from tunegate.policy import Environment, Policy, builtin_policy_path, detect_traits

H200 = Environment(triton="3.6.0", torch="2.11.0", python="3.12.3", cuda="13.0", device="cuda",
                   capability="9.0")


def _hook(nargs):
    nargs["in_desc"].block_shape = [nargs["BLOCK_M"], 32]
    nargs["out_desc"].block_shape = [nargs["BLOCK_M"], 32]


def test_host_descriptor_blocks_come_from_each_configs_pre_hook():
    from triton.tools.tensor_descriptor import TensorDescriptor

    configs = [triton.Config({"BLOCK_M": m, "STAGES": 3}, pre_hook=_hook) for m in (1, 64)]
    tuner = autotune(configs, key=["M"])(host_descriptor)
    x = torch.zeros(256, 32, dtype=torch.float16)
    dummy = [1, 1]
    tuner.nargs = {"in_desc": TensorDescriptor.from_tensor(x, dummy),
                   "out_desc": TensorDescriptor.from_tensor(x, dummy), "M": 256}
    listed = Configs(configs, {})
    region = Policy.from_files(builtin_policy_path()).gate(listed.space, H200,
                                                         _called(tuner, listed, {}))
    assert [c.values["BLOCK_M"] for c in region.configs()] == [64]  # 1 x 32 fp16 = 64 bytes
    assert list(tuner.nargs["in_desc"].block_shape) == dummy  # the caller's are untouched


def test_a_failing_pre_hook_leaves_the_block_unknown_and_says_so():
    from triton.tools.tensor_descriptor import TensorDescriptor

    def broken(nargs):
        raise KeyError("BLOCK_Q")

    configs = [triton.Config({"BLOCK_M": 64, "STAGES": 3}, pre_hook=broken)]
    tuner = autotune(configs, key=["M"])(host_descriptor)
    x = torch.zeros(256, 32)
    tuner.nargs = {"in_desc": TensorDescriptor.from_tensor(x, [64, 32]),
                   "out_desc": TensorDescriptor.from_tensor(x, [64, 32]), "M": 256}
    listed = Configs(configs, {})
    verdict = Policy.from_files(builtin_policy_path()).explain(
        listed.points[0], listed.space, H200, _called(tuner, listed, {}))
    assert verdict.excluded
    assert "in_desc's block or dtype" in verdict.reasons()[0].line()


@pytest.mark.gpu
def test_dropin_keeps_the_128_byte_descriptor_tile_at_three_stages(caplog):
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the misaligned-address rule is for sm_90 with triton < 3.9")
    from tests.kernels.dropin_descriptor import td_copy as kernel

    caplog.set_level(logging.DEBUG, logger="tunegate")  # each dropped config: a DEBUG line
    args = gpu_faults.td_inputs(0, "cuda")
    kernel[(args["n"] // 1024,)](**args)
    assert torch.equal(args["out_ptr"], args["in_ptr"])
    dropped = [r.getMessage() for r in caplog.records if "dropped config" in r.getMessage()]
    assert len(dropped) == 1 and "XBLOCK: 4" in dropped[0] and "NUM_STAGES: 3" in dropped[0]
    ok = {(t.config["XBLOCK"], t.config["NUM_STAGES"]) for t in kernel.last_result.trials
          if t.status == "ok"}
    assert (32, 3) in ok


def _swiglu_call(device):
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(1, 256, 512, device=device, dtype=torch.bfloat16)
    wg = torch.randn(1024, 512, device=device, dtype=torch.bfloat16)
    out = torch.empty(1, 256, 1024, device=device, dtype=torch.bfloat16)
    d3, d2 = [1, 1, 1], [1, 1]  # Liger's placeholders, replaced by each config's pre_hook
    return {"desc_input": TensorDescriptor.from_tensor(x, d3),
            "desc_Wg": TensorDescriptor.from_tensor(wg, d2),
            "desc_Wu": TensorDescriptor.from_tensor(wg, d2),
            "desc_A": TensorDescriptor.from_tensor(out, d3),
            "desc_G": TensorDescriptor.from_tensor(out, d3),
            "desc_U": TensorDescriptor.from_tensor(out, d3),
            "S": 256, "dim": 512, "hidden_dim": 1024, "bucket_M": 256}


def test_liger_swiglu_configs_are_all_kept_once_the_call_is_known():
    mlp = pytest.importorskip("liger_kernel.ops.mlp")
    import tunegate

    kernel = tunegate.wrap(mlp._swiglu_kernel_forward)
    kernel.nargs = _swiglu_call("cpu")
    listed = Configs(kernel.configs, {})
    policy = Policy.from_files(builtin_policy_path())
    called = policy.gate(listed.space, H200, _called(kernel, listed, {"gate_multiplier": 1.0}))
    assert all(called.contains(p) for p in listed.points)  # tiles of 8 KiB and more
    uncalled = policy.gate(listed.space, H200, detect_traits(jit_function(kernel)))
    assert sum(not uncalled.contains(p) for p in listed.points) == 16  # the 3-stage half


@pytest.mark.gpu
def test_liger_swiglu_on_the_h200_drops_no_config_and_is_right(monkeypatch, caplog):
    mlp = pytest.importorskip("liger_kernel.ops.mlp")
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the descriptor rule is for sm_90")
    import tunegate

    x = torch.randn(1, 256, 512, device="cuda", dtype=torch.bfloat16)
    wg = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16) / 16
    wu = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16) / 16
    expected, _ = mlp.gemm_swiglu(x, wg, wu, 1.0, store_preact=True)  # Liger's own autotune
    kernel = tunegate.wrap(mlp._swiglu_kernel_forward, budget=4)
    monkeypatch.setattr(mlp, "_swiglu_kernel_forward", kernel)
    caplog.set_level(logging.DEBUG, logger="tunegate")  # each dropped config: a DEBUG line
    got, _ = mlp.gemm_swiglu(x, wg, wu, 1.0, store_preact=True)
    assert torch.allclose(got.float(), expected.float(), atol=2e-2, rtol=2e-2)
    assert not [r for r in caplog.records if "dropped config" in r.getMessage()]
    assert kernel.last_result is not None and kernel.last_result.best is not None
