"""Policies aimed at the loop that holds the hazard, on real kernels and the H200 evidence."""

import json

import pytest

from tests.conftest import ROOT
from tests.kernels import loop_kernels as k
from tests.kernels.seed_task import TASK, space
from tunegate.policy import Environment, Policy, detect_traits
from tunegate.space import Choice, IntRange, Parameter, Space, helion_space

EVIDENCE = ROOT.parent / "shared" / "evidence" / "store_load_h200.json"
EMBEDDED = ROOT / "tests" / "data" / "store_load_h200_verdicts.json"
H200 = {"triton": "3.6.0", "device": "cuda", "capability": "9.0"}
COLUMNS = ("OUTER_STAGES", "INNER_STAGES", "UNROLL", "FLATTEN", "num_warps")


def env(**facts):
    return Environment().with_overrides({**H200, **facts})


def measured() -> dict[tuple, str]:
    """(OUTER_STAGES, INNER_STAGES, UNROLL, FLATTEN, num_warps) -> 'ok' or 'wrong' on the H200."""
    rows = json.loads(EMBEDDED.read_text())["rows"]
    table = {tuple(r[:5]): r[5] for r in rows}
    if EVIDENCE.is_file():  # the original, where the shared folder sits beside the clone
        sweep = json.loads(EVIDENCE.read_text())["sweep_outer_inner_unroll_flatten_warps"]
        original = {(r["outer"], r["inner"], r["unroll"], r["flatten"], r["warps"]): r["status"]
                    for r in sweep}
        assert original == table, "tests/data copy differs from the shared evidence"
    return table


def test_this_seed_kernel_was_wrong_on_the_h200_exactly_where_the_evidence_says():
    """tests/data holds a sweep of `seed_store_load` itself on an H200 with Triton 3.6.0."""
    sweep = json.loads((EMBEDDED.parent / "seed_store_load_h200_sweep.json").read_text())
    ours = {tuple(r[:5]): "wrong" if r[5] else "ok" for r in sweep["rows"]}
    assert sweep["triton"] == "3.6.0" and ours == measured()


@pytest.fixture(scope="module")
def policy():
    return Policy.load(cwd="/")


@pytest.mark.parametrize("declared", [False, True], ids=["source-bound", "declared"])
def test_seed_kernel_excludes_exactly_what_was_wrong_on_the_h200(policy, declared):
    truth = measured()
    assert sorted(truth.values()).count("wrong") == 48 and len(truth) == 72
    sp = space(features=declared)
    region = policy.gate(sp, env(), detect_traits(k.seed_store_load))
    allowed = {tuple(c[n] for n in COLUMNS) for c in region.configs()}
    assert allowed == {key for key, status in truth.items() if status == "ok"}
    assert region.allowed["INNER_STAGES"] == [1] and region.allowed["OUTER_STAGES"] == [1, 2, 3]
    for config in sp.configs():
        verdict = region.verdict(config)
        key = tuple(config[n] for n in COLUMNS)
        assert verdict.excluded == (truth[key] == "wrong"), key
        assert region.contains(config) == (truth[key] == "ok")
        if not verdict.excluded:
            assert verdict.status == ("experimental" if config["FLATTEN"] else "allowed")
    assert {r.rule: r.count for r in region.removals() if r.count} == {"pipelined-store-load": 48}


def test_seed_exclusion_names_rule_bugs_parameter_loop_and_line(policy):
    traits = detect_traits(k.seed_store_load)
    inner = traits.loops[1]
    config = TASK.space.default().replace(OUTER_STAGES=2, INNER_STAGES=3)
    verdict = policy.explain(config, TASK.space, env(), traits)
    (match,) = verdict.matched
    assert match.rule == "pipelined-store-load" and "triton-lang/triton#8259" in match.bugs
    (site,) = match.sites
    assert (site.parameter, site.value, site.loop, site.line) == ("INNER_STAGES", 3, 1,
                                                                  inner.line)
    assert match.features == {"range_num_stages": [f"1: INNER_STAGES=3 at line {inner.line}"]}
    assert match.loops["store_then_load"] == [f"1 ({traits.evidence['store_then_load']})"]
    assert match.traits == {"store_then_load": traits.evidence["store_then_load"]}
    reason = match.as_reason()
    assert reason.evidence["sites"][0]["parameter"] == "INNER_STAGES"


