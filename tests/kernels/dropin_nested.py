"""Drop-in kernels whose tensors sit inside other arguments: host tensor descriptors (a block
shape set by each config's pre_hook) and tuples. One config of each list computes wrongly."""

import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import tunegate.triton as triton

__all__ = ["TensorDescriptor", "bump_desc", "pair_scale", "scale_desc"]


def set_blocks(nargs):
    """As a kernel author does for host descriptors: the tile is the config's."""
    for name in ("x_desc", "y_desc"):
        nargs[name].block_shape = [nargs["BM"], nargs["BN"]]


def _config(bm, bn, bug):
    return triton.Config({"BM": bm, "BN": bn, "BUG": bug}, pre_hook=set_blocks)


@triton.autotune(configs=[_config(8, 16, 0), _config(16, 8, 0), _config(16, 16, 1)],
                 key=["M", "N"])
@triton.jit
def scale_desc(x_desc, y_desc, M, N, BM: tl.constexpr, BN: tl.constexpr, BUG: tl.constexpr):
    """y = 2x + 1 through descriptors; the BUG config adds 5."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    v = x_desc.load([pm * BM, pn * BN])
    y_desc.store([pm * BM, pn * BN], v * 2 + (5.0 if BUG else 1.0))


def set_block(nargs):
    nargs["x_desc"].block_shape = [nargs["BM"], nargs["BN"]]


@triton.autotune(configs=[triton.Config({"BM": 8, "BN": 8}, pre_hook=set_block),
                          triton.Config({"BM": 8, "BN": 16}, pre_hook=set_block)],
                 key=["M", "N"])
@triton.jit
def bump_desc(x_desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """x += 1 in place, through a descriptor."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    x_desc.store([pm * BM, pn * BN], x_desc.load([pm * BM, pn * BN]) + 1.0)


@triton.autotune(configs=[triton.Config({"BLOCK": b, "BUG": bug})
                          for b, bug in ((16, 0), (32, 0), (64, 1))], key=["n"])
@triton.jit
def pair_scale(src, dst_pair, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    """dst_pair = (3 src, src + 1), the outputs passed as a tuple; the BUG config's second is
    src + 2."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src + offs, mask=mask)
    tl.store(dst_pair[0] + offs, v * 3, mask=mask)
    tl.store(dst_pair[1] + offs, v + (2.0 if BUG else 1.0), mask=mask)
