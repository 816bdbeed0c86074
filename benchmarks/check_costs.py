"""What each part of tunegate's checking costs on one list, in this process (issue 16: checks
<= 5% of tuning time).

A tuning's checks are: the compare of each timed config's output (after its first timing; a
contender's re-timings are not compared: `retime_s`), an experimental config's quick check on
a second draw (`second_draw_check_s`), and the winner's stress check (a pipelined winner: 200
launches over 12 fresh draws, each launch restored, poisoned and compared bit for bit with
its draw's first; one without race hazards: a launch per draw, `stress_no_race_s`). Each part is timed here on a GPU with the list's
first config, the median of `--repeat` runs, and the stress check once more under cProfile.
`--dropin` measures them as `tunegate run` checks a program's call: no reference, the first
config as the baseline, draws made from the call's own tensors (`inputs.CallerData`), and
adds the device's time per operation (torch.profiler) for the stress check of a config with
and without race hazards, and for the compare after a timing.

    python benchmarks/check_costs.py [--lists softmax_8192 matmul_4096] [--dropin] [--smoke]
                                     [--json FILE]
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


def _device_ops(fn: Callable[[], Any], rows: int = 12) -> str:
    """The device's time per operation over one run of `fn` (torch.profiler), largest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA]
                                           if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        fn()
    key = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=90)


def _runner(name: str, dropin: bool, smoke: bool) -> tuple[Any, Any]:
    """The list's task in a Runner, as `tunegate run` makes it if `dropin`, and its first
    config."""
    from benchmarks.bench_gpu import _task_of
    from tunegate.autotune.device import device_kind
    from tunegate.autotune.inputs import CallerData
    from tunegate.autotune.runner import Runner

    task, _, _ = _task_of(name, smoke=smoke)
    config = task.configs[0]
    if not dropin:
        return Runner(task, seed=0, baseline=None), config
    device = "cuda" if device_kind() == "gpu" else "cpu"
    call = CallerData(task.make_inputs(0, device), seed=0)
    return Runner(task.model_copy(update={"reference": None}), seed=0, baseline=config,
                  inputs=call), config


def costs(name: str, repeat: int, dropin: bool = False, smoke: bool = False) -> dict[str, Any]:
    from tunegate.autotune.stress import StressCheck

    runner, config = _runner(name, dropin, smoke)
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
    if dropin:
        out["stress_no_race_s"] = _seconds(lambda: runner.stress(
            config, StressCheck().resolved(runner.kind, 3.0, can_race=False)), 3)
        out["retime_s"] = _seconds(lambda: runner.time(config, full=False, compare=False),
                                   repeat)
        for part, fn in (
                ("stress", lambda: runner.stress(config, StressCheck().resolved(runner.kind, 3.0))),
                ("stress_no_race", lambda: runner.stress(
                    config, StressCheck().resolved(runner.kind, 3.0, can_race=False))),
                ("fresh_draw", lambda: runner._fresh_draw(next(fresh))),
                ("compare", lambda: runner.mismatch(args, expected))):
            out["stress_profile"] += f"\n{part}: device time per operation\n" + _device_ops(fn)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", nargs="+", default=["softmax_8192", "matmul_4096"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dropin", action="store_true",
                        help="check as `tunegate run` does: a baseline, the call's own data")
    parser.add_argument("--smoke", action="store_true", help="toy sizes (a dry run)")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    results = []
    for name in args.lists:
        result = costs(name, args.repeat, args.dropin, args.smoke)
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
