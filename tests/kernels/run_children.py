"""A program for `tunegate run` whose own processes tune: a forked multiprocessing child, a
"forkserver" child, the (daemonic) workers of a "spawn" pool and a script run with
`sys.executable` (`--cuda`: on the GPU, without the forked child, which CUDA forbids). Each tunes a key of its own and prints whether its kernel was tunegate's,
its answer right and the wrong config (SHIFT=1, which reads the neighbours) left out."""

import multiprocessing as mp
import os
import subprocess
import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": block, "SHIFT": shift})
                          for block, shift in ((32, 0), (64, 1), (64, 0))], key=["n"])
@triton.jit
def negate_kernel(x, y, n, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # SHIFT=1 reads each element's neighbour: the wrong config
    tl.store(y + offs, -tl.load(x + offs + SHIFT, mask=offs + SHIFT < n), mask=offs < n)


def negate(n: int, device: str = "cpu") -> str:
    x = torch.randn(n, device=device)
    y = torch.empty(n, device=device)
    negate_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    chosen = negate_kernel.best_config.kwargs["SHIFT"]
    return (f"n={n} tunegate={type(negate_kernel).__module__.startswith('tunegate')} "
            f"right={torch.equal(y, -x)} wrong_left_out={chosen != 1}")


def report(n: int, device: str, queue) -> None:
    queue.put(negate(n, device))


if __name__ == "__main__":
    device = "cuda" if "--cuda" in sys.argv else "cpu"  # a forked child cannot use CUDA
    print("parent", negate(8, device), flush=True)
    for method, n in (("fork", 16), ("forkserver", 24))[device == "cuda":]:
        ctx = mp.get_context(method)
        queue = ctx.Queue()
        child = ctx.Process(target=report, args=(n, device, queue))
        child.start()
        print(method, queue.get(timeout=300), flush=True)
        child.join()
    with mp.get_context("spawn").Pool(2) as pool:
        for line in pool.starmap(negate, [(32, device), (40, device)]):
            print("pool", line, flush=True)
    done = subprocess.run([sys.executable, "-c", "from run_children import negate; "
                           f"print(negate(48, {device!r}))"], capture_output=True, text=True,
                          timeout=300,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    print("subprocess", done.stdout.strip() or done.stderr[-2000:], flush=True)
