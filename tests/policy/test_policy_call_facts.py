"""Problem facts in rule predicates: dtypes and descriptor tiles of a real call, and fail-closed
verdicts (assumed to match, and saying so) before the kernel is called."""

import pytest
import torch

from tests.kernels import gpu_faults, race_6691
from tests.kernels.loop_kernels import descriptor_copy, host_descriptor
from tunegate.policy import Environment, Policy, Predicate, builtin_policy_path, detect_traits
from tunegate.policy.predicate import MISSING, Unknown
from tunegate.space import Choice, Config, Parameter, Space

H200 = Environment(triton="3.6.0", torch="2.11.0", python="3.12.3", cuda="13.0", device="cuda",
                   capability="9.0")
TD = "tensor-descriptor-deep-pipeline-misaligned"


@pytest.fixture(scope="module")
def policy():
    return Policy.from_files(builtin_policy_path())


def _eval(text, **values):
    return Predicate(text).evaluate(lambda n: values.get(n, MISSING))


@pytest.mark.parametrize("text, holds, assumed", [
    ("x < 128", True, True),
    ("n > 1 and x < 128", False, False),  # the known part decides
    ("n == 1 and x < 128", True, True),
    ("n == 1 or x < 128", True, False),
    ("not x < 128", True, True),
    ("not (n == 1 or x < 128)", False, False),
])
def test_an_unknown_fact_holds_unless_the_known_part_decides(text, holds, assumed):
    result = _eval(text, n=1, x=Unknown("x unknown: not called"))
    assert result.holds is holds
    assert result.unknown == ({"x": "x unknown: not called"} if assumed else {})


def test_descriptors_made_in_the_kernel_are_read_with_base_and_block_shape():
    traits = detect_traits(gpu_faults.td_copy)
    assert [(d.base, d.block_shape) for d in traits.descriptors] == [
        ("in_ptr", ("XBLOCK",)), ("out_ptr", ("XBLOCK",))]
    assert traits.call is None


def td(xblock, stages):
    return Config(values={"XBLOCK": xblock, "CHUNK": 1024, "NUM_STAGES": stages,
                          "INDEXING": "tensor_descriptor"})


@pytest.mark.parametrize("dtype, xblock, excluded", [
    (torch.float32, 4, True), (torch.float32, 16, True), (torch.float32, 32, False),
    (torch.float16, 32, True), (torch.float16, 64, False), (torch.float32, 256, False),
])
def test_descriptor_rule_removes_only_tiles_under_128_bytes(policy, dtype, xblock, excluded):
    n = 4096
    call = {"in_ptr": torch.zeros(n, dtype=dtype), "out_ptr": torch.zeros(n, dtype=dtype), "n": n}
    traits = detect_traits(gpu_faults.td_copy).called_with(call)
    space = gpu_faults.TD_TASK.space.model_copy(update={"parameters": {
        **gpu_faults.TD_TASK.space.parameters,
        "XBLOCK": Parameter(domain=Choice(choices=(4, 16, 32, 64, 256), default=32))}})
    verdict = policy.explain(td(xblock, 3), space, H200, traits)
    assert (TD in {m.rule for m in verdict.matched}) is excluded
    assert verdict.excluded is excluded
    assert not policy.explain(td(xblock, 1), space, H200, traits).excluded  # one stage: fine


def test_before_the_call_the_descriptor_rule_is_assumed_and_says_why(policy):
    traits = detect_traits(gpu_faults.td_copy)
    verdict = policy.explain(td(32, 3), gpu_faults.TD_TASK.space, H200, traits)
    (m,) = [m for m in verdict.matched if m.rule == TD]
    assert "td_copy has not been called" in m.assumed["tile_bytes"]
    assert "assumed to match: tile_bytes unknown" in m.as_reason().line()


def test_gating_a_called_kernel_keeps_the_128_byte_tile(policy):
    call = {"in_ptr": torch.zeros(64), "out_ptr": torch.zeros(64), "n": 64}
    traits = detect_traits(gpu_faults.td_copy)
    space = gpu_faults.TD_TASK.space
    called = {(c.values["XBLOCK"], c.values["NUM_STAGES"])
              for c in policy.gate(space, H200, traits.called_with(call)).configs()}
    uncalled = {(c.values["XBLOCK"], c.values["NUM_STAGES"])
                for c in policy.gate(space, H200, traits).configs()}
    assert called == {(32, 1), (4, 1), (32, 3)}
    assert uncalled == {(32, 1), (4, 1)}


def test_2d_descriptor_tile_is_both_dimensions(policy):
    # BLOCK_M x N fp16: 1 x 32 x 2 = 64 bytes is removed, 4 x 32 x 2 = 256 kept
    call = {"x_ptr": torch.zeros(64, 32, dtype=torch.float16),
            "y_ptr": torch.zeros(64, 32, dtype=torch.float16), "M": 64, "N": 32}
    traits = detect_traits(descriptor_copy).called_with(call)
    space = Space(parameters={"BLOCK_M": Parameter(domain=Choice(choices=(1, 4))),
                              "NUM_STAGES": Parameter(domain=Choice(choices=(3,))),
                              "OTHER_STAGES": Parameter(domain=Choice(choices=(1,)))})
    kept = [c.values["BLOCK_M"] for c in policy.gate(space, H200, traits).configs()]
    assert kept == [4]


