"""triton.autotune-style use: a list of triton.Config and a reference, tuned on first call."""

import triton
import triton.language as tl

import tunegate


def reference(x_ptr, y_ptr, n):
    return x_ptr.double().sum().reshape(1).to(y_ptr.dtype)


@tunegate.autotuned(
    configs=[triton.Config({"BLOCK": b, "SPLIT": s}, num_warps=4)
             for b in (32, 64) for s in (1, 2)],
    features={"SPLIT": "split_k"}, key=["n"], outputs=["y_ptr"], reference=reference,
    grid=lambda meta: (meta["SPLIT"],))
@triton.jit
def total(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(pid * BLOCK, n, BLOCK * SPLIT):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if SPLIT == 1:
        tl.store(y_ptr, tl.sum(acc, axis=0))
    else:
        tl.atomic_add(y_ptr, tl.sum(acc, axis=0))  # into an output nobody zeroed
