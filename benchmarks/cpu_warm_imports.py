"""What `tunegate run`'s warm-up costs a program while it imports: the seconds a program spends
importing libraries built on torch (after torch itself), and the whole process, stock against
`tunegate run` warmed up (TUNEGATE_WARM=1), deferred (the program tunes nothing, so from its
second run on `run_memory` defers the warm-up) and without any (TUNEGATE_WARM=0),
interleaved, medians.

The warm-up starts worker processes and mirrors the program's imports in them (`mirror`):
work beside the program that must not slow it down. Usage:
    python benchmarks/cpu_warm_imports.py [--reps N] [--modules torch._dynamo,sympy,...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = """import time
import torch, triton
start = time.perf_counter()
{imports}
print(time.perf_counter() - start)
"""
DEFAULT_MODULES = ("torch._dynamo,torch.fx,torch.distributed,sympy,torch.utils.data,numpy.testing,"
                   "hypothesis,pydantic")


def _seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The program's imports' seconds, and the process's."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1]), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--modules", default=DEFAULT_MODULES)
    args = parser.parse_args()
    imports = "\n".join(f"import {m}" for m in args.modules.split(","))
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "imports.py"
        program.write_text(PROGRAM.format(imports=imports))
        env = dict(os.environ, PYTHONPATH=str(ROOT), TUNEGATE_STORE=str(Path(folder) / "s"))
        env.pop("TRITON_INTERPRET", None)
        runs = {"stock python": ([sys.executable, str(program)], env),
                "tunegate run, TUNEGATE_WARM=1": (
                    [sys.executable, "-m", "tunegate", "run", str(program)],
                    dict(env, TUNEGATE_WARM="1")),
                "tunegate run, deferred": (
                    [sys.executable, "-m", "tunegate", "run", str(program)], env),
                "tunegate run, TUNEGATE_WARM=0": (
                    [sys.executable, "-m", "tunegate", "run", str(program)],
                    dict(env, TUNEGATE_WARM="0"))}
        _seconds(*runs["tunegate run, deferred"])  # a first run, for the memory to defer on
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for _ in range(args.reps):
            for name, (command, run_env) in runs.items():
                times[name].append(_seconds(command, run_env))
    base = [statistics.median(t[i] for t in times["stock python"]) for i in (0, 1)]
    print(f"{args.reps} interleaved runs each, medians ({os.cpu_count()} CPUs): {args.modules}")
    print(f"{'':<32} {'imports':>9} {'':>6} {'process':>9}")
    for name, samples in times.items():
        imports, process = (statistics.median(t[i] for t in samples) for i in (0, 1))
        print(f"{name:<32} {imports:7.2f} s {imports / base[0]:5.2f}x {process:7.2f} s "
              f"{process / base[1]:5.2f}x")


if __name__ == "__main__":
    main()
