"""Drop-in kernels whose right and wrong configs only show on the caller's kind of values."""

import tunegate.triton as triton
import triton.language as tl


# Both guards are right where a variance is valid (>= 0); on negative values (a random redraw)
# one gives NaN and the other a finite number, so they disagree there.
@triton.autotune(configs=[triton.Config({"BLOCK": 16, "GUARD": 0}),
                          triton.Config({"BLOCK": 32, "GUARD": 1}),
                          triton.Config({"BLOCK": 16, "GUARD": 1})],
                 key=["n_cols"])
@triton.jit
def normalize_kernel(x_ptr, var_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, GUARD: tl.constexpr):
    row = tl.program_id(0)
    var = tl.load(var_ptr + row)
    if GUARD:
        var = tl.maximum(var, 0.0)
    std = tl.sqrt(var + 1e-6)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
        tl.store(y_ptr + row * n_cols + cols, x / std, mask=mask)


# STABLE=0 skips subtracting the row's maximum: right for randn-sized logits, inf/inf = NaN
# once a logit passes about 88 (exp overflows float32).
@triton.autotune(configs=[triton.Config({"STABLE": 1}, num_warps=1),
                          triton.Config({"STABLE": 1}, num_warps=2),
                          triton.Config({"STABLE": 0}, num_warps=1)],
                 key=["n_cols"])
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr, STABLE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    if STABLE:
        x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


# `out` is accumulated into (zeroed before each tuning run), `acc` updated in place (restored).
@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                 key=["n"], reset_to_zero=["out_ptr"], restore_value=["acc_ptr"])
@triton.jit
def accumulate_kernel(x_ptr, out_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + x, mask=mask)
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs, mask=mask) * 2 + x, mask=mask)


# Partial sums added atomically into `out`, which the program zeroes before each call (no
# `reset_to_zero`): its contents matter, so it is restored from the call, never poisoned (atomics
# into a NaN poison left every config "unwritten", and nothing was compared). TWICE adds twice.
@triton.autotune(configs=[triton.Config({"SPLIT": 1, "TWICE": 0}),
                          triton.Config({"SPLIT": 2, "TWICE": 0}),
                          triton.Config({"SPLIT": 2, "TWICE": 1})],
                 key=["n"])
@triton.jit
def split_sum_kernel(x_ptr, out_ptr, n, SPLIT: tl.constexpr, TWICE: tl.constexpr):
    row, part = tl.program_id(0), tl.program_id(1)
    cols = part * (64 // SPLIT) + tl.arange(0, 64 // SPLIT)
    partial = tl.sum(tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0), axis=0)
    tl.atomic_add(out_ptr + row, partial)
    if TWICE:
        tl.atomic_add(out_ptr + row, partial)


# Updated in place with no `restore_value`: the tuning restores it from the source's load and
# store, timing launches too (unrestored, every timed output was x + 3, and all were rejected).
@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}),
                          triton.Config({"BLOCK": 64})],
                 key=["n"])
@triton.jit
def increment_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


# `out` is zeroed by reset_to_zero only: Triton zeroes it before the tuning call's own launch
# too, so a program passing an uninitialised buffer is right on that call.
@triton.autotune(configs=[triton.Config({"SPLIT": 1}), triton.Config({"SPLIT": 2})],
                 key=["n"], reset_to_zero=["out_ptr"])
@triton.jit
def reset_sum_kernel(x_ptr, out_ptr, n, SPLIT: tl.constexpr):
    row, part = tl.program_id(0), tl.program_id(1)
    cols = part * (64 // SPLIT) + tl.arange(0, 64 // SPLIT)
    tl.atomic_add(out_ptr + row, tl.sum(tl.load(x_ptr + row * n + cols, mask=cols < n,
                                                other=0.0), axis=0))


@triton.jit
def _add_square_into(y_ptr, x_ptr, offs, mask):
    """`y += x * x` in a helper: the kernel's own source shows no load of y."""
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask)
             * tl.load(x_ptr + offs, mask=mask), mask=mask)


