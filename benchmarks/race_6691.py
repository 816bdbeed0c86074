"""How often triton#6691's kernel (`tunegate/reproducers/sum_trans_dot.py`) is wrong per config,
launched with plain Triton, no tunegate: the base rate a stress check must catch.

Each config: DRAWS input draws x LAUNCHES launches, the outputs poisoned with NaN before each
launch, compared with a float64 reference at the evidence's tolerances (rtol 1e-2, atol 1e-1),
launched back to back (`--sync` waits for each launch before the next). One JSON object.

    python benchmarks/race_6691.py [--draws 4] [--launches 250] [--sync]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tunegate.reproducers.sum_trans_dot import make_inputs, reference, sum_and_trans_dot  # noqa: E402

CONFIGS = [(64, 4, 1), (64, 4, 2), (64, 4, 3), (64, 4, 4), (64, 8, 4), (32, 4, 4)]


def measure(block: int, warps: int, stages: int, draws: int, launches: int, sync: bool) -> dict:
    """Wrong launches, and per draw how many launches differ bit for bit from its first."""
    wrong, differing = 0, []
    for seed in range(draws):
        args = make_inputs(seed, "cuda")
        want_a, want_ab = (t.float() for t in reference(**args))
        outs = []
        for _ in range(launches):
            args["out_a_ptr"].fill_(float("nan"))
            args["out_ab_ptr"].fill_(float("nan"))
            sum_and_trans_dot[(1,)](**args, BLOCK=block, num_warps=warps, num_stages=stages)
            if sync:
                torch.cuda.synchronize()
            outs.append((args["out_a_ptr"].clone(), args["out_ab_ptr"].clone()))
        torch.cuda.synchronize()
        wrong += sum(not (torch.allclose(a, want_a, 1e-2, 1e-1)
                          and torch.allclose(ab, want_ab, 1e-2, 1e-1)) for a, ab in outs)
        differing.append(sum(not (torch.equal(a, outs[0][0]) and torch.equal(ab, outs[0][1]))
                             for a, ab in outs))
    return {"launches": draws * launches, "wrong_launches": wrong,
            "launches_differing_from_first_per_draw": differing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--launches", type=int, default=250)
    parser.add_argument("--sync", action="store_true")
    args = parser.parse_args()
    results = {f"BLOCK={b} num_warps={w} num_stages={s}":
               measure(b, w, s, args.draws, args.launches, args.sync) for b, w, s in CONFIGS}
    print(json.dumps({"device": torch.cuda.get_device_name(), "sync": args.sync,
                      "results": results}, indent=1))


if __name__ == "__main__":
    main()
