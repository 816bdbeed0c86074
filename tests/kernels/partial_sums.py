"""Drop-in kernels that write per-program partial sums into a zeroed buffer whose layout depends
on the config (as Liger-Kernel's DyT backward does for its alpha gradient): the caller sums the
buffer, so configs that place their partials differently are all right."""

import tunegate.triton as triton
import triton.language as tl

SLOT = 16  # the buffer has one slot per SLOT columns: enough for the smallest BLOCK_N
CONFIGS = [triton.Config({"BLOCK_N": b}) for b in (16, 32, 64)]


@triton.autotune(configs=CONFIGS, key=["N"], reset_to_zero=["DA"])
@triton.jit
def partial_sums_kernel(DX, DA, X, M, N, BLOCK_N: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = col < N
    start = tl.program_id(1)
    da = 0.0
    for row in range(start, M, tl.num_programs(1)):
        x = tl.load(X + row * N + col, mask=mask, other=0.0)
        tl.store(DX + row * N + col, 2 * x, mask=mask)
        da += tl.sum(x * x, 0)
    tl.store(DA + start * tl.cdiv(N, SLOT) + tl.program_id(0), da)


# BLOCK_N=64 leaves the last row out of its partial sums (DX is still right): its total is wrong.
@triton.autotune(configs=CONFIGS, key=["N"], reset_to_zero=["DA"])
@triton.jit
def lossy_partial_sums_kernel(DX, DA, X, M, N, BLOCK_N: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = col < N
    start = tl.program_id(1)
    da = 0.0
    for row in range(start, M, tl.num_programs(1)):
        x = tl.load(X + row * N + col, mask=mask, other=0.0)
        tl.store(DX + row * N + col, 2 * x, mask=mask)
        if BLOCK_N != 64 or row != M - 1:
            da += tl.sum(x * x, 0)
    tl.store(DA + start * tl.cdiv(N, SLOT) + tl.program_id(0), da)


def sum_of_squares(kernel, x, programs=3):
    """The caller: per-program partials into a zeroed buffer, then the buffer's total."""
    M, N = x.shape
    da = x.new_zeros(programs, triton.cdiv(N, SLOT))
    dx = x.new_empty(x.shape)
    kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), programs)](dx, da, x, M, N)
    return dx, da.sum()
