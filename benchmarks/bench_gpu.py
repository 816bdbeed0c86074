"""tunegate against stock triton.autotune over the same candidate lists, cold, in one run.

For each list, each phase runs in a fresh process; every cold phase gets an empty Triton cache
(a new TRITON_CACHE_DIR), so no tuner inherits another's compiled kernels:

- truth:    every candidate checked against the reference on two fresh input draws and timed
            (on a GPU the median of TRUTH_ROUNDS do_bench medians, the list timed in turns,
            each round starting elsewhere in it; one launch under the interpreter);
- stock:    `triton.autotune` over the list: tuning wall time (its first call), process wall
            time, its choice and whether the choice is right. Skipped under the interpreter:
            stock `triton.autotune` benchmarks through the active GPU driver, which Triton's
            interpreter does not provide;
- tunegate: `Tuner` with the shipped policy, exhaustive over the list, in a process run by
            `tunegate run` (its workers start with the process, as for any program run so):
            tuning and process wall time, choice, statuses, check seconds and every other
            field `TuneResult` exposes;
- warm:     a second tunegate run on the same store and Triton cache (the cached best is
            reused), then the chosen config's first launch;
- plain:    the chosen config's first launch alone on that warm cache: the kernel's own cost,
            against which the warm start's overhead is measured;
- verdict:  the configs the tuners chose and the truth's VERDICT_TOP fastest correct ones,
            timed again side by side in one process (VERDICT_ROUNDS rounds in turns, each
            config keeping the median): chosen/best without the clocks of two processes
            between them (the truth's own timings of one config moved by up to 10% from one
            process to the next on an H200);
- profile:  with `--profile`, the tunegate phase again on an empty cache and store, tuned in
            the benchmark's own process (no run worker) under cProfile: where its time goes.

    python benchmarks/bench_gpu.py --out DIR [--lists softmax_8192 matmul_4096 ...]
                                   [--budget-s 500] [--timeout 240] [--smoke] [--profile]

`--smoke` runs every list at toy size with two configs (it runs under the interpreter, on a
machine without a GPU). Writes one JSON per list as soon as it is done;
`benchmarks/report.py` turns them into RESULTS.md tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples import layernorm, matmul, softmax, splitk, store_load  # noqa: E402

THIS = "benchmarks.bench_gpu"  # the lists below, as the phases find them
TRUTH_ROUNDS = 3  # timings of each config by the truth phase on a GPU, in turns


def _points(task: Any, **choices: Any) -> tuple:
    """The candidate list: the product of `choices`, completed with the space's defaults."""
    names = list(choices)
    return tuple(task.space.complete(dict(zip(names, combo)))
                 for combo in itertools.product(*choices.values()))


def _with(task: Any, points: tuple) -> Any:
    return task.model_copy(update={"configs": points})


# -- the five kernels of the first comparison: full lists, and two configs each for --smoke --
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

STORE_LOAD_SMOKE = _with(store_load.TASK, _points(store_load.TASK, INNER_STAGES=(1, 2)))
SOFTMAX_SMOKE = _with(softmax.TASK, _points(softmax.TASK, ROWS=(1, 2)))
LAYERNORM_SMOKE = _with(layernorm.TASK, _points(layernorm.TASK, BLOCK=(16, 32)))
MATMUL_SMOKE = _with(matmul.TASK, _points(matmul.TASK, BLOCK_M=(16, 32)))
SPLITK_SMOKE = _with(splitk.TASK, _points(splitk.TASK, SPLIT_K=(1, 2)))

# name -> (module, attribute of the full list, attribute of the smoke list, bytes moved or None)
LISTS: dict[str, tuple[str, str, str, Any]] = {
    "softmax_8192": ("examples.tutorial_softmax", "TASK_ANCHOR", "TASK_SMOKE",
                     lambda a: 2 * a["input_ptr"].numel() * a["input_ptr"].element_size()),
    "matmul_4096": ("examples.tutorial_matmul", "TASK_ANCHOR", "TASK_SMOKE", None),
    "store_load": (THIS, "STORE_LOAD", "STORE_LOAD_SMOKE", lambda a: 3 * a["x_ptr"].numel() * 4),
    "softmax": (THIS, "SOFTMAX", "SOFTMAX_SMOKE",
                lambda a: 2 * a["x_ptr"].numel() * a["x_ptr"].element_size()),
    "layernorm": (THIS, "LAYERNORM", "LAYERNORM_SMOKE",
                  lambda a: 2 * a["x_ptr"].numel() * a["x_ptr"].element_size()),
    "matmul": (THIS, "MATMUL", "MATMUL_SMOKE", None),
    "splitk": (THIS, "SPLITK", "SPLITK_SMOKE", None),
}
ANCHORS = ("softmax_8192", "matmul_4096")
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # triton.Config's, not kwargs
STOCK_NEEDS_GPU = ("stock triton.autotune benchmarks through the active GPU driver; Triton's "
                   "interpreter (TRITON_INTERPRET=1) provides none, so it cannot run here")
