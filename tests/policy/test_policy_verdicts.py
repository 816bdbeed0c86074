"""Verdicts and regions: version gates, `until`, unknown facts, and sampling a gated region."""

import os
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tunegate.policy import Environment, Policy, Rule
from tunegate.space import Boolean, Choice, IntRange, Parameter, PerLoop, Space

GATED = '''
schema = 1

[[rule]]
id = "old-flatten"
title = "flatten is broken before 3.7"
action = "disable"
bugs = ["triton-lang/triton#11656"]
features = ["range_flatten"]
reason = "r"

[rule.when]
triton = "<3.7"

[[rule]]
id = "stages-until-fixed"
title = "deep pipelining broken until 3.9"
action = "disable"
features = ["range_num_stages"]
match = "range_num_stages >= 3"
reason = "r"

[rule.until]
triton = ">=3.9"
'''

SPACE = Space(parameters={
    "stages": Parameter(domain=PerLoop(element=IntRange(low=1, high=4), loops=2),
                        features=["range_num_stages"]),
    "flat": Parameter(domain=Boolean(), features=["range_flatten"]),
    "num_warps": Parameter(domain=Choice(choices=(1, 2, 4, 8), default=4)),
})


def verdict(policy, triton, **values):
    config = SPACE.default().replace(**values)
    return policy.explain(config, SPACE, Environment(triton=triton, device="cuda"))


def test_version_gate_excludes_before_and_at_prereleases(write_policy):
    policy = Policy.from_files(write_policy(GATED))
    assert verdict(policy, "3.6.0", flat=True).status == "excluded"
    assert verdict(policy, "3.7.0rc1", flat=True).status == "excluded"
    allowed = verdict(policy, "3.7.0", flat=True)
    assert allowed.status == "allowed"
    assert any(i.rule == "old-flatten" and "does not satisfy <3.7" in i.why
               for i in allowed.inactive)


def test_until_lifts_a_rule(write_policy):
    policy = Policy.from_files(write_policy(GATED))
    before = verdict(policy, "3.8.0", stages=[1, 3])
    assert before.status == "excluded" and before.matched[0].loops == {"range_num_stages": [1]}
    after = verdict(policy, "3.9.0", stages=[1, 3])
    assert after.status == "allowed"
    assert any("lifted, until met" in i.why for i in after.inactive)


def test_unknown_facts_make_a_rule_possible_not_applied(write_policy):
    policy = Policy.from_files(write_policy(GATED))
    v = policy.explain(SPACE.default().replace(flat=True), SPACE, Environment())
    assert v.status == "allowed"
    assert [p.rule for p in v.possible] == ["old-flatten"] and v.possible[0].unknown == ["triton"]
    region = policy.gate(SPACE, Environment())  # gating fails closed on unknown facts
    assert region.allowed["flat"] == [False] and region.assumed == ["old-flatten"]


def test_removal_counts_are_exact_for_small_spaces(write_policy):
    policy = Policy.from_files(write_policy(GATED))
    region = policy.gate(SPACE, Environment(triton="3.6.0", device="cuda"))
    removed = {r.rule: r.count for r in region.removals()}
    assert removed == {"old-flatten": 64, "stages-until-fixed": (16 - 4) * 2 * 4}
    configs = list(region.configs())
    assert len(configs) == 2 * 2 * 1 * 4  # stages in {1, 2} per loop, flat off, any warps
    assert all(region.contains(c) for c in configs)


# -- property: sampling a gated region never yields an excluded config -------------------
NAMES = ["stages", "flat", "num_warps"]
predicates = st.sampled_from([
    None, "range_num_stages > 2", "range_num_stages == 1 or num_warps == 8",
    "num_warps < 4 and range_num_stages >= 2", "not range_flatten == true",
    "num_warps in [2, 8]", "range_flatten == true and num_warps > 1",
    "range_num_stages > 1 and range_num_stages < 3",
])
features = st.lists(st.sampled_from(["range_num_stages", "range_flatten"]), max_size=2,
                    unique=True)


@st.composite
def rules(draw):
    out = []
    for i in range(draw(st.integers(1, 4))):
        feats, match = draw(features), draw(predicates)
        if not feats and match is None:
            match = "num_warps == 1"
        out.append(Rule(id=f"r{i}", title="t", reason="r", features=feats, match=match,
                        action=draw(st.sampled_from(["disable", "experimental"]))))
    return out


@settings(max_examples=60, deadline=None)
@given(rules(), st.integers(0, 10_000))
def test_sampling_a_gated_region_never_yields_an_excluded_config(rule_list, seed):
    policy = Policy(rule_list)
    env = Environment(triton="3.6.0", device="cuda")
    region = policy.gate(SPACE, env)
    allowed = [c for c in SPACE.configs()
               if policy.explain(c, SPACE, env).status != "excluded"]
    assert sorted(c.key() for c in region.configs()) == sorted(c.key() for c in allowed)
    rng = random.Random(seed)
    if not allowed:
        return
    for _ in range(10):
        config = region.sample(rng)
        assert policy.explain(config, SPACE, env).status != "excluded"


def test_a_tl_range_argument_the_installed_triton_lacks_excludes_its_feature():
    env = Environment(triton="3.1.0", device="cuda",
                      range_args=("arg1", "arg2", "step", "num_stages", "loop_unroll_factor"))
    policy = Policy([])
    v = policy.explain(SPACE.default().replace(flat=True), SPACE, env)
    assert v.status == "excluded" and v.matched[0].rule == "tl-range-lacks-flatten"
    assert "installed triton 3.1.0" in v.matched[0].source
    assert policy.gate(SPACE, env).allowed["flat"] == [False]
    # a what-if Triton version is not the installed one: its signature is unknown
    what_if = env.with_overrides({"triton": "3.9.0"})
    assert policy.explain(SPACE.default().replace(flat=True), SPACE, what_if).status == "allowed"


def test_a_rules_conditions_are_said_in_one_order_whatever_the_hash_seed():
    """`policy explain` lists a rule's unmet conditions in the order their fields are declared:
    the same text in every run (the written set's order followed string hashing)."""
    code = ("from tunegate.policy import Conditions; print(list(Conditions(device='cpu', "
            "capability='>=9.0', torch='>=2', triton='>=3').given()))")
    said = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(4)}
    assert said == {"['triton', 'torch', 'device', 'capability']\n"}