def test_seed_kernel_runs_under_the_interpreter():
    args = TASK.make_inputs(0, "cpu")
    TASK.run(args, TASK.space.default().replace(INNER_STAGES=2, UNROLL=2))
    assert float(args["diff_ptr"].abs().sum()) == 0.0  # sequential: the hazard cannot show


def descriptor_space():
    return Space(parameters={
        "BLOCK_M": Parameter(domain=Choice(choices=(8, 16, 32, 64))),
        "NUM_STAGES": Parameter(domain=IntRange(low=1, high=3)),
        "OTHER_STAGES": Parameter(domain=IntRange(low=1, high=3)),
    })


def test_tensor_descriptor_loop_gated_per_loop(policy):
    sp, traits = descriptor_space(), detect_traits(k.descriptor_copy)
    assert traits.features == {"tensor_descriptor": traits.evidence["tensor_descriptor"]}
    region = policy.gate(sp, env(), traits)
    assert region.allowed["NUM_STAGES"] == [1, 2]  # the loop that holds the descriptors
    assert region.allowed["OTHER_STAGES"] == [1, 2, 3]  # a loop of plain pointers
    assert len(list(region.configs())) == 4 * 2 * 3
    verdict = policy.explain(sp.default().replace(NUM_STAGES=3), sp, env(), traits)
    assert [m.rule for m in verdict.matched] == ["tensor-descriptor-deep-pipeline-misaligned"]
    assert verdict.matched[0].sites[-1].parameter == "NUM_STAGES"
    fixed = policy.gate(sp, env(triton="3.9.0"), traits)
    assert len(list(fixed.configs())) == sp.cardinality()


def test_helion_descriptor_rule_spares_plain_triton_but_not_helion(policy):
    sp, traits = descriptor_space(), detect_traits(k.descriptor_copy)
    two = policy.explain(sp.default().replace(NUM_STAGES=2), sp, env(), traits)
    assert two.status == "allowed"  # two stages ran right on the H200
    hel = helion_space(loops=1)
    config = hel.default().replace(indexing="tensor_descriptor", range_num_stages=(2,))
    assert "helion-tensor-descriptor-pipelining" in {
        m.rule for m in policy.explain(config, hel, env()).matched}


def test_tensor_descriptor_kernel_needs_sm90(policy):
    sp, traits = descriptor_space(), detect_traits(k.descriptor_copy)
    verdict = policy.explain(sp.default(), sp, env(capability="8.0"), traits)
    assert verdict.excluded and verdict.matched[0].rule == "tensor-descriptor-needs-sm90"
    assert verdict.matched[0].features == {"tensor_descriptor": True}


def test_block_pointer_kernel_excluded_at_triton_3_9(policy):
    sp = Space(parameters={"BLOCK": Parameter(domain=Choice(choices=(32, 64)))})
    traits = detect_traits(k.block_pointer_copy)
    verdict = policy.explain(sp.default(), sp, env(triton="3.9.0"), traits)
    assert verdict.excluded and verdict.matched[0].rule == "block-ptr-removed"
    (site,) = verdict.matched[0].sites
    assert site.parameter is None and traits.evidence["block_ptr"].startswith(f"line {site.line}:")
    assert list(policy.gate(sp, env(triton="3.9.0"), traits).configs()) == []
    assert policy.explain(sp.default(), sp, env(triton="3.8.0"), traits).status == "allowed"


def test_flatten_rule_hits_only_the_loop_over_a_dynamic_nest(policy):
    sp = Space(parameters={"FLAT": Parameter(domain=Choice(choices=(False, True)))})
    on = sp.default().replace(FLAT=True)
    dynamic = policy.explain(on, sp, env(), detect_traits(k.dynamic_nest))
    assert dynamic.excluded and dynamic.matched[0].rule == "flatten-empty-inner-range"
    constexpr = policy.explain(on, sp, env(), detect_traits(k.constexpr_nest))
    assert constexpr.status == "experimental"  # flatten is experimental, not excluded