PHASES = ("truth", "stock", "tunegate", "warm", "plain", "verdict")
VERDICT_TOP, VERDICT_ROUNDS = 4, 5
PROFILED = 45  # functions listed by the profile phase, by cumulative time


# -- what a phase needs ------------------------------------------------------------------------
def _task_of(name: str, smoke: bool) -> tuple[Any, str, str]:
    """(task, file defining it, attribute name): workers re-import the file to find the task."""
    module_name, full, small, _ = LISTS[name]
    module = sys.modules[__name__] if module_name == THIS else importlib.import_module(module_name)
    attr = small if smoke else full
    return getattr(module, attr), str(Path(module.__file__).resolve()), attr


def _values(config: Any) -> dict:
    """A config's values as a plain dict, whether it is a mapping or a `Config`."""
    if isinstance(config, Mapping):
        return dict(config)
    values = config.values
    return dict(values() if callable(values) else values)


def _config_of(task: Any, values: Any) -> Any:
    return task.space.complete(_values(values))


def _on_gpu() -> bool:
    import torch

    return os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _inputs(task: Any, seed: int) -> dict:
    return task.make_inputs(seed, "cuda" if _on_gpu() else "cpu")


def _expected(task: Any, args: dict) -> dict:
    """The reference's outputs by name (the reference may return a tensor, tuple or dict)."""
    import torch

    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    got = task.reference(**fresh)
    if got is None:
        return {n: fresh[n] for n in task.outputs}
    if isinstance(got, dict):
        return got
    return dict(zip(task.outputs, got if isinstance(got, (tuple, list)) else (got,)))


def _wrong(task: Any, args: dict, expected: dict) -> str | None:
    """None if every output matches within the task's tolerance, else what differs."""
    import torch

    from tunegate.autotune import DEFAULT_TOLERANCES

    for name, want in expected.items():
        got = args[name]
        dtype = str(want.dtype).removeprefix("torch.")
        rtol, atol = {**DEFAULT_TOLERANCES, **task.tolerances}.get(dtype, (0.0, 0.0))
        close = torch.isclose(got.to(want.dtype), want, rtol=rtol, atol=atol, equal_nan=False)
        if not bool(close.all()):
            bad = int((~close).sum())
            return f"{name}: {bad} of {want.numel()} elements differ (rtol {rtol}, atol {atol})"
    return None


_DRAWS: dict[int, tuple[dict, dict]] = {}


def _draw(task: Any, seed: int) -> tuple[dict, dict]:
    """Pristine inputs and expected outputs for one seed, made once per process."""
    if seed not in _DRAWS:
        args = _inputs(task, seed)
        _DRAWS[seed] = (args, _expected(task, args))
    return _DRAWS[seed]


def _check(task: Any, config: Any, seeds: tuple[int, ...]) -> str | None:
    """Run `config` on fresh draws (outputs poisoned first); the first difference, or None."""
    import torch

    for seed in seeds:
        pristine, expected = _draw(task, seed)
        args = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in pristine.items()}
        for name in task.outputs:
            if args[name].dtype.is_floating_point:
                args[name].fill_(float("nan"))
        task.run(args, config)
        _sync()
        problem = _wrong(task, args, expected)
        if problem:
            return f"seed {seed}: {problem}"
    return None


def _time_ms(task: Any, config: Any, args: dict) -> float:
    if _on_gpu():
        import triton.testing

        return triton.testing.do_bench(lambda: task.run(args, config), return_mode="median")
    start = time.perf_counter()
    task.run(args, config)
    return 1e3 * (time.perf_counter() - start)


def _process_seconds() -> float:
    """Seconds since the parent started this process (python start-up and imports included)."""
    return time.time() - float(os.environ["BENCH_SPAWNED_AT"])


