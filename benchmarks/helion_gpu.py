"""Helion's softmax and matmul autotuned on a GPU through tunegate's adapter: what the gate removed,
what it checked, the winner and its time, as one JSON object per kernel.

    python benchmarks/helion_gpu.py [--effort quick] [--generations 3] [--kernels matmul] > helion.json
"""

from __future__ import annotations

import argparse
import json
import time

import helion
import helion.language as hl
import torch

from tunegate.helion import HelionGate


def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _k, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc.to(x.dtype)
    return out


def run(name, fn, args, reference, effort, generations):
    gate = HelionGate(reference=reference)
    limit = {} if generations is None else {"autotune_max_generations": generations}
    kernel = helion.kernel(fn, autotune_effort=effort, autotune_random_seed=0, **limit,
                           **gate.settings())
    start = time.perf_counter()
    out = kernel(*args)
    tune_s = time.perf_counter() - start
    torch.testing.assert_close(out, reference(*args), rtol=2e-2, atol=2e-2)
    bound = kernel.bind(args)
    for _ in range(3):
        kernel(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        kernel(*args)
    torch.cuda.synchronize()
    best = getattr(bound, "_config", None)
    return {"kernel": name, "tune_s": round(tune_s, 1),
            "ms": round((time.perf_counter() - start) / 20 * 1e3, 4),
            "winner": None if best is None else dict(best), "right": True,
            "gate": vars(gate.counts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--effort", default="quick", choices=["quick", "full"])
    parser.add_argument("--generations", type=int, default=None,
                        help="at most this many generations of Helion's search")
    parser.add_argument("--kernels", nargs="+", default=["softmax", "matmul"],
                        choices=["softmax", "matmul"], help="which kernels, in this order")
    args = parser.parse_args()
    x = torch.randn(4096, 2048, device="cuda", dtype=torch.float16)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    kernels = [("softmax", softmax, (x,), lambda t: torch.softmax(t.float(), 1).to(t.dtype)),
               ("matmul", matmul, (a, b), lambda p, q: (p.float() @ q.float()).to(p.dtype))]
    for name, fn, call, reference in [k for want in args.kernels for k in kernels
                                      if k[0] == want]:  # each row as soon as it is done
        row = run(name, fn, call, reference, args.effort, args.generations)
        print(json.dumps(row, default=str), flush=True)


if __name__ == "__main__":
    main()
