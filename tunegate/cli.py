"""`tunegate`: a thin command-line layer over tunegate.space, tunegate.policy and tunegate.autotune.

Exit codes: 0 success; 1 a result the user asked to detect (`--fail-on`, a failed tuning run);
2 bad input (a malformed policy or config, an unknown fact, a missing file, a bad option or
store); 130 interrupted; 141 stdout closed early (`| head`), quietly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, NoReturn

from . import _render
from .kernelfile import resolve, unwrap
from .policy import (Environment, KernelTraits, LayerReport, Policy, PolicyError, Problem,
                     detect_environment,
                     detect_traits)
from .space import Config, Space, helion_space
from .space.helion import helion_config, is_triton_name, parse_config_text
from .errors import TunegateError

__all__ = ["main"]

EXIT_OK, EXIT_DETECTED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141
MAX_CONFIG_TEXT = 10_000
MAX_LOOPS = 16  # `space show --loops/--blocks`: beyond this the table is no use to a person


class UsageError(ValueError, TunegateError):
    """Bad command-line input that is not one of the library's own errors."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one `tunegate: error:` line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"tunegate: error: {message} (see `{self.prog} --help`)\n")


# -- option types: every value is checked before any work starts -------------------------------
def _number(text: str, kind: Callable[[str], Any]) -> Any:
    """`kind(text)` for ASCII text only: Python reads '١٢' as 12, an option must not."""
    if not text.isascii():
        raise ValueError(f"not ASCII: {text!r}")
    return kind(text)


