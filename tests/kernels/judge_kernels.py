"""Kernels for the judge tests: outputs whose right value is the poison, a store behind a
constexpr, a partly written output, tie-broken indices, a zeroed workspace, an input-dependent
bug. Tiny problems: they run under the interpreter."""

from __future__ import annotations

from itertools import count

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, Space

N = 64


def _choice(*values: int) -> Parameter:
    return Parameter(domain=Choice(choices=values, default=values[0]))


@triton.jit
def root(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SKIP: tl.constexpr):
    """y = sqrt(x): NaN where x < 0. SKIP=1 forgets to store the last element."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - SKIP
    tl.store(y_ptr + offs, tl.sqrt(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def root_inputs(seed: int, device: str) -> dict:
    """x with its last element negative: the right y there is NaN, the first poison."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, generator=g)
    x[-1] = -1.0
    return {"x_ptr": x.to(device), "y_ptr": torch.empty(N, device=device), "n": N}


ROOT = dict(name="root", kernel=root,
            space=Space(parameters={"BLOCK": _choice(N), "SKIP": _choice(0, 1)}),
            grid=(1,), make_inputs=root_inputs, outputs=("y_ptr",))


@triton.jit
def negative(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SKIP: tl.constexpr):
    """y = x < 0 (bools): True, the first bool poison, at the last element."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - SKIP
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) < 0, mask=mask)


def negative_inputs(seed: int, device: str) -> dict:
    args = root_inputs(seed, device)
    return {**args, "y_ptr": torch.empty(N, dtype=torch.bool, device=device)}


NEGATIVE = dict(name="negative", kernel=negative,
                space=Space(parameters={"BLOCK": _choice(N), "SKIP": _choice(0, 1)}),
                grid=(1,), make_inputs=negative_inputs, outputs=("y_ptr",))


@triton.jit
def scale(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr, WRONG: tl.constexpr,
          WRITE_Z: tl.constexpr = False):
    """y = 2x over the first n elements of a longer y; z only when the caller sets WRITE_Z."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 2 * x + WRONG, mask=mask)
    if WRITE_Z:
        tl.store(z_ptr + offs, x, mask=mask)


def scale_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(N, generator=g).to(device),
            "y_ptr": torch.empty(N + 16, device=device),  # the tail is never written
            "z_ptr": torch.empty(N, device=device), "n": N}


SCALE = Task(name="scale", kernel=scale,
             space=Space(parameters={"BLOCK": _choice(64, 32), "WRONG": _choice(0, 1)}),
             grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
             make_inputs=scale_inputs, outputs=("y_ptr", "z_ptr"))


@triton.jit
def row_max(x_ptr, val_ptr, idx_ptr, BLOCK: tl.constexpr, LAST: tl.constexpr,
            WRONG: tl.constexpr):
    """Each row's maximum and an index where it is; among ties the first (or, LAST, the last)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols)
    best = tl.max(x, axis=0)
    hit = tl.where(x == best, cols, -1 if LAST else BLOCK)
    where = tl.max(hit, axis=0) if LAST else tl.min(hit, axis=0)
    tl.store(val_ptr + row, best + WRONG)
    tl.store(idx_ptr + row, where)


_ties = count()


def launch_row_max(args: dict, config) -> None:
    """As a GPU whose tie-break changes from launch to launch (the interpreter's does not)."""
    row_max[(args["x_ptr"].shape[0],)](args["x_ptr"], args["val_ptr"], args["idx_ptr"],
                                       BLOCK=args["x_ptr"].shape[1], LAST=next(_ties) % 2,
                                       WRONG=config.values["WRONG"])


def row_max_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 3, (4, 16), generator=g).float()  # ties in every row
    return {"x_ptr": x.to(device), "val_ptr": torch.empty(4, device=device),
            "idx_ptr": torch.empty(4, dtype=torch.int32, device=device)}


ROW_MAX = Task(name="row_max", kernel=row_max, space=Space(parameters={"WRONG": _choice(0, 1)}),
               grid=(4,), launch=launch_row_max, make_inputs=row_max_inputs,
               outputs=("val_ptr", "idx_ptr"))


