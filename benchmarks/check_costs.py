"""What each part of tunegate's checking costs on one list, in this process (issue 16: checks
<= 5% of tuning time).

A tuning's checks are: the compare of each timed config's output (after its short timing and
after each re-timing of a contender), an experimental config's quick check on a second draw
(two launches, two compares: `second_draw_check_s`), and the winner's stress check (200 launches over 12 fresh draws, each launch restored, poisoned and
compared bit for bit with its draw's first). Each part is timed here on a GPU with the list's
first config, the median of `--repeat` runs, and the stress check once more under cProfile.

    python benchmarks/check_costs.py [--lists softmax_8192 matmul_4096] [--json FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _seconds(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of `fn` (the device synchronised after each run)."""
    from tunegate.autotune.device import sync

    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def costs(name: str, repeat: int) -> dict[str, Any]:
    from benchmarks.bench_gpu import _task_of
    from tunegate.autotune.runner import Runner
    from tunegate.autotune.stress import StressCheck

    task, _, _ = _task_of(name, smoke=False)
    config = task.configs[0]
    runner = Runner(task, seed=0, baseline=None)
    runner.warm(config)
    pristine, expected = runner.draw(0)
    fresh = iter(range(10**6, 10**7))
    args = runner._launch(pristine, config)
    out: dict[str, Any] = {
        "list": name, "config": config.text(), "kind": runner.kind,
        "make_inputs_s": _seconds(lambda: runner._make(next(fresh)), repeat),
        "expected_s": _seconds(lambda: runner._expected(pristine), repeat),
        "prepare_s": _seconds(lambda: runner.prepare(pristine, into=args), repeat),
        "launch_s": _seconds(lambda: runner._launch(pristine, config, into=args), repeat),
        "compare_s": _seconds(lambda: runner.mismatch(args, expected), repeat),
        "second_draw_check_s": _seconds(lambda: runner.check(config, 1, first=1), repeat),
        "short_timing_s": _seconds(lambda: runner.time(config, full=False), repeat),
    }
    for tuned in (3.0, 30.0):
        settings = StressCheck()
        out[f"stress_after_{tuned:g}s"] = _seconds(
            lambda: runner.stress(config, settings.resolved(runner.kind, tuned)), 3)
        out[f"stress_after_{tuned:g}s_launches"] = runner.stress(
            config, settings.resolved(runner.kind, tuned)).launches
    profile = cProfile.Profile()
    profile.runcall(runner.stress, config, StressCheck().resolved(runner.kind, 3.0))
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    out["stress_profile"] = text.getvalue()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", nargs="+", default=["softmax_8192", "matmul_4096"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    results = []
    for name in args.lists:
        result = costs(name, args.repeat)
        results.append(result)
        for key, value in result.items():
            if key != "stress_profile":
                print(f"{name:<13} {key:<28} {value:.4f}" if isinstance(value, float)
                      else f"{name:<13} {key:<28} {value}")
        print(result["stress_profile"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
