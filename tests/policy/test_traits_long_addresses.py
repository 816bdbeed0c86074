"""Addresses too long to follow keep their identity: fla's kernels advance every pointer by long
runtime offsets, and a store to one tensor must not be taken for a load of another."""

from tunegate.policy import detect_traits

_ADVANCE = "".join(f"    {{p}} += (bos * H{i} + i_h) * K + i_t * {i}\n" for i in range(40))


def kernel(store_to: str) -> str:
    return (
        "def k(x, y, bos, i_h, i_t, K, H0, N, BLOCK: tl.constexpr):\n"
        + _ADVANCE.format(p="x") + _ADVANCE.format(p="y")
        + "    for i in tl.range(0, N, BLOCK, num_stages=2):\n"
        + f"        tl.store({store_to} + i, 1.0)\n"
        + "        v = tl.load(x + i)\n"
    )


def test_a_store_to_another_long_address_is_not_a_store_then_load():
    assert "store_then_load" not in detect_traits(source=kernel("y")).traits


def test_a_store_then_load_of_the_same_long_address_is_still_found():
    traits = detect_traits(source=kernel("x"))
    assert "store_then_load" in traits.traits
    assert traits.loop_traits["store_then_load"] == (0,)
