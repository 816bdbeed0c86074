"""`tunegate`: a thin command-line layer over tunegate.space, tunegate.policy and tunegate.autotune.

Exit codes: 0 success; 1 a result the user asked to detect (`--fail-on`, a failed tuning run);
2 bad input (a malformed policy or config, an unknown fact, a missing file).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Sequence

from . import _render
from .kernelfile import resolve, unwrap
from .policy import (Environment, KernelTraits, Policy, PolicyError, Problem,
                     detect_environment,
                     detect_traits)
from .space import Config, Space, helion_space, helion_space_for
from .space.helion import parse_config_text
from .errors import TunegateError

__all__ = ["main"]

EXIT_OK, EXIT_DETECTED, EXIT_USAGE = 0, 1, 2


class UsageError(ValueError, TunegateError):
    """Bad command-line input that is not one of the library's own errors."""


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

    _, obj = resolve(reference, Task)
    obj = getattr(obj, "task", obj)  # a function decorated with tunegate's legacy decorator
    if isinstance(obj, Task):
        return detect_traits(obj.kernel), obj
    configs = next((k.configs for k in _links(obj) if hasattr(k, "configs")), None)
    kernel = unwrap(obj)
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
    values = parse_config_text(text)
    if space is None:
        space = helion_space_for(values)
    return space.complete(values), space


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


# -- policy ----------------------------------------------------------------------------------
def cmd_explain(args: argparse.Namespace) -> int:
    policy, env = _policy(args), _environment(args)
    traits, task = _kernel(args.kernel)
    config, space = _config(args.config, task.space if task else None)
    verdict = policy.explain(config, space, env, traits)
    history = outcome = compared_with = None
    if task is not None:
        from .autotune.store import open_store

        history = open_store(args.store).history(task.kernel_hash(), config, task.fingerprint())
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
            "policy": {"fingerprint": policy.fingerprint(), "layers": policy.layers},
            "history": history,
        })
    else:
        kernel = None
        if traits is not None:
            kernel = traits.name + (" — traits: " + ", ".join(sorted(traits.traits))
                                    if traits.traits else " — no traits")
        print(_render.explanation(verdict, config.text(), env, kernel, history,
                                  compared_with=compared_with))
    order = {"allowed": 0, "experimental": 1, "excluded": 2}
    if args.fail_on and (order[verdict.status] >= order[args.fail_on] or outcome is not None):
        return EXIT_DETECTED
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """Each FILE as the highest layer over the discovered ones; without FILEs, those layers."""
    if args.files:
        problems: list[Problem] = []
        for f in args.files:
            try:
                top = Policy.checking(f, extra=args.policy).layer_report().layers[-1]
            except PolicyError as e:
                problems += [p for p in e.problems if p not in problems]
                continue
            offs = f", {top.switch_offs} switch-off(s)" if top.switch_offs else ""
            print(f"{_render.escape(f)}: ok, {top.rules} rule(s){offs}")
        if problems:
            raise PolicyError(problems)
        return EXIT_OK
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
    parser = argparse.ArgumentParser(prog="tunegate", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)

    policy = verbs.add_parser("policy", help="read, check and apply policies").add_subparsers(
        dest="policy_verb", required=True)
    p = policy.add_parser("explain", help="why a config is excluded, experimental or allowed")
    p.add_argument("config", help="helion.Config(...), key=value, ... or JSON")
    p.add_argument("--kernel", metavar="FILE:NAME", help="a kernel or task: its traits and space")
    p.add_argument("--fail-on", choices=["excluded", "experimental"],
                   help="exit 1 when the verdict is at least this")
    p.add_argument("--store", metavar="PATH", help="tuning store to read history from")
    _common(p)
    p.set_defaults(run=cmd_explain)
    p = policy.add_parser("check", help="validate policy files (default: the effective layers)")
    p.add_argument("files", nargs="*")
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
    p.add_argument("--blocks", type=int, default=1, help="Helion space: number of blocks")
    p.add_argument("--loops", type=int, default=1, help="Helion space: number of loops")
    _common(p)
    p.set_defaults(run=cmd_space_show)

    from .autotune.cli import add_tune_parser

    add_tune_parser(verbs)
    p = verbs.add_parser("run", help="run a program with every triton.autotune tuned by tunegate",
                         usage="tunegate run [-m MODULE | SCRIPT] [ARGS ...]")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    p.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT and its arguments")
    p.set_defaults(run=cmd_run)
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    from .install import run_program

    if args.module:
        return run_program(args.module, args.program, module=True)
    if not args.program:
        raise UsageError("say which program: tunegate run SCRIPT [ARGS ...] or -m MODULE")
    return run_program(args.program[0], args.program[1:])


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (TunegateError, FileNotFoundError) as e:
        print(f"tunegate: error: {e}", file=sys.stderr)
        if isinstance(e, PolicyError):
            print("hint: the policies.toml schema is in the README", file=sys.stderr)
        # Bad input is a ValueError (exit 2); a run that failed (TuneError) is a result (exit 1).
        return EXIT_DETECTED if isinstance(e, RuntimeError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("tunegate: interrupted", file=sys.stderr)
        return 130
