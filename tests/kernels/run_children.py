"""A program for `tunegate run` whose own processes tune: a forked multiprocessing child, a
"forkserver" child, the (daemonic) workers of a "spawn" pool and a script run with
`sys.executable` (`--cuda`: on the GPU, without the forked child, which CUDA forbids). Each tunes a key of its own and prints whether its kernel was tunegate's,
its answer right and the wrong config (VARIANT=1, which forgets the factor) left out."""

import multiprocessing as mp
import os
import subprocess
import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"VARIANT": v}) for v in range(3)], key=["n"])
@triton.jit
def double_kernel(x, y, n, VARIANT: tl.constexpr):
    offs = tl.arange(0, 64)
    mask = offs < n
    if VARIANT == 1:
        tl.store(y + offs, tl.load(x + offs, mask=mask), mask=mask)  # forgot the factor
    else:
        tl.store(y + offs, 2 * tl.load(x + offs, mask=mask), mask=mask)


def double(n: int, device: str = "cpu") -> str:
    x = torch.randn(n, device=device)
    y = torch.empty(n, device=device)
    double_kernel[(1,)](x, y, n)
    chosen = double_kernel.best_config.kwargs["VARIANT"]
    return (f"n={n} tunegate={type(double_kernel).__module__.startswith('tunegate')} "
            f"right={torch.equal(y, 2 * x)} wrong_left_out={chosen != 1}")


def report(n: int, device: str, queue) -> None:
    queue.put(double(n, device))


if __name__ == "__main__":
    device = "cuda" if "--cuda" in sys.argv else "cpu"  # a forked child cannot use CUDA
    print("parent", double(8, device), flush=True)
    for method, n in (("fork", 16), ("forkserver", 24))[device == "cuda":]:
        ctx = mp.get_context(method)
        queue = ctx.Queue()
        child = ctx.Process(target=report, args=(n, device, queue))
        child.start()
        print(method, queue.get(timeout=300), flush=True)
        child.join()
    with mp.get_context("spawn").Pool(2) as pool:
        for line in pool.starmap(double, [(32, device), (40, device)]):
            print("pool", line, flush=True)
    done = subprocess.run([sys.executable, "-c", "from run_children import double; "
                           f"print(double(48, {device!r}))"], capture_output=True, text=True,
                          timeout=300,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    print("subprocess", done.stdout.strip() or done.stderr[-2000:], flush=True)
