"""A live kernel's traits are walked once per process (each tuning of a program asks again),
and walked anew when a global its code names is bound to another object (a helper swapped)."""

import textwrap

from tunegate.kernelfile import load_module
from tunegate.policy import detect_traits

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def plain(x_ptr, offs):
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def round_trip(x_ptr, offs):
    for i in tl.range(0, 4, num_stages=2):
        tl.store(x_ptr + offs, i)
        tl.load(x_ptr + offs)


helper = plain


@triton.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    helper(x_ptr, tl.arange(0, BLOCK))
'''


def test_traits_are_kept_until_a_global_of_the_kernel_is_rebound(tmp_path):
    path = tmp_path / "swapped.py"
    path.write_text(textwrap.dedent(KERNELS))
    module = load_module(path)
    first = detect_traits(module.kernel)
    assert detect_traits(module.kernel) is first  # the walk is not repeated
    assert "store_then_load" not in first.traits
    module.helper = module.round_trip  # the kernel now calls another helper
    swapped = detect_traits(module.kernel)
    assert swapped is not first and "store_then_load" in swapped.traits


def test_a_library_style_kernel_keeps_its_traits_across_asks():
    """The tutorial matmul (a K loop of dots, no store then load): the second ask is the first
    answer, and it still has no store-then-load trait; the seed kernel that stores then loads
    one address in a pipelined loop still shows it when asked twice."""
    from examples import store_load, tutorial_matmul

    first = detect_traits(tutorial_matmul.matmul_kernel)
    assert detect_traits(tutorial_matmul.matmul_kernel) is first
    assert "store_then_load" not in first.traits
    hazard = detect_traits(store_load.TASK.kernel)
    assert detect_traits(store_load.TASK.kernel) is hazard
    assert "store_then_load" in hazard.traits