@triton.jit
def total(x_ptr, y_ptr, ws_ptr, n, BLOCK: tl.constexpr, TWICE: tl.constexpr):
    """y = 2x, and each block's sum added into the zeroed workspace ws (twice, if TWICE)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 2 * x, mask=mask)
    tl.atomic_add(ws_ptr, tl.sum(x, axis=0) * (1 + TWICE))


def total_inputs(seed: int, device: str, zeros: bool) -> dict:
    g = torch.Generator().manual_seed(seed)
    ws = torch.zeros(1) if zeros else torch.randn(1, generator=g)
    return {"x_ptr": torch.randn(N, generator=g).to(device),
            "y_ptr": torch.empty(N, device=device), "ws_ptr": ws.to(device), "n": N}


def total_reference(x_ptr, y_ptr, ws_ptr, n):
    """Adds into ws as the kernel does: right only if ws is zeroed first, as for the kernel."""
    ws_ptr += x_ptr.sum()
    return 2 * x_ptr


def total_task(zeros: bool) -> Task:
    return Task(name="total", kernel=total,
                space=Space(parameters={"BLOCK": _choice(32, 64), "TWICE": _choice(0, 1)}),
                grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                make_inputs=lambda seed, device: total_inputs(seed, device, zeros),
                outputs=("y_ptr",), reset_to_zero=("ws_ptr",), reference=total_reference,
                tolerances={"float32": (1e-4, 1e-4)})


@triton.jit
def shifted(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BUGGY: tl.constexpr):
    """y = x + 1; BUGGY: y = x where x[0] > 0.43, about one input in three."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    first = tl.load(x_ptr)
    bump = tl.where((first > 0.43) & (BUGGY != 0), 0.0, 1.0)
    tl.store(y_ptr + offs, x + bump, mask=offs < n)


def shifted_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(N, generator=g).to(device),
            "y_ptr": torch.empty(N, device=device), "n": N}


SHIFTED = Task(name="shifted", kernel=shifted,
               space=Space(parameters={"BLOCK": _choice(N), "BUGGY": _choice(0, 1)}),
               grid=(1,), make_inputs=shifted_inputs, outputs=("y_ptr",),
               reference=lambda x_ptr, y_ptr, n: x_ptr + 1)


@triton.jit
def rescale(x_ptr, y_ptr, BLOCK: tl.constexpr, VIA: tl.constexpr, FLUSH: tl.constexpr):
    """y = x, or (VIA=1) y = (x * 3) / 3, which rounds some elements otherwise in their last
    bit; FLUSH=1 zeroes the elements below 0.01 in magnitude (a wrong fast path)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if VIA:
        x = (x * 3.0) / 3.0
    if FLUSH:
        x = tl.where(tl.abs(x) < 0.01, 0.0, x)
    tl.store(y_ptr + offs, x)


def rescale_inputs(seed: int, device: str) -> dict:
    """Rows whose magnitudes span 1e-4 to 1e3 (log-uniform, either sign): independent
    elements, a row's largest magnitude says nothing of its small ones."""
    g = torch.Generator().manual_seed(seed)
    magnitude = 10.0 ** (torch.rand(4, 16, generator=g) * 7 - 4)
    sign = torch.randint(0, 2, (4, 16), generator=g) * 2 - 1
    return {"x_ptr": (magnitude * sign).to(device), "y_ptr": torch.empty(4, 16, device=device)}


RESCALE = Task(name="rescale", kernel=rescale,
               space=Space(parameters={"BLOCK": _choice(16), "VIA": _choice(0, 1),
                                       "FLUSH": _choice(0, 1)}),
               grid=(4,), make_inputs=rescale_inputs, outputs=("y_ptr",))


@triton.jit
def half_sums(x_ptr, y_ptr, n, BLOCK: tl.constexpr, WRONG: tl.constexpr):
    """y[row] = sum(x[row]) in float32 from float16 x, the running sum kept in float16 between
    blocks (as a kernel keeps a tile in the input's dtype): BLOCK decides where it rounds.
    WRONG=1 drops the row's last block."""
    row = tl.program_id(0)
    acc = tl.zeros((1,), dtype=tl.float16)
    for start in range(0, n - WRONG * BLOCK, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        block = tl.sum(tl.load(x_ptr + row * n + offs).to(tl.float32), axis=0)
        acc = (acc.to(tl.float32) + block).to(tl.float16)
    tl.store(y_ptr + row + tl.arange(0, 1), acc.to(tl.float32) * 1.0)


def half_sums_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(8, 128, generator=g) + 0.5).to(torch.float16)
    return {"x_ptr": x.to(device), "y_ptr": torch.empty(8, device=device), "n": 128}


HALF_SUMS = Task(name="half_sums", kernel=half_sums,
                 space=Space(parameters={"BLOCK": _choice(16, 32, 64), "WRONG": _choice(0, 1)}),
                 grid=(8,), make_inputs=half_sums_inputs, outputs=("y_ptr",))