def test_host_descriptors_use_the_block_their_config_sets(policy):
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.zeros(256, 64, dtype=torch.bfloat16)
    dummy = [1, 1]  # as Liger: a placeholder block the config's pre_hook replaces
    call = {"in_desc": TensorDescriptor.from_tensor(x, dummy),
            "out_desc": TensorDescriptor.from_tensor(x, dummy), "M": 256}
    space = Space(parameters={"BLOCK_M": Parameter(domain=Choice(choices=(1, 64))),
                              "STAGES": Parameter(domain=Choice(choices=(3,)))})
    traits = detect_traits(host_descriptor)
    as_given = traits.called_with(call)  # 1 x 1 x 2 bytes: every config removed
    assert list(policy.gate(space, H200, as_given).configs()) == []
    hooked = traits.called_with(call, lambda v: {"in_desc": [v["BLOCK_M"], 32],
                                                 "out_desc": [v["BLOCK_M"], 32]})
    assert [c.values["BLOCK_M"] for c in policy.gate(space, H200, hooked).configs()] == [64]


def race(num_stages, dtype):
    call = {"a_ptr": torch.zeros(8, 128, dtype=dtype), "b_ptr": torch.zeros(8, 128, dtype=dtype),
            "out_a_ptr": torch.zeros(128), "out_ab_ptr": torch.zeros(128, 128), "N": 8, "D": 128}
    traits = detect_traits(race_6691.sum_and_trans_dot).called_with(call)
    space = Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(64,))),
                              "num_stages": Parameter(domain=Choice(choices=(1, 2, 3)),
                                                      features=["num_stages"])})
    return space, traits, Config(values={"BLOCK": 64, "num_stages": num_stages})


@pytest.mark.parametrize("dtype, status", [
    (torch.float16, "excluded"), (torch.bfloat16, "experimental"),
    (torch.float32, "experimental")])
def test_two_stage_6691_rule_excludes_fp16_and_checks_the_rest(policy, dtype, status):
    space, traits, config = race(2, dtype)
    verdict = policy.explain(config, space, H200, traits)
    assert verdict.status == status
    assert not verdict.matched[0].assumed
    assert policy.explain(race(1, dtype)[2], space, H200, traits).status == "allowed"


@pytest.mark.parametrize("warps, status", [(None, "excluded"), (4, "excluded"),
                                           (2, "experimental"), (8, "experimental")])
def test_two_stage_6691_rule_excludes_fp16_only_at_the_4_warps_measured_wrong(policy, warps,
                                                                             status):
    # On the H200 fla's dqke at 2 stages failed its own fp16 test at 4 warps (Triton's default
    # when a config names none) and passed at 2 and 8: those are kept, stress-checked.
    space, traits, config = race(2, torch.float16)
    if warps is not None:
        space = Space(parameters={**space.parameters, "num_warps": Parameter(
            domain=Choice(choices=(2, 4, 8)))})
        config = Config(values={**config.values, "num_warps": warps})
    verdict = policy.explain(config, space, H200, traits)
    assert verdict.status == status
    assert verdict.matched[0].rule.startswith("dot-trans-with-sum-two-stages")


def test_two_stage_6691_rule_before_the_call_is_assumed(policy):
    space, traits, config = race(2, torch.float16)
    verdict = policy.explain(config, space, H200, detect_traits(race_6691.sum_and_trans_dot))
    assert verdict.excluded
    assert "dtypes unknown" in verdict.reasons()[0].line()


def test_unknown_problem_fact_names_are_refused_and_known_ones_accepted(tmp_path):
    from tunegate.policy import PolicyError

    good = tmp_path / "good.toml"
    good.write_text('schema = 1\n[[rule]]\nid = "a"\ntitle = "t"\naction = "disable"\n'
                    'reason = "r"\nmatch = "element_bytes == 2 and tile_bytes < 64"\n')
    assert Policy.from_files(good).rules[0].match.text.startswith("element_bytes")
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace("element_bytes", "element_size"))
    with pytest.raises(PolicyError, match="problem fact"):
        Policy.from_files(bad)


def test_tune_of_a_task_reads_the_facts_of_a_host_draw(tmp_path):
    from tests.conftest import KERNELS
    from tunegate.autotune import Store, Tuner
    from tunegate.autotune.worker import TaskRef

    task = gpu_faults.TD_TASK.model_copy(update={"reference": None})  # no worker started
    tuner = Tuner(task, TaskRef(str(KERNELS / "gpu_faults.py"), "TD_TASK"), env=H200,
                  policy=Policy.from_files(builtin_policy_path()),
                  store=Store(tmp_path / "s.sqlite"))
    assert tuner.traits.call.args["in_ptr"].dtype == "float32"
    kept = {(c.values["XBLOCK"], c.values["NUM_STAGES"]) for c in tuner.region.configs()}
    assert kept == {(32, 1), (4, 1), (32, 3)}  # the 16-byte tile at 3 stages is removed
    assert tuner._removals()[TD] == 1


