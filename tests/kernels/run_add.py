"""A stock-triton program for `tunegate run`: one autotuned add; `--top-level` launches it from
the script's top level (no `__main__` guard), `--no-launch` launches nothing, and
`--wrong-baseline` launches a kernel whose first config (the baseline) is the wrong one;
`--cuda` puts the tensors on the GPU."""

import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.autotune(configs=[triton.Config({"VARIANT": v}) for v in range(4)], key=["n"])
@triton.jit
def double_kernel(x, y, n, VARIANT: tl.constexpr):
    offs = tl.arange(0, 64)
    mask = offs < n
    if VARIANT == 0:
        tl.store(y + offs, tl.load(x + offs, mask=mask), mask=mask)  # forgot the factor
    else:
        tl.store(y + offs, 2 * tl.load(x + offs, mask=mask), mask=mask)


DEVICE = "cuda" if "--cuda" in sys.argv else "cpu"


def add(n: int) -> bool:
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = torch.empty(n, device=DEVICE)
    add_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, out, n)
    return torch.allclose(out, x + y)


if "--top-level" in sys.argv:  # what the guard below is for: workers would re-run this line,
    add(64)  # so it is tuned in the program's process

if __name__ == "__main__":
    if "--wrong-baseline" in sys.argv:
        double_kernel[(1,)](torch.randn(64, device=DEVICE), torch.empty(64, device=DEVICE), 64)
    elif "--no-launch" not in sys.argv:
        print("ok", add(64), add(48))