def _accumulate_squares(x_ptr, y_ptr, n, BLOCK: tl.constexpr, TWICE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    _add_square_into(y_ptr, x_ptr, offs, mask)
    if TWICE:
        _add_square_into(y_ptr, x_ptr, offs, mask)


_SQUARES = [triton.Config({"BLOCK": 32, "TWICE": 0}), triton.Config({"BLOCK": 64, "TWICE": 0}),
            triton.Config({"BLOCK": 64, "TWICE": 1})]
# y named an output although the helper reads it (as the README's advice for helper stores
# would have it): poisoned, every config wrote NaN, and y counted as unwritten by the baseline.
squares_named_kernel = triton.autotune(configs=_SQUARES, key=["n"], outputs=["y_ptr"])(
    triton.jit(_accumulate_squares))
# Not named: the baseline's launch shows that y is written, so it is restored for timing too.
squares_kernel = triton.autotune(configs=_SQUARES, key=["n"])(triton.jit(_accumulate_squares))


# TAIL=0 leaves the last 36 of 100 elements unwritten; two such configs agree on that.
@triton.autotune(configs=[triton.Config({"BLOCK": 32, "TAIL": 1}),
                          triton.Config({"BLOCK": 64, "TAIL": 1}),
                          triton.Config({"BLOCK": 64, "TAIL": 0}),
                          triton.Config({"BLOCK": 128, "TAIL": 0})],
                 key=["n"])
@triton.jit
def tail_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, TAIL: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & ((offs < 64) | (TAIL == 1))
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


# `ws` holds per-program partial sums in a layout that follows BLOCK: a workspace, whose
# contents after the launch no caller reads; `scratch=` says so.
def _row_sums_with_workspace(x_ptr, ws_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(ws_ptr + pid, tl.sum(x, axis=0))
    tl.store(out_ptr + offs, x * 2.0, mask=offs < n)


_WORKSPACE = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}),
              triton.Config({"BLOCK": 64})]
workspace_kernel = triton.autotune(configs=_WORKSPACE, key=["n"])(
    triton.jit(_row_sums_with_workspace))
workspace_scratch_kernel = triton.autotune(configs=_WORKSPACE, key=["n"], scratch=["ws_ptr"])(
    triton.jit(_row_sums_with_workspace))


# A library-style row sum that covers a row with one block (no loop over it): right only where
# BLOCK >= the row length. Listed with a too-small block first (the baseline) beside another
# too-small one and one right one, three outputs: the baseline has no support and is refused.
# Listed with a covering block first and a second covering one, the baseline stands.
def _row_sum_one_block(x_ptr, out_ptr, K, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * K + cols, mask=cols < K, other=0.0),
                                   axis=0))


row_sum_small_first_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}),
             triton.Config({"BLOCK": 64})], key=["K"])(triton.jit(_row_sum_one_block))
row_sum_covering_first_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}),
             triton.Config({"BLOCK": 16})], key=["K"])(triton.jit(_row_sum_one_block))


# Rows reached through the caller's row strides (`sx`, `sy`): given a slice of a wider buffer,
# the kernel reaches its elements through the gaps between them. SKIP=1 forgets each row's last
# element: the wrong config. Called with `y` the same tensor as `x`, it doubles in place.
@triton.autotune(configs=[triton.Config({"BLOCK": 16, "SKIP": 0}),
                          triton.Config({"BLOCK": 32, "SKIP": 1}),
                          triton.Config({"BLOCK": 32, "SKIP": 0})], key=["N"])
@triton.jit
def strided_double_kernel(x_ptr, y_ptr, N, sx, sy, BLOCK: tl.constexpr, SKIP: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N - SKIP
        x = tl.load(x_ptr + row * sx + cols, mask=mask)
        tl.store(y_ptr + row * sy + cols, 2 * x, mask=mask)


# A grid the caller sized for its largest block (2 programs of 128): a smaller block leaves the
# tail of `y` unwritten. Listed first, the small block is the baseline, and the wider writers
# agree with it wherever it writes.
def _double_blocks(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for i in range(0, BLOCK, 16):
        offs = tl.program_id(0) * BLOCK + i + tl.arange(0, 16)
        mask = offs < n
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


narrow_first_kernel = triton.autotune(  # one block against one: which is right is not known
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128})],
    key=["n"])(triton.jit(_double_blocks))