# -- phases (each runs in its own process) ------------------------------------------------------
def phase_truth(name: str, smoke: bool, _: dict) -> dict:
    task, _, _ = _task_of(name, smoke)
    rows = []
    timing_args = _inputs(task, 1000)
    for config in task.configs:
        row: dict[str, Any] = {"config": _values(config)}
        try:
            row["error_found"] = _check(task, config, (2000, 2001))
            row["correct"] = row["error_found"] is None
        except Exception as e:  # record and go on: a broken config is a finding
            row.update(correct=False, error=f"{type(e).__name__}: {str(e)[:300]}", ms=None)
        rows.append(row)
    # Timed in TRUTH_ROUNDS rounds, each in another order, each config keeping the median: a
    # GPU's clocks move within seconds, and one pass would time each config at other clocks.
    runnable = [(row, config) for row, config in zip(rows, task.configs) if "error" not in row]
    for r in range(TRUTH_ROUNDS if _on_gpu() else 1):
        turn = runnable[r * len(runnable) // TRUTH_ROUNDS:] + \
            runnable[:r * len(runnable) // TRUTH_ROUNDS]
        for row, config in turn:
            try:
                row.setdefault("ms_rounds", []).append(_time_ms(task, config, timing_args))
            except Exception as e:  # noqa: BLE001 - as above
                row.update(correct=False, error=f"{type(e).__name__}: {str(e)[:300]}")
    for row in rows:
        times = row.pop("ms_rounds", None) if "error" in row else row.get("ms_rounds")
        row["ms"] = statistics.median(times) if times and "error" not in row else None
    out: dict[str, Any] = {"rows": rows, "timing": "do_bench median" if _on_gpu()
                           else "one launch under the interpreter"}
    bytes_fn = LISTS[name][3]
    if bytes_fn is not None and _on_gpu():
        import torch
        import triton.testing

        x = torch.empty(2**28, device="cuda")
        y = torch.empty_like(x)
        copy_ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
        out["copy_gbps"] = 2 * x.numel() * 4 / copy_ms / 1e6
        out["kernel_bytes"] = bytes_fn(timing_args)
    return out


def phase_stock(name: str, smoke: bool, _: dict) -> dict:
    if not _on_gpu():
        return {"skipped": STOCK_NEEDS_GPU}
    import triton

    task, _, _ = _task_of(name, smoke)
    configs = []
    for c in task.configs:
        values = _values(c)
        options = {k: values.pop(k) for k in LAUNCH_OPTIONS if k in values}
        configs.append(triton.Config(values, **{k: v for k, v in options.items()
                                                if v is not None}))
    tuned = triton.autotune(configs=configs, key=[])(task.kernel)
    args = _inputs(task, 3000)
    _sync()
    start = time.perf_counter()
    tuned[task.grid](**args)
    _sync()
    wall = time.perf_counter() - start
    process_wall = _process_seconds()
    best = tuned.best_config
    values = dict(best.kwargs)
    for opt in LAUNCH_OPTIONS:
        if opt in task.space.parameters:
            values[opt] = getattr(best, opt)
    choice = _config_of(task, values)
    del args
    problem = _check(task, choice, (3001, 3002))
    return {"choice": _values(choice), "wall_s": wall, "process_wall_s": process_wall,
            "correct": problem is None, "error_found": problem}


def _tuner(task: Any, file: str, attr: str, store_path: str, here: bool = False) -> Any:
    """The tunegate phase's tuner; `here`: measuring in this process, with no run worker."""
    from tunegate.autotune import Budget, Store, TaskRef, Tuner
    from tunegate.policy import Policy

    ref = TaskRef(file, attr)
    return Tuner(task, ref.here(task) if here else ref, policy=Policy.load(), store=Store(Path(store_path)),
                 strategy="exhaustive", budget=Budget(configs=len(task.configs)))


def _plain(obj: Any) -> dict:
    """The fields of a pydantic model, a dataclass or a plain object, as JSON-ready data."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj):
        return json.loads(json.dumps(dataclasses.asdict(obj), default=str))
    return dict(obj) if isinstance(obj, Mapping) else dict(vars(obj))


def _result_fields(result: Any) -> dict:
    """Every field TuneResult exposes, trials summarised: the report reads what it knows."""
    fields = _plain(result)
    trials = fields.pop("trials", [])
    statuses: dict[str, int] = {}
    for t in trials:
        status = str(_plain(t).get("status"))
        statuses[status] = statuses.get(status, 0) + 1
    fields["statuses"] = statuses
    fields["measured"] = len(trials)
    fields["times"] = [[_plain(t).get("config"), str(_plain(t).get("status")),
                        _plain(t).get("time_ms")] for t in trials]
    return fields


def phase_tunegate(name: str, smoke: bool, shared: dict) -> dict:
    task, file, attr = _task_of(name, smoke)
    start = time.perf_counter()
    result = _tuner(task, file, attr, shared["store"]).run()
    wall = time.perf_counter() - start
    return {"wall_s": wall, "process_wall_s": _process_seconds(),
            "result": _result_fields(result),
            "choice": _values(result.best) if result.best is not None else None}


def _first_launch(task: Any, values: Any) -> float:
    config = _config_of(task, values)
    args = _inputs(task, 4000)
    _sync()
    start = time.perf_counter()
    task.run(args, config)
    _sync()
    return time.perf_counter() - start


def phase_warm(name: str, smoke: bool, shared: dict) -> dict:
    task, file, attr = _task_of(name, smoke)
    start = time.perf_counter()
    result = _tuner(task, file, attr, shared["store"]).run()
    tune_s = time.perf_counter() - start
    launch_s = _first_launch(task, result.best)
    return {"tune_s": tune_s, "first_launch_s": launch_s, "reused": getattr(result, "reused", None),
            "choice": _values(result.best), "result": _result_fields(result)}


def phase_plain(name: str, smoke: bool, shared: dict) -> dict:
    task, _, _ = _task_of(name, smoke)
    return {"first_launch_s": _first_launch(task, shared["choice"])}


def phase_profile(name: str, smoke: bool, shared: dict) -> dict:
    import cProfile
    import io
    import pstats

    task, file, attr = _task_of(name, smoke)
    tuner = _tuner(task, file, attr, shared["store"] + ".profile", here=True)
    profile = cProfile.Profile()
    start = time.perf_counter()
    result = profile.runcall(tuner.run)
    wall = time.perf_counter() - start
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(PROFILED)
    return {"wall_s": wall, "result": _result_fields(result), "profile": text.getvalue()}


TRACED = ("tunegate", "warm")  # the phases whose processes record a trace
TRACE_ENV = "TUNEGATE_TRACE"

def phase_verdict(name: str, smoke: bool, shared: dict) -> dict:
    """The chosen configs and the truth's fastest, timed in turns in this one process."""
    task, _, _ = _task_of(name, smoke)
    candidates = shared["verdict"]
    configs = {json.dumps(c, sort_keys=True): _config_of(task, c) for c in candidates}
    args = _inputs(task, 5000)
    order = list(configs)
    samples: dict[str, list[float]] = {k: [] for k in order}
    for r in range(VERDICT_ROUNDS if _on_gpu() else 1):
        for key in order[r % len(order):] + order[:r % len(order)]:
            samples[key].append(_time_ms(task, configs[key], args))
    return {"ms": {k: statistics.median(v) for k, v in samples.items()}}


PHASE_FUNCTIONS = {"truth": phase_truth, "stock": phase_stock, "tunegate": phase_tunegate,
                   "warm": phase_warm, "plain": phase_plain, "verdict": phase_verdict,
                   "profile": phase_profile}


# -- the parent ---------------------------------------------------------------------------------
def run_phase(name: str, phase: str, shared: dict, cache: str, smoke: bool,
              timeout: float) -> dict:
    spawned = time.time()
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "BENCH_SPAWNED_AT": repr(spawned)}
    traced = phase in TRACED
    if traced:  # where the tuning's time goes, in every process of it (tunegate.autotune.trace)
        env[TRACE_ENV] = tempfile.mktemp(prefix=f"trace-{phase}-", suffix=".jsonl")
    # The tunegate phase runs as a user runs a program tuned by tunegate (`tunegate run`): its
    # workers start with the process, beside its imports. Its process time includes that.
    runner = ["-m", "tunegate", "run"] if phase == "tunegate" else []
    command = [sys.executable, *runner, "-m", THIS, "--phase", phase, "--lists", name,
               "--shared", json.dumps(shared)] + (["--smoke"] if smoke else [])
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return {"failed": f"timed out after {timeout:.0f} s",
                "stderr": (e.stderr or b"")[-3000:].decode(errors="replace")
                if isinstance(e.stderr, bytes) else (e.stderr or "")[-3000:]}
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        return {"failed": f"exit {proc.returncode}", "stderr": proc.stderr[-3000:]}
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    record["child_wall_s"] = elapsed
    if traced:
        record["trace"] = _timeline(env[TRACE_ENV], spawned)
    return record


def _timeline(path: str, spawned: float) -> list[list]:
    """A phase's trace events as [seconds since the process was spawned, pid, event, fields]."""
    from tunegate.autotune.trace import read

    events = read(path)
    os.unlink(path)
    return [[round(e.pop("t") - spawned, 4), e.pop("pid"), e.pop("event"), e] for e in events]


def _commit() -> str:
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=ROOT, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True,
                               cwd=ROOT, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def environment(smoke: bool) -> dict:
    import torch
    import triton

    env = {"torch": torch.__version__, "triton": triton.__version__,
           "python": platform.python_version(), "cpus": os.cpu_count(), "commit": _commit(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "smoke": smoke,
           "interpreter": not _on_gpu()}
    if _on_gpu():
        props = torch.cuda.get_device_properties(0)
        try:
            driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                     "--format=csv,noheader"], capture_output=True, text=True,
                                    timeout=30).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            driver = "?"
        env.update(gpu=props.name, capability=f"{props.major}.{props.minor}", driver=driver,
                   gpus=torch.cuda.device_count())
    else:
        env.update(gpu="none (Triton interpreter)", capability="-", driver="-", gpus=0)
    return env