@pytest.mark.parametrize("meta_works", [True, False])
def test_the_host_draw_is_made_without_data_where_the_inputs_allow(tmp_path, meta_works):
    from tests.conftest import KERNELS
    from tunegate.autotune import Store, Tuner
    from tunegate.autotune.worker import TaskRef

    asked = []

    def make_inputs(seed, device):
        asked.append(device)
        if device == "meta" and not meta_works:  # inputs made from data: .item() on meta fails
            torch.zeros(1, device="meta").item()
        return gpu_faults.TD_TASK.make_inputs(seed, device)

    task = gpu_faults.TD_TASK.model_copy(update={"reference": None, "make_inputs": make_inputs})
    tuner = Tuner(task, TaskRef(str(KERNELS / "gpu_faults.py"), "TD_TASK"), env=H200,
                  policy=Policy.from_files(builtin_policy_path()),
                  store=Store(tmp_path / "s.sqlite"))
    assert asked == (["meta"] if meta_works else ["meta", "cpu"])
    assert tuner.traits.call.args["in_ptr"].dtype == "float32"
    assert tuner._removals()[TD] == 1  # the same facts either way


def test_tune_of_a_kernel_no_fact_rule_applies_to_makes_no_host_draw(tmp_path):
    from tests.conftest import KERNELS
    from tunegate.autotune import Store, Task, Tuner
    from tunegate.autotune.worker import TaskRef

    def refuse(seed, device):
        raise AssertionError("no rule needs this kernel's problem facts")

    task = Task(name="race", kernel=race_6691.sum_and_trans_dot, grid=(1,), make_inputs=refuse,
                space=race(1, torch.float16)[0], outputs=("out_ab_ptr",))
    tuner = Tuner(task, TaskRef(str(KERNELS / "race_6691.py"), "TASK"),
                  env=H200.with_overrides({"triton": "3.2.0"}),  # before #6691's rules
                  policy=Policy.from_files(builtin_policy_path()),
                  store=Store(tmp_path / "s.sqlite"))
    assert tuner.traits.call is None


@pytest.mark.parametrize("match", ["dtypes == 2", "tile_bytes < '128'", "element_bytes == true"])
def test_a_problem_fact_compared_with_the_wrong_type_is_refused(tmp_path, match):
    from tunegate.policy import PolicyError

    path = tmp_path / "p.toml"
    path.write_text('schema = 1\n[[rule]]\nid = "a"\ntitle = "t"\naction = "disable"\n'
                    f'reason = "r"\nmatch = "{match}"\n')
    with pytest.raises(PolicyError, match="type mismatch"):
        Policy.from_files(path)


def test_removals_say_when_a_rule_was_assumed_for_an_unknown_fact(policy):
    traits = detect_traits(gpu_faults.td_copy)
    call = {"in_ptr": torch.zeros(64), "out_ptr": torch.zeros(64), "n": 64}
    space = gpu_faults.TD_TASK.space
    before = {r.rule: r for r in policy.gate(space, H200, traits).removals()}[TD]
    after = {r.rule: r for r in policy.gate(space, H200, traits.called_with(call)).removals()}[TD]
    assert (before.count, before.assumed) == (2, True)
    assert (after.count, after.assumed) == (1, False)


def test_a_missing_name_decides_before_an_unknown_one():
    result = _eval("absent == 1 or x < 128", x=Unknown("x unknown"))
    assert result.holds and result.unknown == {"x": "x unknown"}
    assert not _eval("absent < x", x=Unknown("x unknown")).holds  # no such parameter: false
    nested = _eval("(x < 128) == true", x=Unknown("x unknown"))
    assert nested.holds and nested.unknown == {"x": "x unknown"}


def test_a_descriptor_kernel_whose_descriptors_are_not_found_is_assumed(policy):
    source = ("def k(x_ptr, y_ptr, n, XBLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):\n"
              "    for i in tl.range(0, n, XBLOCK, num_stages=NUM_STAGES):\n"
              "        d = helper.make_desc(x_ptr, XBLOCK)\n"
              "        tl.store_tensor_descriptor(d, [i], tl.load_tensor_descriptor(d, [i]))\n")
    traits = detect_traits(source=source).called_with({"x_ptr": torch.zeros(8), "n": 8})
    space = Space(parameters={"XBLOCK": Parameter(domain=Choice(choices=(1024,))),
                              "NUM_STAGES": Parameter(domain=Choice(choices=(3,)))})
    verdict = policy.explain(space.default(), space, H200, traits)
    assert verdict.excluded
    assert "no tensor descriptor was found" in verdict.reasons()[0].line()
