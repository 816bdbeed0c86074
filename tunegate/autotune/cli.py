"""`tunegate tune FILE[:TASK]`: tune a task declared in a kernel file, with progress and a summary."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_tune_parser"]


def _progress(event: dict[str, Any]) -> None:
    """One line per trial on stderr, for people watching."""
    if event["event"] == "start":
        print(f"tuning with the {event['strategy']} strategy, up to {event['budget']} configs",
              file=sys.stderr)
    elif event["event"] == "trial":
        t = event["trial"]
        what = f"{t.time_ms:10.4g} ms" if t.time_ms is not None else f"{t.status:>13}"
        if t.status == "ok" and t.stressed:
            what += " (stressed)"
        text = ", ".join(f"{k}={v}" for k, v in t.config.items())
        print(f"[{event['n']:>3}] {what:<24} {text}", file=sys.stderr)
    elif event["event"] == "winner_check":
        print(f"      stress-checking the fastest: {event['config'].text()}", file=sys.stderr)
    elif event["event"] == "stress":
        t = event["trial"]
        print(f"      {t.status}: " + (t.reason.summary if t.reason else t.checked()),
              file=sys.stderr)


def _best_checked(result: Any) -> str:
    if result.reused:
        return "stored earlier" + (", re-checked on a fresh draw"
                                   if any("re-checked" in n for n in result.notes) else "")
    trial = next((t for t in result.trials if t.config == result.best and t.status == "ok"),
                 None)
    return trial.checked() if trial is not None else "-"


def _summary(result: Any, reference: str) -> str:
    from .._render import table

    label = "interpreter timing (CPU, not GPU speed)" if result.timing == "interpreter" \
        else "GPU median (do_bench)"
    rows = [("space", f"{result.space_size} configs"),
            ("candidates measured", len(result.trials)),
            ("compared with", result.compared_with)]
    hits = {rule: n for rule, n in result.removals.items() if n}
    if not hits:
        rows.append(("excluded by policy", "none"))
    for rule, n in hits.items():
        rows.append((f"excluded by {rule}", n))
    rows += [("rejected by accuracy check", result.count("wrong")),
             ("failed (compile/error/timeout/crash)",
              sum(result.count(s) for s in ("compile_error", "error", "timeout", "crashed"))),
             ("best time", f"{result.best_time_ms:.4g} ms, {label}"
              if result.best_time_ms is not None else "-"),
             ("best config", ", ".join(f"{k}={v}" for k, v in (result.best or {}).items())),
             ("best config checked", _best_checked(result)),
             ("wall time", f"{result.wall_seconds:.1f} s, of which accuracy checks "
                           f"{result.check_seconds:.1f} s")]
    if result.reused:
        rows.append(("reused", "stored best config, still allowed by the current policy"))
    out = [table(["", ""], rows)]
    rejected = [t for t in result.trials if t.status != "ok"]
    if rejected:
        out.append("\nRejected configs")
        for t in rejected[:10]:
            out.append(f"  {t.status:<13} {', '.join(f'{k}={v}' for k, v in t.config.items())}")
            if t.reason:
                out.append(f"                {t.reason.summary}")
        if len(rejected) > 10:
            out.append(f"  ... and {len(rejected) - 10} more (--json lists them all)")
        first = ", ".join(f"{k}={v!r}" for k, v in rejected[0].config.items())
        out.append(f'\nExplain one:  tunegate policy explain "{first}" --kernel {reference}')
    out += [f"\nnote: {n}" for n in result.notes]
    if result.interrupted:
        out.append("\nnote: interrupted; the best of what was measured is reported")
    return "\n".join(out)


def cmd_tune(args: argparse.Namespace) -> int:
    """Tune; with --json the result (or the error) is printed on every exit."""
    try:
        return _tune(args)
    except Exception as e:
        if args.json:
            print(json.dumps({"task": args.task, "best": None, "trials": [],
                              "error": f"{type(e).__name__}: {e}"}, indent=2))
        raise


def _tune(args: argparse.Namespace) -> int:
    from .backend import interpret_without_gpu

    interpret_without_gpu()  # before the kernel file is imported: triton reads it at @jit
    from ..kernelfile import load_module, resolve
    from ..policy import Policy
    from .store import open_store
    from .stress import StressCheck
    from .task import Task
    from .tuner import Budget, TuneError, Tuner
    from .worker import TaskRef

    file, found = resolve(args.task, Task)
    name = args.task.rpartition(":")[2] if ":" in args.task else next(
        k for k, v in vars(load_module(file)).items() if v is found)
    task = getattr(found, "task", found)  # a kernel decorated with tunegate.autotuned
    reference = f"{file}:{name}"
    try:
        stress = StressCheck(min_launches=args.stress_min, max_launches=args.stress_max,
                             seconds=args.stress_seconds, draws=args.stress_draws)
    except ValueError as e:
        from ..cli import UsageError

        raise UsageError(f"bad stress-check options: {e}") from None
    tuner = Tuner(task, TaskRef(str(file.resolve()), name), policy=Policy.load(extra=args.policy),
                  store=open_store(args.store), strategy=args.strategy,
                  budget=Budget(configs=args.budget, seconds=args.seconds), seed=args.seed,
                  draws=args.draws, timeout=args.timeout, stress=stress, retune=args.retune,
                  recheck_reused=not args.no_recheck,
                  progress=None if args.json else _progress)
    try:
        result = tuner.run()
    except TuneError as e:
        if args.json:
            partial = e.result.model_dump(mode="json") if e.result is not None else \
                {"task": task.name, "best": None, "trials": [], "error": str(e)}
            print(json.dumps(partial, indent=2))
        elif e.result is not None and e.result.trials:
            print(_summary(e.result, reference))
        print(f"tunegate: tuning failed: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print(_summary(result, reference))
    return 0


def add_tune_parser(verbs: Any) -> None:
    p = verbs.add_parser("tune", help="tune a kernel file's task (see README: kernel files)")
    p.add_argument("task", metavar="FILE[:TASK]", help="a Python file declaring a tunegate Task")
    p.add_argument("--budget", type=int, default=64, help="most configs to measure (64)")
    p.add_argument("--seconds", type=float, help="wall-clock budget in seconds")
    p.add_argument("--strategy", default="auto",
                   help="auto (default), exhaustive, random or pattern")
    p.add_argument("--seed", type=int, default=0, help="seed for search and inputs")
    p.add_argument("--draws", type=int, default=2, help="input draws per accuracy check (2)")
    p.add_argument("--timeout", type=float, help="seconds per config before it is killed")
    p.add_argument("--store", metavar="PATH", help="SQLite store (default: user cache dir)")
    p.add_argument("--policy", action="append", default=[], metavar="FILE",
                   help="an extra policy layer (highest); may be repeated")
    p.add_argument("--stress-min", type=int, metavar="N",
                   help="least launches per stress check (GPU 200, interpreter 8)")
    p.add_argument("--stress-max", type=int, metavar="N",
                   help="most launches per stress check (GPU 1000, interpreter 16)")
    p.add_argument("--stress-seconds", type=float, metavar="S",
                   help="seconds per stress check: launches beyond the least while they "
                        "last (GPU 0.25, interpreter 2); experimental configs get a quarter "
                        "of the check during the search")
    p.add_argument("--stress-draws", type=int, metavar="N",
                   help="fresh input draws per stress check (4)")
    p.add_argument("--retune", action="store_true",
                   help="search again even if a stored best config exists")
    p.add_argument("--no-recheck", action="store_true",
                   help="reuse a stored best without re-checking it on a fresh draw")
    p.add_argument("--json", action="store_true",
                   help="machine-readable result, printed on failure too (with 'error')")
    p.set_defaults(run=cmd_tune)