def test_launch_num_stages_drives_loops_that_set_none(policy):
    sp = Space(parameters={"num_stages": Parameter(domain=IntRange(low=1, high=3)),
                           "STAGES": Parameter(domain=IntRange(low=1, high=3))})
    traits = detect_traits(k.aliased_store_load)  # its loop sets num_stages=STAGES itself
    region = policy.gate(sp, env(), traits)
    assert region.allowed == {"num_stages": [1, 2, 3], "STAGES": [1]}
    src = ("import triton.language as tl\n"
           "def k(p, n):\n    for i in range(n):\n        tl.store(p, i)\n"
           "        x = tl.load(p)\n")
    launch_only = policy.gate(sp, env(), detect_traits(source=src))
    assert launch_only.allowed == {"num_stages": [1], "STAGES": [1, 2, 3]}


def test_a_declaration_that_contradicts_the_source_is_reported(policy):
    sp = Space(parameters={"STAGES": Parameter(domain=IntRange(low=1, high=3),
                                               features=["range_unroll"])})
    traits = detect_traits(k.aliased_store_load)
    verdict = policy.explain(sp.default(), sp, env(), traits)
    assert any("STAGES is declared as range_unroll" in n and "num_stages of loop 0" in n
               for n in verdict.notes)
    # the declaration wins: STAGES is no longer read as the loop's pipelining depth
    assert policy.explain(sp.default().replace(STAGES=3), sp, env(), traits).status == "allowed"


def test_an_option_computed_from_a_parameter_is_gated_by_its_value(policy):
    src = ("import triton.language as tl\n"
           "def k(p, n, S: tl.constexpr):\n"
           "    for i in tl.range(0, n, num_stages=S + 1):\n"
           "        tl.store(p, 1.0)\n        x = tl.load(p)\n")
    sp = Space(parameters={"S": Parameter(domain=IntRange(low=0, high=2))})
    region = policy.gate(sp, env(), detect_traits(source=src))
    assert region.allowed["S"] == [0]  # num_stages = S + 1 is 1 only for S = 0


def test_a_literal_option_makes_every_config_use_the_feature(policy):
    src = ("import triton.language as tl\n"
           "def k(p, n, B: tl.constexpr):\n"
           "    for i in tl.range(0, n, num_stages=3):\n"
           "        tl.store(p, 1.0)\n        x = tl.load(p)\n")
    sp = Space(parameters={"B": Parameter(domain=Choice(choices=(16, 32)))})
    verdict = policy.explain(sp.default(), sp, env(), detect_traits(source=src))
    assert verdict.excluded and verdict.matched[0].sites[0].origin == "kernel"
    assert list(policy.gate(sp, env(), detect_traits(source=src)).configs()) == []


@pytest.mark.gpu
def test_on_the_gpu_every_config_the_region_keeps_is_right(policy):
    """The safety property on real hardware: the seed kernel is right in every allowed config."""
    import torch

    from tunegate.policy import detect_environment

    here = detect_environment(probe_device=True)
    region = policy.gate(TASK.space, here, detect_traits(k.seed_store_load))
    n = 512
    for config in region.configs():
        args = {"x_ptr": torch.randn(n * n, device="cuda"),
                "scratch_ptr": torch.zeros(n * n, device="cuda"),
                "diff_ptr": torch.full((n * n,), 7.0, device="cuda"), "N": n, "BLOCK": 128}
        TASK.run(args, config)
        torch.cuda.synchronize()
        assert float(args["diff_ptr"].abs().sum()) == 0.0, config.text()


def test_without_a_loop_map_a_feature_on_several_parameters_matches_if_any_does(policy):
    from tunegate.policy import KernelTraits

    traits = KernelTraits("k", {"store_then_load": "line 1"})  # traits known, loops not
    sp = space(features=True)
    for outer, inner, excluded in ((2, 1, True), (1, 2, True), (1, 1, False)):
        config = sp.default().replace(OUTER_STAGES=outer, INNER_STAGES=inner)
        verdict = policy.explain(config, sp, env(), traits)
        assert verdict.excluded == excluded, (outer, inner)
    hel = helion_space(loops=2)  # Helion's lists: loop i is Helion's loop i
    verdict = policy.explain(hel.default().replace(range_num_stages=(0, 3)), hel, env(), traits)
    assert verdict.excluded and verdict.matched[0].features == {"range_num_stages": [1]}