def bench_list(name: str, args: argparse.Namespace, env: dict, deadline: float) -> dict:
    task, _, _ = _task_of(name, args.smoke)
    record: dict[str, Any] = {"list": name, "kernel": task.name, "environment": env,
                              "candidates": len(task.configs)}
    warm_cache = tempfile.mkdtemp(prefix=f"cache-{name}-tunegate-")
    shared = {"store": str(Path(tempfile.mkdtemp(prefix=f"store-{name}-")) / "bench.sqlite")}
    for phase in PHASES + (("profile",) if args.profile else ()):
        left = deadline - time.monotonic()
        if left < 5:
            record[phase] = {"failed": "skipped: the run's time budget was spent"}
            continue
        if phase == "stock" and env["interpreter"]:
            record[phase] = {"skipped": STOCK_NEEDS_GPU}
            print(f"{name:<13} {phase:<9} skipped: {STOCK_NEEDS_GPU}", flush=True)
            continue
        if phase == "plain":
            shared["choice"] = record["warm"].get("choice") or record["tunegate"].get("choice")
            if not shared["choice"]:
                record[phase] = {"failed": "skipped: tunegate returned no config"}
                continue
        if phase == "verdict":
            shared["verdict"] = _verdict_candidates(record)
        cache = warm_cache if phase in ("tunegate", "warm", "plain") else \
            tempfile.mkdtemp(prefix=f"cache-{name}-{phase}-")
        start = time.perf_counter()
        record[phase] = run_phase(name, phase, shared, cache, args.smoke,
                                  min(args.timeout, left))
        status = record[phase].get("failed") or record[phase].get("skipped") or "ok"
        print(f"{name:<13} {phase:<9} {time.perf_counter() - start:6.1f} s  {status[:100]}",
              flush=True)
    return record


