"""tunegate against stock triton.autotune on a GPU, over the same candidate configs.

For each kernel, three phases, each in a fresh process with an empty Triton cache so that no
tuner inherits another's compiled kernels:

- truth:    every candidate checked against a float64 / eager reference on two fresh input
            draws, and timed (median of do_bench medians over two input sets);
- stock:    `triton.autotune` over the list: its choice, its tuning wall time, whether the
            choice is right;
- tunegate: `Tuner` with the shipped policy: choice, wall time, configs compiled, excluded per
            rule, rejected by the check, and the share of wall time spent in accuracy checks.

    python benchmarks/bench_gpu.py --out results/ [--kernels store_load softmax ...]

Writes one JSON per kernel; `benchmarks/report.py` turns them into RESULTS.md tables.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples import layernorm, matmul, softmax, splitk, store_load  # noqa: E402


def _points(task, **choices):
    """The candidate list: the product of `choices`, completed with the space's defaults."""
    names = list(choices)
    return tuple(task.space.complete(dict(zip(names, combo)))
                 for combo in itertools.product(*choices.values()))


def _with(task, points):
    return task.model_copy(update={"configs": points})


STORE_LOAD = _with(store_load.TASK_LARGE, _points(
    store_load.TASK_LARGE, BLOCK=(256, 1024), INNER_STAGES=(1, 2, 3), UNROLL=(1, 2),
    FLATTEN=(False, True), num_warps=(4,)))
SOFTMAX = _with(softmax.TASK_LARGE, _points(
    softmax.TASK_LARGE, ROWS=(1, 2, 4, 8), STAGES=(1, 2, 3), num_warps=(4, 8, 16)))
LAYERNORM = _with(layernorm.TASK_LARGE, _points(
    layernorm.TASK_LARGE, BLOCK=(1024, 2048, 4096), STAGES=(1, 2, 3), num_warps=(4, 8, 16)))
MATMUL = _with(matmul.TASK_LARGE, tuple(
    matmul.TASK_LARGE.space.complete(dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=64, GROUP_M=8,
                                          num_warps=w, num_stages=s))
    for (m, n) in ((64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128))
    for w in (4, 8) for s in (3, 4)))
SPLITK = _with(splitk.TASK_LARGE, _points(
    splitk.TASK_LARGE, BLOCK_M=(64, 128), BLOCK_N=(64, 128), BLOCK_K=(32,), SPLIT_K=(1, 2, 4)))

KERNELS = {
    "store_load": ("STORE_LOAD", lambda a: 3 * a["x_ptr"].numel() * 4),
    "softmax": ("SOFTMAX", lambda a: 2 * a["x_ptr"].numel() * a["x_ptr"].element_size()),
    "layernorm": ("LAYERNORM", lambda a: 2 * a["x_ptr"].numel() * a["x_ptr"].element_size()),
    "matmul": ("MATMUL", None),
    "splitk": ("SPLITK", None),
}


# -- phases (each runs in its own process) ----------------------------------------------------
def phase_truth(name: str) -> dict:
    import torch
    import triton.testing

    from tunegate.autotune.runner import Runner

    task = globals()[KERNELS[name][0]]
    runner = Runner(task, seed=1000, baseline=None)
    rows = []
    for config in task.configs:
        row = {"config": config.values}
        try:
            mismatch, _ = runner.check(config, 2)
            row["correct"] = mismatch is None
            row["mismatch"] = mismatch.summary() if mismatch else None
            row["ms"] = sum(runner.time(config, draw) for draw in (0, 1)) / 2
        except Exception as e:  # record and go on: a broken config is a finding
            row.update(correct=False, error=f"{type(e).__name__}: {str(e)[:300]}", ms=None)
        rows.append(row)
    out = {"rows": rows}
    bytes_fn = KERNELS[name][1]
    if bytes_fn is not None:
        x = torch.empty(2**28, device="cuda")
        y = torch.empty_like(x)
        copy_ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
        out["copy_gbps"] = 2 * x.numel() * 4 / copy_ms / 1e6
        out["kernel_bytes"] = bytes_fn(runner.inputs(0))
    return out


def phase_stock(name: str) -> dict:
    import torch
    import triton

    from tunegate.autotune.runner import Runner
    from tunegate.autotune.task import split_config

    task = globals()[KERNELS[name][0]]
    runner = Runner(task, seed=2000, baseline=None)
    args = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in runner.inputs(0).items()}
    configs = []
    for c in task.configs:
        kwargs, options = split_config(c)
        configs.append(triton.Config(kwargs, **options))
    tuned = triton.autotune(configs=configs, key=[])(task.kernel)
    torch.cuda.synchronize()
    start = time.perf_counter()
    tuned[task.grid](**args)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    best = tuned.best_config
    values = dict(best.kwargs)
    for opt in ("num_warps", "num_stages"):
        if opt in task.space.parameters:
            values[opt] = getattr(best, opt)
    choice = task.space.complete(values)
    mismatch, _ = runner.check(choice, 2)
    return {"choice": choice.values, "wall_s": wall, "correct": mismatch is None,
            "mismatch": mismatch.summary() if mismatch else None}


def phase_tunegate(name: str) -> dict:
    from tunegate.autotune import Budget, Store, TaskRef, Tuner
    from tunegate.policy import Policy

    attr = KERNELS[name][0]
    task = globals()[attr]
    store = Store(Path(tempfile.mkdtemp()) / "bench.sqlite")
    tuner = Tuner(task, TaskRef(str(Path(__file__).resolve()), attr), policy=Policy.load(),
                  store=store, strategy="exhaustive", budget=Budget(configs=len(task.configs)))
    result = tuner.run()
    return {"choice": result.best, "wall_s": result.wall_seconds,
            "check_s": result.check_seconds, "removals": result.removals,
            "measured": len(result.trials),
            "statuses": {s: result.count(s) for s in ("ok", "wrong", "error", "compile_error",
                                                      "timeout", "crashed")},
            "timing": result.timing}


def run_phase(name: str, phase: str, timeout: float) -> dict:
    env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix=f"cache-{phase}-")}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, __file__, "--phase", phase, "--kernels", name],
                          capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        return {"failed": proc.stderr[-3000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def environment() -> dict:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    return {"gpu": props.name, "capability": f"{props.major}.{props.minor}", "driver": driver,
            "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--phase", choices=["truth", "stock", "tunegate"])
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    if args.phase:  # a child process: one phase of one kernel, JSON on the last line
        fn = {"truth": phase_truth, "stock": phase_stock, "tunegate": phase_tunegate}
        print(json.dumps(fn[args.phase](args.kernels[0]), default=str))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment()
    for name in args.kernels:
        record = {"kernel": name, "environment": env,
                  "candidates": len(globals()[KERNELS[name][0]].configs)}
        for phase in ("truth", "stock", "tunegate"):
            start = time.perf_counter()
            record[phase] = run_phase(name, phase, args.timeout)
            print(f"{name:<11} {phase:<9} {time.perf_counter() - start:6.1f} s"
                  + ("  FAILED" if "failed" in record[phase] else ""), flush=True)
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
