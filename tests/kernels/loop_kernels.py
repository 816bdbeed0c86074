"""Kernels written for the loop map and trait tests: each holds (or only seems to hold) a hazard.

They are real Triton kernels; `tests/policy/test_kernel_traits.py` runs some under the interpreter.
"""

import triton
import triton.language as tl

from tests.kernels import loop_helpers as lh
from tests.kernels.loop_helpers import store_row


@triton.jit
def seed_store_load(x_ptr, scratch_ptr, diff_ptr, N, BLOCK: tl.constexpr,
                    OUTER_STAGES: tl.constexpr, INNER_STAGES: tl.constexpr,
                    UNROLL: tl.constexpr, FLATTEN: tl.constexpr):
    """Rows over programs; per row, each block is stored to scratch and loaded back."""
    for row in tl.range(tl.program_id(0), N, tl.num_programs(0), num_stages=OUTER_STAGES):
        for start in tl.range(0, N, BLOCK, num_stages=INNER_STAGES, loop_unroll_factor=UNROLL,
                              flatten=FLATTEN):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < N
            value = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0) + start
            tl.store(scratch_ptr + row * N + offs, value, mask=mask)
            back = tl.load(scratch_ptr + row * N + offs, mask=mask, other=0.0)
            tl.store(diff_ptr + row * N + offs, tl.where(back == value, 0.0, 1.0), mask=mask)


@triton.jit
def descriptor_copy(x_ptr, y_ptr, M, N: tl.constexpr, BLOCK_M: tl.constexpr,
                    NUM_STAGES: tl.constexpr, OTHER_STAGES: tl.constexpr):
    """Tensor-descriptor loads in one pipelined loop; a second loop has plain pointers only."""
    for m in tl.range(0, M, BLOCK_M, num_stages=NUM_STAGES):
        src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                        block_shape=[BLOCK_M, N])
        dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1],
                                        block_shape=[BLOCK_M, N])
        dst.store([m, 0], src.load([m, 0]))
    for i in tl.range(0, M, num_stages=OTHER_STAGES):
        tl.store(y_ptr + i * N + tl.arange(0, N), tl.load(y_ptr + i * N + tl.arange(0, N)))


@triton.jit
def block_pointer_copy(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, shape=(N,), strides=(1,), offsets=(pid * BLOCK,),
                            block_shape=(BLOCK,), order=(0,))
    dst = tl.make_block_ptr(y_ptr, shape=(N,), strides=(1,), offsets=(pid * BLOCK,),
                            block_shape=(BLOCK,), order=(0,))
    tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))


@triton.jit
def constexpr_nest(a_ptr, c_ptr, K: tl.constexpr, BK: tl.constexpr, FLAT: tl.constexpr):
    """A nest whose bounds are all constexprs: flattening it cannot meet an empty inner range."""
    acc = tl.zeros((BK,), dtype=tl.float32)
    for k in tl.range(0, 2, flatten=FLAT):
        for kk in range(tl.cdiv(K, BK)):
            acc += tl.load(a_ptr + kk * BK + tl.arange(0, BK))
    tl.store(c_ptr + tl.arange(0, BK), acc)


@triton.jit
def dynamic_nest(a_ptr, c_ptr, n, BK: tl.constexpr, FLAT: tl.constexpr):
    acc = tl.zeros((BK,), dtype=tl.float32)
    for k in tl.range(0, 2, flatten=FLAT):
        for kk in range(tl.cdiv(n, BK)):
            acc += tl.load(a_ptr + kk * BK + tl.arange(0, BK))
    tl.store(c_ptr + tl.arange(0, BK), acc)


@triton.jit
def exclusive_dots(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr, SCALED: tl.constexpr):
    """Two dots on one accumulator, but in branches of an `if CONSTEXPR:`: only one is built."""
    offs = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for k in range(0, K, B):
        a = tl.load(a_ptr + offs[:, None] * B + offs[None, :])
        b = tl.load(b_ptr + offs[:, None] * B + offs[None, :])
        if SCALED:
            acc = tl.dot(a * 2, b, acc)
        else:
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs[:, None] * B + offs[None, :], acc)


@triton.jit
def chained_dots(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
    offs = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for k in range(0, K, B):
        a = tl.load(a_ptr + offs[:, None] * B + offs[None, :])
        b = tl.load(b_ptr + offs[:, None] * B + offs[None, :])
        acc = tl.dot(a, b, acc)
        acc = tl.dot(b, a, acc)
    tl.store(c_ptr + offs[:, None] * B + offs[None, :], acc)


@triton.jit
def two_descriptors(x_ptr, y_ptr, M, N: tl.constexpr, BLOCK_M: tl.constexpr,
                    STAGES: tl.constexpr):
    """A store through one descriptor and a load through another at the same offsets."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, N])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, N])
    for m in tl.range(0, M, BLOCK_M, num_stages=STAGES):
        dst.store([m, 0], tl.zeros((BLOCK_M, N), dtype=tl.float32))
        dst.store([m, 0], src.load([m, 0]) + 1)


@triton.jit
def one_descriptor_round_trip(x_ptr, M, N: tl.constexpr, BLOCK_M: tl.constexpr,
                              STAGES: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                     block_shape=[BLOCK_M, N])
    for m in tl.range(0, M, BLOCK_M, num_stages=STAGES):
        desc.store([m, 0], tl.zeros((BLOCK_M, N), dtype=tl.float32))
        desc.store([m, 0], desc.load([m, 0]) + 1)


@triton.jit
def aliased_store_load(x_ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """The store goes through a local pointer, the load through the expression it names."""
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        offs = start + tl.arange(0, BLOCK)
        p = x_ptr + offs
        q = p
        tl.store(q, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)
        v = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(p, v + 1, mask=offs < n)


@triton.jit
def helper_store_load(x_ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """The store is inside a jit helper imported from another module."""
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        offs = start + tl.arange(0, BLOCK)
        store_row(x_ptr, offs, tl.full((BLOCK,), 1.0, tl.float32), offs < n)
        v = tl.load(x_ptr + offs, mask=offs < n)
        lh.store_row(x_ptr, offs, v + 1, offs < n)


@triton.jit
def helper_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr, HELPER_STAGES: tl.constexpr):
    """A helper's loop, driven by a parameter the kernel passes down."""
    tl.store(y_ptr + tl.arange(0, BLOCK), lh.pipelined_sum(x_ptr, n, BLOCK, HELPER_STAGES))


@triton.jit
def host_descriptor(in_desc, out_desc, M, BLOCK_M: tl.constexpr, STAGES: tl.constexpr):
    """Descriptors made on the host (triton.tools.tensor_descriptor.TensorDescriptor)."""
    for m in tl.range(0, M, BLOCK_M, num_stages=STAGES):
        out_desc.store([m, 0], in_desc.load([m, 0]))


@triton.jit
def transposed_operand(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
    """A tl.sum and a dot of a transposed tile held in a variable, in one loop."""
    offs = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    total = tl.zeros((B,), dtype=tl.float32)
    for k in range(0, K, B):
        a = tl.load(a_ptr + offs[:, None] * B + offs[None, :])
        b = tl.load(b_ptr + offs[:, None] * B + offs[None, :])
        at = tl.trans(a)
        acc = tl.dot(at, b, acc)
        total += tl.sum(a, axis=0)
    tl.store(c_ptr + offs[:, None] * B + offs[None, :], acc + total[None, :])
