"""The baseline config (no reference given) switches off every feature, also the ones the
kernel's source binds to a parameter that declares none."""

from tests.kernels.seed_task import TASK
from tunegate.autotune import baseline_config
from tunegate.policy import Policy, detect_environment, detect_traits
from tunegate.space import Boolean, Choice, IntRange, Parameter, Space


def _space(features: bool) -> Space:
    """The seed kernel's space with every default ON: deep pipelines, unrolled, flattened."""
    def bound(*names: str) -> tuple[str, ...]:
        return names if features else ()

    return Space(parameters={
        "OUTER_STAGES": Parameter(domain=IntRange(low=1, high=3, default=3),
                                  features=bound("range_num_stages")),
        "INNER_STAGES": Parameter(domain=IntRange(low=1, high=3, default=2),
                                  features=bound("range_num_stages")),
        "UNROLL": Parameter(domain=IntRange(low=1, high=2, default=2),
                            features=bound("range_unroll")),
        "FLATTEN": Parameter(domain=Boolean(default=True), features=bound("range_flatten")),
        "num_warps": Parameter(domain=Choice(choices=(1, 4), default=4)),
    })


def _region(features: bool):
    env = detect_environment(probe_device=False).with_overrides(
        {"triton": "3.6.0", "device": "cuda", "capability": "9.0"})
    return Policy.load().gate(_space(features), env, detect_traits(TASK.kernel))


def test_source_bound_features_are_off_in_the_baseline():
    region = _region(features=False)
    base = baseline_config(region.space, region.binding)
    assert (base["OUTER_STAGES"], base["INNER_STAGES"], base["UNROLL"], base["FLATTEN"]) == \
        (1, 1, 1, False)
    assert base["num_warps"] == 4  # not a feature: the default stays
    assert region.contains(base) and region.verdict(base).status == "allowed"


def test_declared_and_source_bindings_give_the_same_baseline():
    declared, auto = _region(features=True), _region(features=False)
    assert baseline_config(declared.space, declared.binding) == \
        baseline_config(auto.space, auto.binding)


def test_without_the_kernel_only_declared_features_count():
    assert baseline_config(_space(features=False)) == _space(features=False).default()


def test_an_excluded_baseline_gives_way_to_allowed_configs_before_experimental_ones(
        rules_policy):
    from tunegate.autotune.baseline import allowed_baseline, alternatives

    space = Space(parameters={
        "BLOCK": Parameter(domain=Choice(choices=(32, 64), default=32)),
        "STAGES": Parameter(domain=IntRange(low=1, high=3, default=1),
                            features=("range_num_stages",))})
    policy = rules_policy(("no-single-stage", "disable", "STAGES == 1"),
                          ("check-two-stages", "experimental", "STAGES == 2"))
    region = policy.gate(space, detect_environment(probe_device=False), None)
    chosen, note = allowed_baseline(region)
    assert (chosen["BLOCK"], chosen["STAGES"]) == (32, 3)  # allowed beats experimental
    assert "no-single-stage" in note and "the allowed config closest" in note
    ranked = [(v.config["BLOCK"], v.config["STAGES"], v.status) for v in alternatives(region)]
    assert ranked == [(32, 3, "allowed"), (64, 3, "allowed"),
                      (32, 2, "experimental"), (64, 2, "experimental")]
