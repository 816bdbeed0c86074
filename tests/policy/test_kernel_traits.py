"""Trait precision on kernels written for it: each false positive and miss the issue names."""

import pytest

from tests.kernels import loop_kernels as k
from tunegate.policy import detect_traits


def traits(kernel):
    return detect_traits(kernel)


def test_constexpr_bounded_nest_is_not_a_nested_dynamic_range():
    t = traits(k.constexpr_nest)  # range(tl.cdiv(K, BK)) with K, BK constexpr: `tl` is a module
    assert "nested_dynamic_range" not in t.traits
    assert [loop.bounds for loop in t.loops] == ["constexpr", "constexpr"]
    dynamic = traits(k.dynamic_nest)
    assert dynamic.loop_traits["nested_dynamic_range"] == (0,)  # the loop whose nest it is
    assert dynamic.loops[1].runtime_names == ("n",)


def test_dots_in_exclusive_constexpr_branches_are_not_chained():
    assert {"chained_dot_acc", "multi_dot"}.isdisjoint(traits(k.exclusive_dots).traits)
    chained = traits(k.chained_dots)
    assert chained.loop_traits["chained_dot_acc"] == (0,)


def test_two_descriptors_at_the_same_offsets_are_not_store_then_load():
    assert "store_then_load" not in traits(k.two_descriptors).traits
    same = traits(k.one_descriptor_round_trip)
    assert same.loop_traits["store_then_load"] == (0,)


def test_store_then_load_through_a_local_pointer_alias():
    t = traits(k.aliased_store_load)
    assert t.loop_traits["store_then_load"] == (0,)
    assert "tl.load(x_ptr + offs" in t.evidence["store_then_load"]


def test_store_inside_a_jit_helper_of_another_module():
    t = traits(k.helper_store_load)
    assert t.loop_traits["store_then_load"] == (0,)
    assert "in store_row" in t.evidence["in_place"]


def test_loops_of_a_helper_are_loops_of_the_kernel():
    (loop,) = traits(k.helper_loop).loops
    assert loop.function == "pipelined_sum" and loop.kind == "tl.range"
    assert loop.options["num_stages"].parameters == ("HELPER_STAGES",)


def test_host_side_tensor_descriptor_arguments():
    t = traits(k.host_descriptor)
    assert t.loop_traits["tensor_descriptor"] == (0,)
    assert "tensor_descriptor" in t.features
    src = ("import triton.language as tl\n"
           "def k(desc: tl.tensor_descriptor, M):\n    pass\n")
    assert "tensor_descriptor" in detect_traits(source=src).traits


def test_trans_held_in_a_variable_reaches_the_dot():
    t = traits(k.transposed_operand)
    assert t.loop_traits["dot_trans_and_sum"] == (0,)


def test_seed_kernel_loop_map():
    t = traits(k.seed_store_load)
    outer, inner = t.loops
    assert (outer.kind, outer.depth, outer.parent, outer.bounds) == ("tl.range", 0, None,
                                                                      "runtime")
    assert (inner.depth, inner.parent, inner.bounds) == (1, 0, "runtime")
    assert {o: s.parameters for o, s in inner.options.items()} == {
        "num_stages": ("INNER_STAGES",), "loop_unroll_factor": ("UNROLL",),
        "flatten": ("FLATTEN",)}
    assert outer.options["num_stages"].parameters == ("OUTER_STAGES",)
    assert t.loop_traits == {"store_then_load": (1,), "nested_dynamic_range": (0,)}
    assert t.traits_of(1) == ["store_then_load"]


@pytest.mark.parametrize("src, option", [
    ("    for i in tl.range(0, n, num_stages=S + 1):\n", "S + 1"),
    ("    s = S\n    for i in tl.range(0, n, num_stages=s):\n", "S"),
    ("    for i in tl.range(0, n, 1, 3):\n", None),
])
def test_loop_options_resolve_to_parameters_or_literals(src, option):
    text = ("import triton.language as tl\ndef k(p, n, S: tl.constexpr):\n" + src
            + "        tl.store(p + i, 1.0)\n")
    (loop,) = detect_traits(source=text).loops
    stages = loop.options["num_stages"]
    if option is None:
        assert stages.literal == 3 and stages.parameters == ()
    else:
        assert stages.expr == option and stages.parameters == ("S",)


def test_static_range_is_not_pipelined_by_the_launch_option():
    text = ("import triton.language as tl\ndef k(p, B: tl.constexpr):\n"
            "    for i in tl.static_range(0, B):\n        tl.store(p + i, 1.0)\n")
    (loop,) = detect_traits(source=text).loops
    assert loop.kind == "tl.static_range" and loop.options == {}


def test_a_fixed_address_loaded_then_stored_is_loaded_again_next_iteration():
    text = ("import triton.language as tl\n"
            "def k(p, c_ptr, n, B: tl.constexpr):\n"
            "    q = c_ptr + tl.arange(0, B)\n"
            "    for i in range(n):\n        acc = tl.load(q)\n        tl.store(q, acc + 1)\n"
            "    for i in range(n):\n        x = tl.load(p + i)\n        tl.store(p + i, x)\n"
            "    r = c_ptr\n"
            "    for i in range(n):\n        y = tl.load(r)\n        r += 1\n"
            "        tl.store(r - 1, y)\n")
    t = detect_traits(source=text)
    assert t.loop_traits["store_then_load"] == (0,)  # not loop 1 (p + i) nor 2 (r moves)
