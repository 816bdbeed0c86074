"""The drop-in gates each call with its problem facts: dtypes, and descriptor blocks as each
config's pre_hook sets them (Liger's SwiGLU pattern), worked out without touching the caller's."""

from __future__ import annotations

import logging

import pytest
import torch
import triton

from tests.kernels import gpu_faults
from tests.kernels.loop_kernels import host_descriptor
from tunegate.autotune.dropin import _called, _Configs, autotune
from tunegate.policy import Environment, Policy, builtin_policy_path

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
    listed = _Configs(configs, {})
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
    listed = _Configs(configs, {})
    verdict = Policy.from_files(builtin_policy_path()).explain(
        listed.points[0], listed.space, H200, _called(tuner, listed, {}))
    assert verdict.excluded
    assert "in_desc's block or dtype" in verdict.reasons()[0].line()


@pytest.mark.gpu
def test_dropin_keeps_the_128_byte_descriptor_tile_at_three_stages(caplog):
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the misaligned-address rule is for sm_90 with triton < 3.9")
    from tests.kernels.dropin_descriptor import td_copy as kernel

    caplog.set_level(logging.WARNING, logger="tunegate")
    args = gpu_faults.td_inputs(0, "cuda")
    kernel[(args["n"] // 1024,)](**args)
    assert torch.equal(args["out_ptr"], args["in_ptr"])
    dropped = [r.getMessage() for r in caplog.records if "dropped config" in r.getMessage()]
    assert len(dropped) == 1 and "XBLOCK: 4" in dropped[0] and "NUM_STAGES: 3" in dropped[0]
    ok = {(t.config["XBLOCK"], t.config["NUM_STAGES"]) for t in kernel.last_result.trials
          if t.status == "ok"}
    assert (32, 3) in ok