def _verdict_candidates(record: dict) -> list[dict]:
    """The configs the verdict phase times: each tuner's choice, the truth's fastest correct."""
    rows = sorted((r for r in record["truth"].get("rows", []) if r.get("correct") and r.get("ms")),
                  key=lambda r: r["ms"])
    chosen = [record[p].get("choice") for p in ("stock", "tunegate")]
    found = [c for c in chosen if c] + [r["config"] for r in rows[:VERDICT_TOP]]
    return list({json.dumps(c, sort_keys=True): c for c in found}.values())


def child(args: argparse.Namespace) -> None:
    """One phase of one list; its JSON on the last line of stdout."""
    try:
        out = PHASE_FUNCTIONS[args.phase](args.lists[0], args.smoke, json.loads(args.shared))
    except Exception:
        print(traceback.format_exc(), file=sys.stderr)
        raise SystemExit(1)
    print(json.dumps(out, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", nargs="+", default=list(LISTS), choices=list(LISTS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per phase")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="seconds for the whole run; lists not started by then are skipped")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, two configs per list")
    parser.add_argument("--profile", action="store_true",
                        help="add the profile phase (the tuning under cProfile, in-process)")
    parser.add_argument("--phase", choices=list(PHASE_FUNCTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--shared", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        child(args)
        return
    deadline = time.monotonic() + (args.budget_s or float("inf"))
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment(args.smoke)
    print(json.dumps(env), flush=True)
    for name in args.lists:
        if deadline - time.monotonic() < 30:
            print(f"{name:<13} skipped: the run's time budget was spent", flush=True)
            continue
        record = bench_list(name, args, env, deadline)
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
