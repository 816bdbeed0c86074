"""Where a cold tuning's first timing goes (issue 16: 0.27 s against 0.017 s for the next).

A fresh Triton cache; a child process compiles two configs of one list into it, as compile
workers do; then this process, as a run worker with draw 0 made, times the first config and
then the second with `triton.testing.do_bench` under cProfile, and prints where each went.

    python benchmarks/first_timing_probe.py [--list softmax_8192]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _compile(name: str) -> None:
    """The child: compile the list's first two configs for draw 0's arguments."""
    from benchmarks.bench_gpu import _task_of
    from tunegate.autotune.runner import Runner

    task, _, _ = _task_of(name, smoke=False)
    runner = Runner(task, seed=0, baseline=None)
    for config in task.configs[:2]:
        runner.compile(config)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", default="softmax_8192")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _compile(args.list)
        return 0
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="probe-cache-")
    start = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--list", args.list, "--child"], check=True)
    print(f"compiled two configs in a child: {time.perf_counter() - start:.2f} s")
    import torch
    import triton.testing

    from benchmarks.bench_gpu import _task_of
    from tunegate.autotune.runner import Runner
    from tunegate.autotune.worker_child import build_ahead

    if not torch.cuda.is_available():
        print("skipped: needs a CUDA GPU")
        return 0
    task, _, _ = _task_of(args.list, smoke=False)
    runner = Runner(task, seed=0, baseline=None)
    pristine = runner.inputs(0)
    start = time.perf_counter()
    build_ahead(runner)  # as the run worker does while it waits: the launcher, the checks
    print(f"built ahead (launcher, checks' kernels): {time.perf_counter() - start:.2f} s")
    torch.cuda.synchronize()
    for config in task.configs[:2]:
        launch_args = runner.prepare(pristine)
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        first = time.perf_counter()
        task.run(launch_args, config)
        torch.cuda.synchronize()
        first = time.perf_counter() - first
        ms = triton.testing.do_bench(lambda: task.run(launch_args, config), warmup=5, rep=20,
                                     return_mode="median")
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
        print(f"\n{config.text()}: first launch {first:.3f} s, whole "
              f"{time.perf_counter() - start:.3f} s, {ms:.4f} ms per launch\n{text.getvalue()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