def _integer(low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = _number(text, int)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def _amount(unit: str, *, zero: bool) -> Any:
    """An argparse type: a finite number of `unit`, positive (or 0 or more with `zero`)."""
    def parse(text: str) -> float:
        try:
            value = _number(text, float)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
        if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
            what = f"a finite number of {unit}, 0 or more" if zero else \
                f"a positive, finite number of {unit}"
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value
    return parse


_seconds = _amount("seconds", zero=False)
_days = _amount("days", zero=True)


def _seed(text: str) -> int:
    try:
        value = _number(text, int)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**63 - 1, got {value}")
    return value


def _store_path(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a file path, or leave the option out "
                                         "for the default store")
    return text


def _strategy(text: str) -> str:
    from .autotune.strategies import STRATEGIES

    known = ["auto", *STRATEGIES]
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown strategy {text!r} (known: "
                                         f"{', '.join(known)})")
    return text


@contextmanager
def _user_output_to_stderr() -> Iterator[None]:
    """While user code runs (a kernel file's import, its workers): its stdout goes to stderr,
    at the file-descriptor level too (workers inherit it), so it never mixes with our output."""
    sys.stdout.flush()
    saved_stream, sys.stdout = sys.stdout, sys.stderr
    try:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved_fd = None
    try:
        yield
    finally:
        sys.stdout.flush()
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        sys.stdout = saved_stream


def _env_overrides(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--env takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _environment(args: argparse.Namespace) -> Environment:
    overrides = _env_overrides(args.env)
    probe = "device" not in overrides and not getattr(args, "no_probe", False)
    return detect_environment(probe_device=probe).with_overrides(overrides)


def _policy(args: argparse.Namespace) -> Policy:
    return Policy.load(extra=args.policy)


def _kernel(reference: str | None) -> tuple[KernelTraits | None, Any]:
    """Traits and, for a Task or an autotuned kernel, its task, from `FILE:NAME`/`module:NAME`."""
    if reference is None:
        return None, None
    from .autotune.task import Task

    with _user_output_to_stderr():
        _, obj = resolve(reference, Task)
    obj = getattr(obj, "task", obj)  # a function decorated with tunegate's legacy decorator
    if isinstance(obj, Task):
        return detect_traits(obj.kernel), obj
    configs = next((k.configs for k in _links(obj) if hasattr(k, "configs")), None)
    kernel = unwrap(obj)
    if not hasattr(kernel, "fn") and not callable(kernel):
        raise UsageError(f"{reference} is a {type(obj).__name__}, not a kernel or a tunegate "
                         "Task")
    if configs:  # a triton.autotune'd kernel: its config list is the space
        task = Task(name=kernel.__name__, kernel=kernel, configs=list(configs), grid=(1,),
                    make_inputs=_no_inputs, outputs=())
        return detect_traits(kernel), task
    return detect_traits(kernel), None


def _links(obj: Any) -> list[Any]:
    out = [obj]
    while hasattr(out[-1], "fn") and out[-1].fn is not out[-1]:
        out.append(out[-1].fn)
    return out


def _no_inputs(seed: int) -> dict[str, Any]:
    raise UsageError("this task was made from a kernel's config list and has no inputs")


def _config(text: str, space: Space | None) -> tuple[Config, Space]:
    if len(text) > MAX_CONFIG_TEXT:
        raise UsageError(f"the config text is {len(text)} characters long; at most "
                         f"{MAX_CONFIG_TEXT} are read")
    try:
        values = parse_config_text(text)
    except TunegateError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError, OverflowError) as e:
        raise UsageError(f"cannot read the config text: {str(e)[:200] or type(e).__name__}") \
            from None
    if space is not None:
        return space.complete(values), space
    # Without a kernel the text is a Helion config; a Triton config's constexprs mean nothing to
    # a rule without its kernel (which loop INNER_STAGES pipelines), so guessing would give
    # another verdict than --kernel does.
    triton = [name for name in values if is_triton_name(name)]
    if triton:
        raise UsageError(f"{', '.join(map(repr, triton))} {'is' if len(triton) == 1 else 'are'} "
                         "a Triton constexpr, not a Helion config field: a Triton config is read "
                         "against its kernel's space, so give --kernel FILE:NAME")
    return helion_config(values)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def _store(path: str | None) -> Any:
    """The tuning store at `path` (else the default); lock waits are reported on stderr."""
    from .autotune.store import open_store

    return open_store(path, on_wait=lambda message: print(f"tunegate: {message}",
                                                          file=sys.stderr))


# -- policy ----------------------------------------------------------------------------------
def cmd_explain(args: argparse.Namespace) -> int:
    policy, env = _policy(args), _environment(args)
    traits, task = _kernel(args.kernel)
    config, space = _config(args.config, task.space if task else None)
    verdict = policy.explain(config, space, env, traits)
    history = outcome = compared_with = None
    if task is not None:

        history = _store(args.store).history(task.kernel_hash(), config, task.fingerprint())
        outcome = _render.tuning_outcome(history)
        compared_with = ("the reference function" if task.reference is not None else
                         "the baseline config (the task has no reference), not ground truth")
    if args.json:
        _print_json({
            "verdict": verdict.model_dump(mode="json"),
            "outcome": outcome,
            "compared_with": compared_with,
            "reasons": [r.model_dump(mode="json") for r in verdict.reasons()],
            "environment": env.model_dump(mode="json"),
            "kernel": {"name": traits.name, "traits": traits.evidence} if traits else None,
            "policy": {"fingerprint": policy.fingerprint(), "layers": policy.layers,
                       "report": policy.layer_report().model_dump(mode="json")},
            "history": history,
        })
    else:
        kernel = None
        if traits is not None:
            kernel = traits.name + (" — traits: " + ", ".join(sorted(traits.traits))
                                    if traits.traits else " — no traits")
        print(_render.explanation(verdict, config.text(), env, kernel, history,
                                  compared_with=compared_with, layers=policy.layer_report()))
    order = {"allowed": 0, "experimental": 1, "excluded": 2}
    if args.fail_on and (order[verdict.status] >= order[args.fail_on] or outcome is not None):
        return EXIT_DETECTED
    return EXIT_OK


def _warn_weakened(file: str, report: LayerReport) -> int:
    """One stderr warning per rule the checked file weakens or switches off; how many."""
    mine = [o for o in report.weakened if o.layer == "checked"]
    for o in mine:
        print(f"tunegate: warning: {_render.escape(o.source or file)}: rule {o.rule!r} "
              f"{o.change}: was {o.was}, now {o.now}", file=sys.stderr)
    return len(mine)


def cmd_check(args: argparse.Namespace) -> int:
    """Each FILE as the highest layer over the discovered ones; without FILEs, those layers."""
    if args.files:
        problems: list[Problem] = []
        weakened = 0
        for f in args.files:
            try:
                report = Policy.checking(f, extra=args.policy).layer_report()
            except PolicyError as e:
                problems += [p for p in e.problems if p not in problems]
                continue
            top = report.layers[-1]
            offs = f", {top.switch_offs} switch-off(s)" if top.switch_offs else ""
            weakened += _warn_weakened(f, report)
            print(f"{_render.escape(f)}: ok, {top.rules} rule(s){offs}")
        if problems:
            raise PolicyError(problems)
        return EXIT_DETECTED if args.strict and weakened else EXIT_OK
    policy = _policy(args)
    print(_render.layer_report(policy.layer_report()))
    print(f"\nok: {len(policy.rules)} effective rule(s), fingerprint {policy.fingerprint()}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from .policy.verdict import rule_state

    policy, env = _policy(args), _environment(args)
    rows = []
    for r in policy.effective(env):
        state = rule_state(r, env, None)
        rows.append({**r.model_dump(mode="json", include={"id", "action", "title"}),
                     "bugs": list(r.bugs), "source": r.where(), "state": state.state,
                     "why": state.why or (f"needs {', '.join(state.unknown)}"
                                          if state.unknown else "")})
    if args.json:
        _print_json({"fingerprint": policy.fingerprint(), "rules": rows,
                     "layers": policy.layer_report().model_dump(mode="json")})
        return EXIT_OK
    print(_render.table(["rule", "action", "here", "bugs", "source", "title"],
                        [(r["id"], r["action"], r["state"], ", ".join(r["bugs"]) or "-",
                          r["source"], r["title"]) for r in rows]))
    print(f"\n{len(rows)} rules; policy fingerprint {policy.fingerprint()}")
    print("\n" + _render.layer_report(policy.layer_report()))
    return EXIT_OK


def cmd_env(args: argparse.Namespace) -> int:
    env = _environment(args)
    if args.json:
        _print_json({**env.model_dump(mode="json"), "fingerprint": env.fingerprint()})
        return EXIT_OK
    for key, value in env.describe().items():
        mark = "  (set by hand)" if key in env.overridden else ""
        print(f"{key:<11} {value}{mark}")
    if env.range_args is not None:
        print(f"{'tl.range':<11} {', '.join(env.range_args)}")
    print(f"{'fingerprint':<11} {env.fingerprint()}")
    return EXIT_OK


# -- space -----------------------------------------------------------------------------------
def cmd_space_show(args: argparse.Namespace) -> int:
    traits, task = _kernel(args.kernel)
    if task is not None:
        space = task.space
    elif args.config:
        space = _config(args.config, None)[1]
    else:
        space = helion_space(blocks=args.blocks, loops=args.loops)
    env, policy = _environment(args), _policy(args)
    region = policy.gate(space, env, traits)
    total = space.cardinality()
    params = []
    for name, p in space.parameters.items():
        allowed = region.allowed[name]
        full = list((p.domain.element if hasattr(p.domain, "element") else p.domain).values())
        bound = sorted({d.feature for d in region.binding.drivers if name in d.parameters})
        params.append({"name": name, "domain": p.domain.describe(), "features": bound,
                       "default": p.domain.default(),
                       "excluded_values": [v for v in full if v not in allowed]})
    removals = [{"rule": r.rule, "removes": r.count, "exact": r.exact, "assumed": r.assumed}
                for r in region.removals()]
    if args.json:
        kernel = None if traits is None else {
            "name": traits.name, "traits": traits.evidence,
            "loop_traits": traits.loop_traits, "features": traits.features,
            "loops": [dataclasses.asdict(loop) for loop in traits.loops],
            "bindings": [dataclasses.asdict(d) for d in region.binding.drivers],
            "notes": list(region.binding.notes)}
        _print_json({"cardinality": total, "after_restrictions": region.upper_bound(),
                     "parameters": params, "removals": removals,
                     "residual_rules": [r.id for r in region.residual], "kernel": kernel})
        return EXIT_OK
    if traits is not None:
        print(_render.kernel_loops(traits))
        print()
        if region.binding.drivers or region.binding.notes:
            print(_render.bindings(region.binding))
            print()
    print(_render.table(["parameter", "domain", "features", "default", "excluded here"],
                        [(p["name"], p["domain"], ", ".join(p["features"]) or "-", p["default"],
                          ", ".join(map(repr, p["excluded_values"])) or "-") for p in params]))
    print(f"\n{total} configs; {region.upper_bound()} left after per-parameter restrictions")
    hits = [r for r in removals if r["removes"]]
    if hits:
        print()
        print(_render.table(["rule", "removes", "note"], [
            (r["rule"], f"{'' if r['exact'] else '~'}{r['removes']}",
             "assumed: a fact it needs is unknown" if r["assumed"] else "")
            for r in hits]))
    if len(hits) < len(removals):
        print(f"{len(removals) - len(hits)} other active rule(s) remove nothing from this space")
    return EXIT_OK


# -- tune ------------------------------------------------------------------------------------
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


def _task_ref(reference: str, found: Any) -> Any:
    """Where worker processes find `found`, the object `reference` (FILE:NAME, module:NAME or
    FILE) names: by module name when it is importable, else by file."""
    from .autotune.api import task_ref
    from .autotune.worker import TaskRef
    from .kernelfile import import_reference

    left, sep, name = reference.rpartition(":")
    if not sep or (len(left) == 1 and left.isalpha()):
        left, name = reference, ""
    module = import_reference(left)  # imported already by `resolve`: this is a lookup
    if not name or "." in name:
        name = next((k for k, v in vars(module).items() if v is found), "")
    if not name:  # an attribute of an attribute: found through its kernel's module
        return task_ref(found)
    spec = getattr(module, "__spec__", None)
    by_name = spec is not None and spec.name != "__main__" and not spec.name.startswith(
        "tunegate_user_")
    return TaskRef(str(Path(module.__file__ or left).resolve()), name,
                   module=spec.name if by_name else None)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a job scheduler's stop) interrupts tuning as Ctrl-C does, so what was measured
    and the best so far (as partial) are stored and reported, not lost."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

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
        with _user_output_to_stderr(), _sigterm_as_interrupt():
            code, text = _tune(args)
    except (Exception, KeyboardInterrupt) as e:
        if args.json:
            print(json.dumps({"task": args.task, "best": None, "trials": [],
                              "error": f"{type(e).__name__}: {e}" if str(e) else
                              type(e).__name__}, indent=2))
        raise
    if text:
        print(text)
    return code


def _tune(args: argparse.Namespace) -> tuple[int, str]:
    """The exit code and what to print on stdout."""
    from .autotune.backend import interpret_without_gpu
    from .autotune.stress import StressCheck

    try:
        stress = StressCheck(min_launches=args.stress_min, max_launches=args.stress_max,
                             seconds=args.stress_seconds, draws=args.stress_draws)
    except ValueError as e:
        raise UsageError(f"bad stress-check options: {e}") from None
    interpret_without_gpu()  # before the kernel file is imported: triton reads it at @jit
    from .autotune.task import Task
    from .autotune.tuner import Budget, TuneError, Tuner

    file, found = resolve(args.task, Task)
    task = getattr(found, "task", found)  # a kernel decorated with tunegate.autotuned
    if not isinstance(task, Task):
        raise UsageError(f"{args.task} names a {type(found).__name__}, not a tunegate Task "
                         "(or a kernel decorated with tunegate.autotuned)")
    ref = _task_ref(args.task, found)
    reference = f"{file}:{ref.name}"
    policy = Policy.load(extra=args.policy)
    tuner = Tuner(task, ref, policy=policy, store=_store(args.store),
                  strategy=args.strategy, budget=Budget(configs=args.budget,
                                                        seconds=args.seconds),
                  seed=args.seed, draws=args.draws, timeout=args.timeout, stress=stress,
                  retune=args.retune, recheck_reused=not args.no_recheck,
                  devices=args.devices, staged_timing=not args.no_staged_timing,
                  progress=None if args.json else _progress)
    layers = policy.layer_report()

    def as_json(data: dict[str, Any]) -> str:
        return json.dumps({**data, "policy_layers": layers.model_dump(mode="json")}, indent=2)

    def as_text(result: Any) -> str:
        return "\n".join([_render.tuning_summary(result, reference, args.store), "",
                          *map(_render.escape, _render.layers_in_brief(layers))])

    try:
        result = tuner.run()
    except TuneError as e:
        print(f"tunegate: tuning failed: {e}", file=sys.stderr)
        if args.json:
            return EXIT_DETECTED, as_json(
                e.result.model_dump(mode="json") if e.result is not None else
                {"task": task.name, "best": None, "trials": [], "error": str(e)})
        if e.result is not None and e.result.trials:
            return EXIT_DETECTED, as_text(e.result)
        return EXIT_DETECTED, ""
    if args.json:
        return EXIT_OK, as_json(result.model_dump(mode="json"))
    return EXIT_OK, as_text(result)


# -- store -----------------------------------------------------------------------------------
def _existing_store(args: argparse.Namespace) -> Any:
    """The store the command names, or None (said on stderr) when there is none yet."""
    from .autotune.store import default_store_path

    path = Path(args.store) if args.store is not None else default_store_path()
    if not path.exists():
        print(f"tunegate: no tuning store at {path} yet", file=sys.stderr)
        return None
    return _store(str(path))


def _known_kernel(store: Any, name: str | None) -> None:
    if name is not None and name not in (known := store.kernel_names()):
        raise UsageError(f"no kernel named {name!r} in the tuning store at {store.path} "
                         f"(it has: {', '.join(known) or 'none'})")


def cmd_store_list(args: argparse.Namespace) -> int:
    store = _existing_store(args)
    bests = [] if store is None else store.bests(args.kernel)
    if args.json:
        _print_json([_render.best_entry(b) for b in bests])
    elif bests:
        print(_render.store_listing(bests))
    else:
        print("no stored results" + (f" for {args.kernel}" if args.kernel else ""))
    return EXIT_OK


def cmd_store_clear_quarantine(args: argparse.Namespace) -> int:
    store = _existing_store(args)
    if store is None:
        return EXIT_OK
    _known_kernel(store, args.kernel)
    n = store.clear_quarantine(args.kernel)
    print(f"cleared {n} quarantined trial(s){f' of {args.kernel}' if args.kernel else ''} in "
          f"{store.path}: their configs are measured again by the next run")
    return EXIT_OK


def cmd_store_prune(args: argparse.Namespace) -> int:
    if args.older_than is None and args.kernel is None:
        raise UsageError("say what to prune: --older-than DAYS, --kernel NAME, or both")
    store = _existing_store(args)
    if store is None:
        return EXIT_OK
    _known_kernel(store, args.kernel)
    bests, trials = store.prune(args.older_than, args.kernel)
    print(f"pruned {bests} best config(s) and {trials} trial(s) from {store.path}")
    return EXIT_OK


# -- parser ----------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser, *, env: bool = True) -> None:
    p.add_argument("--policy", action="append", default=[], metavar="FILE",
                   help="an extra policy layer (highest); may be repeated")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    if env:
        p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                       help="override an environment fact (triton, torch, python, cuda, "
                            "device, capability, gpu)")
        p.add_argument("--no-probe", action="store_true",
                       help="do not probe the device (it stays unknown unless --env sets it)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tunegate", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)

    policy = verbs.add_parser("policy", help="read, check and apply policies").add_subparsers(
        dest="policy_verb", required=True)
    p = policy.add_parser("explain", help="why a config is excluded, experimental or allowed")
    p.add_argument("config", help="helion.Config(...), key=value, ... or JSON")
    p.add_argument("--kernel", metavar="FILE:NAME", help="a kernel or task: its traits and space")
    p.add_argument("--fail-on", choices=["excluded", "experimental"],
                   help="exit 1 when the verdict is at least this")
    p.add_argument("--store", metavar="PATH", type=_store_path,
                   help="tuning store to read history from")
    _common(p)
    p.set_defaults(run=cmd_explain)
    p = policy.add_parser("check", help="validate policy files (default: the effective layers)")
    p.add_argument("files", nargs="*")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if a FILE weakens or switches off a lower layer's rule")
    _common(p, env=False)
    p.set_defaults(run=cmd_check)
    p = policy.add_parser("list", help="every effective rule and whether it applies here")
    _common(p)
    p.set_defaults(run=cmd_list)
    p = policy.add_parser("env", help="the detected environment facts")
    _common(p)
    p.set_defaults(run=cmd_env)

    space = verbs.add_parser("space", help="inspect spaces").add_subparsers(
        dest="space_verb", required=True)
    p = space.add_parser("show", help="a space, its features and what the policy removes")
    p.add_argument("--kernel", metavar="FILE:NAME", help="a task whose space to show")
    p.add_argument("--config", help="size a Helion space from this config")
    p.add_argument("--blocks", type=_integer(1, MAX_LOOPS), default=1,
                   help="Helion space: number of blocks")
    p.add_argument("--loops", type=_integer(1, MAX_LOOPS), default=1,
                   help="Helion space: number of loops")
    _common(p)
    p.set_defaults(run=cmd_space_show)

    _tune_parser(verbs)
    _store_parser(verbs)
    p = verbs.add_parser("run", help="run a program with every triton.autotune tuned by tunegate",
                         usage="tunegate run [-m MODULE | SCRIPT] [ARGS ...]")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    p.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT and its arguments")
    p.set_defaults(run=cmd_run)
    return parser


def _tune_parser(verbs: Any) -> None:
    p = verbs.add_parser("tune", help="tune a kernel file's task (see README: kernel files)")
    p.add_argument("task", metavar="FILE[:TASK]", help="a Python file declaring a tunegate Task")
    p.add_argument("--budget", type=_integer(1), default=64, help="most configs to measure (64)")
    p.add_argument("--seconds", type=_seconds, help="wall-clock budget in seconds")
    p.add_argument("--strategy", default="auto", type=_strategy,
                   help="auto (default), exhaustive, random or pattern")
    p.add_argument("--seed", type=_seed, default=0, help="seed for search and inputs")
    p.add_argument("--draws", type=_integer(1), default=2,
                   help="input draws per accuracy check, at least 1 (2)")
    p.add_argument("--timeout", type=_seconds,
                   help="seconds per config before it is killed (GPU 60, interpreter 300)")
    p.add_argument("--store", metavar="PATH", type=_store_path,
                   help="SQLite store (default: user cache dir)")
    p.add_argument("--policy", action="append", default=[], metavar="FILE",
                   help="an extra policy layer (highest); may be repeated")
    p.add_argument("--stress-min", type=_integer(1), metavar="N",
                   help="least launches per stress check (GPU 200, interpreter 8)")
    p.add_argument("--stress-max", type=_integer(1), metavar="N",
                   help="most launches per stress check (GPU 1000, interpreter 16)")
    p.add_argument("--stress-seconds", type=_seconds, metavar="S",
                   help="seconds per stress check: launches beyond the least while they "
                        "last (GPU 0.25, interpreter 2); experimental configs get a quarter "
                        "of the check during the search")
    p.add_argument("--stress-draws", type=_integer(1), metavar="N",
                   help="fresh input draws per stress check (4)")
    p.add_argument("--retune", action="store_true",
                   help="search again even if a stored best config exists")
    p.add_argument("--no-recheck", action="store_true",
                   help="reuse a stored best without re-checking it on a fresh draw")
    p.add_argument("--devices", type=_integer(1, 64),
                   help="benchmark workers, one per GPU (default: every visible GPU; "
                        "$TUNEGATE_DEVICES; under the interpreter, simulated workers)")
    p.add_argument("--no-staged-timing", action="store_true",
                   help="time every candidate fully instead of a short measurement first and "
                        "full do_bench for contenders only")
    p.add_argument("--json", action="store_true",
                   help="machine-readable result, printed on failure too (with 'error')")
    p.set_defaults(run=cmd_tune)


def _store_parser(verbs: Any) -> None:
    store = verbs.add_parser("store", help="list and clean the tuning store").add_subparsers(
        dest="store_verb", required=True)

    def command(name: str, help: str, run: Callable[[argparse.Namespace], int]
                ) -> argparse.ArgumentParser:
        p = store.add_parser(name, help=help)
        p.add_argument("--store", metavar="PATH", type=_store_path,
                       help="SQLite store (default: $TUNEGATE_STORE, else user cache dir)")
        p.add_argument("--kernel", metavar="NAME", help="only this kernel (its task's name)")
        p.set_defaults(run=run)
        return p

    p = command("list", "the stored best configs: kernel, problem, best, time, partial, when",
                cmd_store_list)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    command("clear-quarantine", "forget configs that failed an accuracy check, so the next "
            "run measures them again", cmd_store_clear_quarantine)
    p = command("prune", "delete stored bests and trials", cmd_store_prune)
    p.add_argument("--older-than", type=_days, metavar="DAYS",
                   help="only those stored more than DAYS days ago")


def cmd_run(args: argparse.Namespace) -> int:
    from .install import run_program

    if args.module:
        return run_program(args.module, args.program, module=True)
    if not args.program:
        raise UsageError("say which program: tunegate run SCRIPT [ARGS ...] or -m MODULE")
    return run_program(args.program[0], args.program[1:])


def _quiet_stdout() -> None:
    """After a closed pipe: send what is left for stdout to /dev/null, so that flushing at exit
    raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0) or a bad command line (2, said on stderr)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    try:
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `tunegate ... | head -1`: the reader has all it wants
        _quiet_stdout()
        return EXIT_PIPE
    except (TunegateError, FileNotFoundError) as e:
        print(f"tunegate: error: {_render.escape(str(e), keep_newlines=True)}", file=sys.stderr)
        if isinstance(e, PolicyError):
            print("hint: the policies.toml schema is in the README", file=sys.stderr)
        # Bad input is a ValueError (exit 2); a run that failed (TuneError) is a result (exit 1).
        return EXIT_DETECTED if isinstance(e, RuntimeError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("tunegate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
