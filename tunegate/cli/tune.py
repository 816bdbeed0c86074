"""`tunegate tune FILE[:TASK]`: tune a kernel file's task and print the result."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from .. import _render
from ..errors import UsageError
from ..limits import MAX_DEVICES, MAX_DRAWS, MAX_LAUNCHES
from ..policy import Policy
from . import _args, _json
from ._exit import EXIT_DETECTED, EXIT_OK

__all__ = ["add_parsers"]


def _progress(event: dict[str, Any]) -> None:
    """One line per trial on stderr, for people watching."""
    line = _render.progress_line(event)
    if line is not None:
        print(line, file=sys.stderr)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a job scheduler's stop) interrupts tuning as Ctrl-C does, so what was measured
    and the best so far (as partial) are stored and reported, not lost."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    import signal  # here, not at the top: the signal module costs every command ~1 ms

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_tune(args: argparse.Namespace) -> int:
    """Tune; with --json the result (or the error) is printed on every exit, and nothing the
    kernel file or its workers print reaches stdout."""
    try:
        with _args.user_output_to_stderr(), _sigterm_as_interrupt():
            code, text = _tune(args)
    except (Exception, KeyboardInterrupt) as e:
        if args.json:
            print(_json.dump(_json.tune_failure(args.task, f"{type(e).__name__}: {e}"
                                                if str(e) else type(e).__name__)))
            args.json_written = True  # the failure in tune's own shape: not printed again
        raise
    if text:
        print(text)
    return code


def _tune(args: argparse.Namespace) -> tuple[int, str]:
    """The exit code and what to print on stdout."""
    from ..autotune import (Budget, StressCheck, TuneError, Tuner, interpret_without_gpu,
                            resolve_task)
    from ..autotune.warm import warm_up

    if args.stress_min and args.stress_max and args.stress_min > args.stress_max:
        raise UsageError(f"--stress-min {args.stress_min} is more than --stress-max "
                         f"{args.stress_max}")
    stress = StressCheck(min_launches=args.stress_min, max_launches=args.stress_max,
                         seconds=args.stress_seconds, draws=args.stress_draws)
    interpret_without_gpu()  # before the kernel file is imported: triton reads it at @jit
    warm_up(here=True)  # the workers start while the kernel file and the policy load
    task, ref, reference = resolve_task(args.task)
    policy = Policy.load(extra=args.policy)
    tuner = Tuner(task, ref, policy=policy, store=_args.store(args.store),
                  strategy=args.strategy, budget=Budget(configs=args.budget,
                                                        seconds=args.seconds),
                  seed=args.seed, draws=args.draws, timeout=args.timeout, stress=stress,
                  retune=args.retune, recheck_reused=not args.no_recheck,
                  devices=args.devices, staged_timing=not args.no_staged_timing,
                  progress=None if args.json else _progress)
    layers = policy.layer_report()

    def as_text(result: Any) -> str:
        return "\n".join([_render.tuning_summary(result, reference, args.store), "",
                          *map(_render.escape, _render.layers_in_brief(layers))])

    try:
        result = tuner.run()
    except TuneError as e:
        print(f"tunegate: error: tuning failed: {_render.escape(str(e), keep_newlines=True)}",
              file=sys.stderr)
        if args.json:
            return EXIT_DETECTED, _json.tuning(
                e.result.model_dump(mode="json") if e.result is not None else
                _json.tune_failure(task.name, str(e)), layers)
        if e.result is not None and e.result.trials:
            return EXIT_DETECTED, as_text(e.result)
        return EXIT_DETECTED, ""
    if args.json:
        return EXIT_OK, _json.tuning(result.model_dump(mode="json"), layers)
    return EXIT_OK, as_text(result)


def add_parsers(verbs: Any) -> None:
    verbs.add_parser("tune", help="tune a kernel file's task (see README: kernel files)",
                     fill=_arguments)


def _arguments(p: _args.Parser) -> None:
    p.add_argument("task", metavar="FILE[:TASK]", help="a Python file declaring a tunegate Task")
    p.add_argument("--budget", type=_args.integer(1), default=64,
                   help="most configs to measure (64)")
    p.add_argument("--seconds", type=_args.seconds, help="wall-clock budget in seconds")
    p.add_argument("--strategy", default="auto", type=_args.strategy,
                   help="auto (default), exhaustive, random or pattern")
    p.add_argument("--seed", type=_args.seed, default=0, help="seed for search and inputs")
    p.add_argument("--draws", type=_args.integer(1), default=2,
                   help="input draws per accuracy check, at least 1 (2)")
    p.add_argument("--timeout", type=_args.seconds,
                   help="seconds per config before it is killed (GPU 60, interpreter 300)")
    p.add_argument("--store", metavar="PATH", type=_args.store_path,
                   help="SQLite store (default: user cache dir)")
    _args.policy_option(p)
    p.add_argument("--stress-min", type=_args.integer(1, MAX_LAUNCHES), metavar="N",
                   help="least launches per stress check (GPU 200, interpreter 8)")
    p.add_argument("--stress-max", type=_args.integer(1, MAX_LAUNCHES), metavar="N",
                   help="most launches per stress check (GPU 1000, interpreter 16)")
    p.add_argument("--stress-seconds", type=_args.seconds, metavar="S",
                   help="seconds per stress check: launches beyond the least while they "
                        "last (GPU 0.25, interpreter 2); experimental configs get a quarter "
                        "of the check during the search")
    p.add_argument("--stress-draws", type=_args.integer(1, MAX_DRAWS), metavar="N",
                   help="fresh input draws per stress check (4)")
    p.add_argument("--retune", action="store_true",
                   help="search again even if a stored best config exists")
    p.add_argument("--no-recheck", action="store_true",
                   help="reuse a stored best without re-checking it on a fresh draw")
    p.add_argument("--devices", type=_args.integer(1, MAX_DEVICES),
                   help="benchmark workers, one per GPU (default: every visible GPU; "
                        "$TUNEGATE_DEVICES; under the interpreter, simulated workers)")
    p.add_argument("--no-staged-timing", action="store_true",
                   help="time every candidate fully instead of a short measurement first and "
                        "full do_bench for contenders only")
    p.add_argument("--json", action="store_true",
                   help="machine-readable result, printed on failure too (with 'error')")
    p.set_defaults(run=cmd_tune)