@triton.jit
def odd_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """A copy whose BLOCK=48 cannot be built (tl.arange needs a power of two)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def odd_copy_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(N, generator=g).to(device),
            "y_ptr": torch.empty(N, device=device), "n": N}


ODD_BASELINE = Task(name="odd_copy", kernel=odd_copy,
                    space=Space(parameters={"BLOCK": _choice(48, 32, 64)}),
                    grid=lambda meta: (triton.cdiv(N, meta["BLOCK"]),),
                    make_inputs=odd_copy_inputs, outputs=("y_ptr",))


@triton.jit
def column_sums(x_ptr, y_ptr, rows, COLS: tl.constexpr, BLOCK: tl.constexpr,
                WRONG: tl.constexpr):
    """y[c] = sum over rows of x[:, c], in float32 whatever x's dtype, BLOCK rows at a time:
    BLOCK decides the order of the additions. WRONG=1 drops the last block of rows."""
    cols = tl.arange(0, COLS)
    acc = tl.zeros((BLOCK, COLS), dtype=tl.float32)
    for start in range(0, rows - WRONG * BLOCK, BLOCK):
        r = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + r[:, None] * COLS + cols[None, :], mask=r[:, None] < rows,
                       other=0.0).to(tl.float32)
    tl.store(y_ptr + cols, tl.sum(acc, axis=0))


def centred_inputs(dtype: torch.dtype):
    """x of 256 x 8 values of size ~100 whose columns are centred: every column sum cancels to
    ~1e-4, far below its rounding error (~1e-4 * 100 * 16): one row, every element near
    cancellation (a bias gradient of normalised activations)."""
    def make(seed: int, device: str) -> dict:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(256, 8, generator=g) * 100
        x = (x - x.mean(0, keepdim=True)).to(dtype)
        return {"x_ptr": x.to(device), "y_ptr": torch.empty(8, device=device), "rows": 256,
                "COLS": 8}
    return make


def column_sums_task(dtype: torch.dtype, reference=None) -> Task:
    return Task(name="column_sums", kernel=column_sums,
                space=Space(parameters={"BLOCK": _choice(8, 64), "WRONG": _choice(0, 1)}),
                grid=(1,), make_inputs=centred_inputs(dtype), outputs=("y_ptr",),
                reference=reference)


@triton.jit
def tiny_gradient(x_ptr, t_ptr, dx_ptr, n, BLOCK: tl.constexpr, VIA: tl.constexpr,
                  DOUBLE: tl.constexpr):
    """dx = 2e-6 * (x - t) / n, the gradient of a small loss (every |dx| ~ 1e-9): VIA=1
    multiplies in another order (other roundings); DOUBLE=1 returns it doubled (wrong)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(x_ptr + offs, mask=mask) - tl.load(t_ptr + offs, mask=mask)
    if VIA:
        g = d * (2e-6 / n)
    else:
        g = 2e-6 * d / n
    tl.store(dx_ptr + offs, g * (1 + DOUBLE), mask=mask)


def tiny_gradient_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(2000, generator=g).to(device),
            "t_ptr": torch.randn(2000, generator=g).to(device),
            "dx_ptr": torch.empty(2000, device=device), "n": 2000}


TINY_GRADIENT = Task(name="tiny_gradient", kernel=tiny_gradient,
                     space=Space(parameters={"BLOCK": _choice(256, 1024), "VIA": _choice(0, 1),
                                             "DOUBLE": _choice(0, 1)}),
                     grid=lambda meta: (triton.cdiv(2000, meta["BLOCK"]),),
                     make_inputs=tiny_gradient_inputs, outputs=("dx_ptr",))


@triton.jit
def layer_norm_rows(x_ptr, y_ptr, N, CHUNK: tl.constexpr, UNBIASED: tl.constexpr):
    """y = (x - mean) / sqrt(var + 1e-5) per row, mean and variance summed CHUNK elements at a
    time (CHUNK decides the order of the additions). UNBIASED=1 divides the variance by N - 1:
    every output off by about 1/(2N)."""
    row = tl.program_id(0)
    acc = tl.zeros((CHUNK,), dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((CHUNK,), dtype=tl.float32)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        d = tl.where(cols < N, tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0) - mean,
                     0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / (N - UNBIASED) + 1e-5)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * N + cols, (x - mean) * rstd, mask=cols < N)


def offset_rows_inputs(seed: int, device: str) -> dict:
    """Rows of mean 100 and spread 0.5 (activations far from zero)."""
    g = torch.Generator().manual_seed(seed)
    x = 100 + 0.5 * torch.randn(4, 500, generator=g)
    return {"x_ptr": x.to(device), "y_ptr": torch.empty(4, 500, device=device), "N": 500}


LAYER_NORM_OFFSET = Task(name="layer_norm_rows", kernel=layer_norm_rows,
                         space=Space(parameters={"CHUNK": _choice(16, 64),
                                                 "UNBIASED": _choice(0, 1)}),
                         grid=(4,), make_inputs=offset_rows_inputs, outputs=("y_ptr",))