narrowest_first_kernel = triton.autotune(  # two wider blocks against one
    configs=[triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 32}),
             triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["n"])(triton.jit(_double_blocks))
wide_first_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})],
    key=["n"])(triton.jit(_double_blocks))


# Blocks of a padded output: `y` holds more than the `n` elements the caller reads, and each
# program stores its whole block, so each block size writes a different share of the padding.
def _double_padded(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n, other=0.0))


padded_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": b}) for b in (32, 64, 128)],
    key=["n"])(triton.jit(_double_padded))


# Stores masked to `n`, but UNMASKED=1 is a wrong config: it stores whole blocks, past `n`,
# over what the caller keeps there. Outnumbered by the blocks that write exactly `n`.
def _double_or_spill(x_ptr, y_ptr, n, BLOCK: tl.constexpr, UNMASKED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = 2 * tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if UNMASKED:
        tl.store(y_ptr + offs, value)
    else:
        tl.store(y_ptr + offs, value, mask=offs < n)


spilling_kernel = triton.autotune(
    configs=[*(triton.Config({"BLOCK": b, "UNMASKED": 0}) for b in (16, 32, 64)),
             triton.Config({"BLOCK": 64, "UNMASKED": 1})],
    key=["n"])(triton.jit(_double_or_spill))


# Row maxima: the one-block path stores them in `stats`, the multi-block path forgets to (a
# real bug of the BLOCK < n configs). The buggy block comes first: it is the baseline.
def _max_and_shift(x_ptr, y_ptr, stats_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if BLOCK >= n:
        cols = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * n + cols, mask=cols < n, other=-float("inf"))
        top = tl.max(v, axis=0)
        tl.store(y_ptr + row * n + cols, v - top, mask=cols < n)
        tl.store(stats_ptr + row, top)
    else:
        top = -float("inf")
        for start in range(0, n, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + row * n + cols, mask=cols < n, other=-float("inf"))
            top = tl.maximum(top, tl.max(v, axis=0))
        for start in range(0, n, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + row * n + cols, mask=cols < n)
            tl.store(y_ptr + row * n + cols, v - top, mask=cols < n)


stats_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": b}) for b in (16, 64, 128)],
    key=["n"])(triton.jit(_max_and_shift))


# y = 2x, and the sum of x into `total` where the call asks for it (SAVE); the BLOCK=128 config
# writes `total` whatever the call asks (a bug), over what the caller keeps there.
def _double_and_maybe_sum(x_ptr, y_ptr, total_ptr, n, SAVE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, 2 * x, mask=offs < n)
    if SAVE or BLOCK == 128:
        tl.store(total_ptr, tl.sum(x, axis=0))


optional_output_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": b}) for b in (64, 128, 256)],
    key=["n"])(triton.jit(_double_and_maybe_sum))


# A store without its tail mask: the BLOCK=64 config writes past the end of `y` (into the
# caller's other data, or memory no tensor of the program owns).
def _double_overrunning(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = 2 * tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, value, mask=(offs < n) | (BLOCK == 64))


overrun_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64)],
    key=["n"])(triton.jit(_double_overrunning))


# The program's own code raises while tuning: a config's pre_hook, and a kernel that fails to
# compile in every config. Under triton.autotune the program gets these exceptions as they are.
def _raising_hook(nargs):
    raise LookupError("the program's own hook")


def _copy_or_fail(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BROKEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BROKEN:
        x = x + tl.load(x_ptr + offs[:, None])  # a 2-D load added to a 1-D block: no config compiles
    tl.store(y_ptr + offs, x, mask=offs < n)


hook_raising_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, pre_hook=_raising_hook),
             triton.Config({"BLOCK": 32}, pre_hook=_raising_hook)],
    key=["n"])(triton.jit(_copy_or_fail))
maybe_broken_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
    key=["n", "BROKEN"])(triton.jit(_copy_or_fail))
