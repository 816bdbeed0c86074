"""CPU cost of `import tunegate.policy` and one `tunegate policy explain`, as ratios to
`python -c "import pydantic"` (issue 10's CPU goal: <= 1.5x and <= 2.5x).

Each command runs in a fresh process; the three commands are interleaved, repeated, and the
medians compared, so load from other work on the machine hits all three alike. Bytecode
caches are allowed (written by the warm-up run), as for an installed package.
Usage: python benchmarks/cpu_import.py [--reps N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "import pydantic": [sys.executable, "-c", "import pydantic"],
    "import tunegate.policy": [sys.executable, "-c", "import tunegate.policy"],
    "policy explain": [sys.executable, "-m", "tunegate", "policy", "explain",
                       "block_sizes=[64, 64], num_warps=4, num_stages=3"],
}
GOALS = {"import tunegate.policy": 1.5, "policy explain": 2.5}


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TRITON_INTERPRET", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode caches
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for name, command in COMMANDS.items():  # warm the file cache once
        _wall(command, env)
    for _ in range(args.reps):
        for name, command in COMMANDS.items():
            times[name].append(_wall(command, env))
    base = statistics.median(times["import pydantic"])
    print(f"{args.reps} interleaved runs each, medians (python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs)")
    print(f"{'command':<24} {'median s':>9} {'ratio':>6} {'goal':>6}")
    for name, samples in times.items():
        median = statistics.median(samples)
        goal = f"<={GOALS[name]}" if name in GOALS else ""
        print(f"{name:<24} {median:9.3f} {median / base:6.2f} {goal:>6}")


if __name__ == "__main__":
    main()
