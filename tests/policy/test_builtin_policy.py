"""Every rule of the shipped policies.toml, shown firing and not firing."""

import pytest

from tunegate.policy import Environment, KernelTraits, Policy, builtin_policy_path, load_file
from tunegate.space import Choice, Parameter, PowerOfTwo, Space, helion_space

H200 = dict(triton="3.6.0", torch="2.11.0", python="3.12.3", cuda="13.0", device="cuda",
            capability="9.0")
B200 = {**H200, "capability": "10.0"}
MI300 = {**H200, "device": "hip", "capability": None, "cuda": None}
HELION = helion_space(loops=1)
TRITON = Space(parameters={
    "BLOCK_D": Parameter(domain=PowerOfTwo(low=16, high=64)),
    "SPLIT_K": Parameter(domain=PowerOfTwo(low=1, high=4), features=["split_k"]),
    "num_warps": Parameter(domain=PowerOfTwo(low=1, high=8, default=4)),
    "num_stages": Parameter(domain=Choice(choices=(1, 2, 3), default=1), features=["num_stages"]),
})


def h(**values):
    return HELION.default().replace(**values)


def t(**values):
    return TRITON.default().replace(**values)


# rule id -> (config, env, traits) where it fires, and where it does not
CASES = {
    "pipelined-store-load": (
        (h(range_num_stages=[2]), H200, {"store_then_load"}),
        (h(range_num_stages=[1]), H200, {"store_then_load"})),
    "tensor-descriptor-deep-pipeline-misaligned": (
        (h(indexing="tensor_descriptor", range_num_stages=[3]), H200, set()),
        (h(indexing="tensor_descriptor", range_num_stages=[3]), {**H200, "triton": "3.9.0"},
         set())),
    "helion-tensor-descriptor-pipelining": (
        (h(indexing="tensor_descriptor", range_num_stages=[2]), H200, set()),
        (h(indexing="tensor_descriptor", range_num_stages=[1]), H200, set())),
    "flatten-empty-inner-range": (
        (h(range_flattens=[True]), H200, {"nested_dynamic_range"}),
        (h(range_flattens=[True]), H200, set())),
    "dot-trans-with-sum-two-stages": (
        (h(num_stages=2), H200, {"dot_trans_and_sum"}),
        (h(num_stages=3), H200, {"dot_trans_and_sum"})),
    "dot-trans-with-sum-two-stages-unconfirmed": (
        (h(num_stages=2), H200, {"dot_trans_and_sum"}),
        (h(num_stages=2), H200, set())),
    "dot-trans-with-sum-deep-pipeline": (
        (h(num_stages=4), H200, {"dot_trans_and_sum"}),
        (h(num_stages=1), H200, {"dot_trans_and_sum"})),
    "warp-specialize-before-blackwell": (
        (h(range_warp_specializes=[True]), H200, set()),
        (h(range_warp_specializes=[True]), B200, set())),
    "warp-specialize-few-warps": (
        (h(range_warp_specializes=[True], num_warps=2), B200, set()),
        (h(range_warp_specializes=[True], num_warps=4), B200, set())),
    "warp-specialize-not-on-rocm": (
        (h(range_warp_specializes=[True]), MI300, set()),
        (h(range_warp_specializes=[True]), B200, set())),
    "multi-dot-block-d-32-illegal-address": (
        (t(BLOCK_D=32, num_warps=4), {**H200, "triton": "3.7.1"}, {"multi_dot"}),
        (t(BLOCK_D=32, num_warps=4), {**H200, "triton": "3.5.1"}, {"multi_dot"})),
    "chained-dot-accumulator-blackwell": (
        (t(), {**B200, "triton": "3.8.0"}, {"chained_dot_acc"}),
        (t(), {**H200, "triton": "3.8.0"}, {"chained_dot_acc"})),
    "amd-fp32-matmul-pingpong": (
        (t(num_warps=8, num_stages=2), MI300, {"dot"}),
        (t(num_warps=4, num_stages=2), MI300, {"dot"})),
    "block-ptr-removed": (
        (h(indexing="block_ptr"), {**H200, "triton": "3.9.0"}, set()),
        (h(indexing="block_ptr"), {**H200, "triton": "3.8.0"}, set())),
    "tensor-descriptor-needs-sm90": (
        (h(indexing="tensor_descriptor"), {**H200, "capability": "8.0"}, set()),
        (h(indexing="tensor_descriptor"), H200, set())),
    "tensor-descriptor-not-on-rocm": (
        (h(indexing="tensor_descriptor"), MI300, set()),
        (h(indexing="pointer"), MI300, set())),
    "experimental-range-flatten": (
        (h(range_flattens=[True]), H200, set()),
        (h(range_flattens=[False]), H200, set())),
    "experimental-range-multi-buffer": (
        (h(range_multi_buffers=[False]), H200, set()),
        (h(range_multi_buffers=[None]), H200, set())),
    "split-k-atomics": (
        (t(SPLIT_K=2), H200, {"atomics"}),
        (t(SPLIT_K=1), H200, {"atomics"})),
}


@pytest.fixture(scope="module")
def policy():
    return Policy.from_files(builtin_policy_path())


def fired(policy, config, env, traits):
    space = HELION if "block_sizes" in config.values else TRITON
    verdict = policy.explain(config, space, Environment(**env),
                             KernelTraits("k", {tr: "line 1" for tr in traits}))
    return {m.rule for m in verdict.matched}, verdict


def test_every_shipped_rule_has_a_case():
    assert {r.id for r in load_file(builtin_policy_path())} == set(CASES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires_and_does_not_fire(policy, rule):
    (yes, yes_env, yes_traits), (no, no_env, no_traits) = CASES[rule]
    hits, verdict = fired(policy, yes, yes_env, yes_traits)
    assert rule in hits
    expected = "excluded" if policy.rule(rule).action == "disable" else "experimental"
    assert verdict.status in ("excluded", expected)
    assert rule not in fired(policy, no, no_env, no_traits)[0]


def test_every_shipped_rule_has_a_reason_and_title(policy):
    for rule in policy.rules:
        assert rule.reason and rule.title and rule.source.line > 0
