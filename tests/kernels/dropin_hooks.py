"""A split sum whose configs zero the output in their own `pre_hook`, pruned by a function."""

import tunegate.triton as triton  # was: import triton
import triton.language as tl


def zero_output(nargs):
    nargs["out_ptr"].zero_()


def keep_small_blocks(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= 32]


@triton.autotune(configs=[triton.Config({"BLOCK": b, "SPLIT": 2}, pre_hook=zero_output)
                          for b in (16, 32, 64)],
                 key=["n"], prune_configs_by={"early_config_prune": keep_small_blocks})
@triton.jit
def split_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    part = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(part * BLOCK, n, BLOCK * SPLIT):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64)], key=["n", "HAS_RES"],
                 reset_to_zero=["total_ptr"], restore_value=["res_ptr"])
@triton.jit
def add_residual(x_ptr, res_ptr, total_ptr, out_ptr, n, HAS_RES: tl.constexpr,
                 BLOCK: tl.constexpr):
    """out = x (+ res, which is updated in place and summed into total) - the residual and its
    sum are optional: None where HAS_RES is false, as in fused add-and-norm kernels."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if HAS_RES:
        x += tl.load(res_ptr + offs, mask=mask)
        tl.store(res_ptr + offs, x, mask=mask)
        tl.atomic_add(total_ptr, tl.sum(tl.where(mask, x, 0.0), axis=0))
    tl.store(out_ptr + offs, x, mask=mask)


def keep_one(configs, named_args, **kwargs):
    return configs[:1]


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64)], key=["n"],
                 reset_to_zero=["total_ptr"], prune_configs_by={"early_config_prune": keep_one})
@triton.jit
def add_into(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """total += sum(x): pruned to one config, which Triton launches without a benchmark, so
    nothing zeroes `total` first."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32)], key=["n"])
@triton.jit
def unrolled_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, UNROLL: tl.constexpr = 2):
    """Each program copies UNROLL blocks; the grid reads UNROLL, left at its default."""
    for u in tl.static_range(UNROLL):
        offs = (tl.program_id(0) * UNROLL + u) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
