"""Helion configs as users and libraries write them: older and newer fields, per-load lists,
empty or differently sized per-loop lists, unknown fields (kept, logged) and hostile text."""

from __future__ import annotations

import pytest

from tunegate.policy import Policy, detect_environment
from tunegate.space import InvalidConfig
from tunegate.space.helion import helion_space_for, parse_config_text

# Shapes of configs from public threads: vllm-project/vllm#33373 (silu_mul_fp8.json: per-load
# indexing, empty range_warp_specializes), pytorch/helion#2705 (static_ranges sized apart from
# the other per-loop lists), and the AMD / persistent fields of newer Helion releases.
REAL = [
    '{"block_sizes": [1, 256], "num_warps": 4, "num_stages": 2, "indexing": '
    '["tensor_descriptor", "tensor_descriptor", "tensor_descriptor", "pointer"], '
    '"pid_type": "flat", "range_warp_specializes": []}',
    "helion.Config(block_sizes=[16, 8], static_ranges=[True], range_num_stages=[0, 1], "
    "range_unroll_factors=[0, 0], range_flattens=[None, None], num_warps=4, num_stages=1)",
    "helion.Config(block_sizes=[64, 64, 32], loop_orders=[[1, 0]], l2_groupings=[4], "
    "indexing='pointer', pid_type='persistent_interleaved', num_sm_multiplier=2, "
    "range_multi_buffers=[None], range_warp_specializes=[], num_warps=8, num_stages=3)",
    "helion.Config(block_sizes=[128, 128, 64], matrix_instr_nonkdim=16, waves_per_eu=2, "
    "num_warps=8, num_stages=2, indexing=['pointer', 'pointer', 'pointer'])",
    "helion.Config(block_sizes=[32], flatten_loops=[True], reduction_loops=[None], "
    "advanced_controls_file='/tmp/controls.json', num_warps=4, num_stages=1)",
]


@pytest.mark.parametrize("text", REAL)
def test_real_configs_parse_and_get_a_verdict(text):
    values = parse_config_text(text)
    space = helion_space_for(values)
    config = space.complete(values)
    env = detect_environment(probe_device=False).with_overrides(
        {"device": "cuda", "capability": "9.0", "triton": "3.6.0"})
    verdict = Policy.load().explain(config, space, env, None)
    assert verdict.status in ("allowed", "experimental", "excluded")


def test_per_load_tensor_descriptor_indexing_is_the_feature():
    values = parse_config_text(REAL[0])
    space = helion_space_for(values)
    assert "tensor_descriptor" in space.parameters["indexing"].features
    assert space.complete(values).values["range_warp_specializes"] == ()


def test_unknown_field_is_logged_and_is_kept(caplog):
    space = helion_space_for(parse_config_text("block_sizes=[32], future_knob=3"))
    assert "future_knob" in caplog.text
    assert space.complete({"block_sizes": [32], "future_knob": 3}).values["future_knob"] == 3


@pytest.mark.parametrize("text", [
    '{"a": ' + "9" * 5000 + "}",
    '{"a": ' + "[" * 1000 + "]" * 1000 + "}",
    "x=" + "9" * 5000,
    "num_warps=" + "-" * 100_000 + "1",
    "block_sizes=" + "[" * 1000 + "]" * 1000,
    "loop_orders=[[]]",
])
def test_hostile_text_is_a_clean_invalid_config(text):
    with pytest.raises(InvalidConfig):
        values = parse_config_text(text)
        helion_space_for(values).complete(values)
