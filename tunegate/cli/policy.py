"""`tunegate policy explain | check | list | env`: read, check and apply policies."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from .. import _render
from ..errors import TunegateError, UsageError
from ..policy import KernelTraits, LayerReport, Override, Policy, PolicyError, Problem, \
    TraitError, detect_traits, rule_state
from ..space import Config, Space, parse_config_text
from ..space.space import LAUNCH_OPTIONS
from ..space.helion import helion_config, is_triton_name
from . import _args, _json
from ._exit import EXIT_DETECTED, EXIT_OK

__all__ = ["add_parsers", "kernel", "parse_config"]

MAX_CONFIG_TEXT = 10_000


def kernel(reference: str | None, *, tunes: bool = False
           ) -> tuple[KernelTraits | None, Any, bool]:
    """Traits and, for a Task or an autotuned kernel, its task, from `FILE:NAME`/`module:NAME`,
    and whether it is a plain `@triton.jit` kernel (no task: its configs are given one by one);
    unless the command `tunes`, the autotuners the file defines start no workers."""
    if reference is None:
        return None, None, False
    from triton.runtime.jit import KernelInterface

    from ..autotune import kernel_task, warm

    if not tunes:
        warm.forbid()

    with _args.user_output_to_stderr():
        found, task = kernel_task(reference)
    try:
        traits = detect_traits(found)
    except TraitError as e:  # a kernel whose source cannot be read is bad input naming it
        raise UsageError(f"{reference}: {e}") from None
    return traits, task, task is None and isinstance(found, KernelInterface)


def parse_config(text: str, space: Space | None, jit_kernel: bool = False
                 ) -> tuple[Config, Space]:
    """The config `text` gives, completed in `space`; else, for a plain `@triton.jit` kernel
    (`jit_kernel`: it lists no configs), in the space of that one config; else in the Helion
    space it fits."""
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
    if space is None and jit_kernel:
        space = _space_of(values)
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


def _space_of(values: dict[str, Any]) -> Space:
    """The space of one Triton config (its constexprs and launch options) of a kernel."""
    import triton

    from ..autotune.task import space_from_triton_configs

    launch = {k: v for k, v in values.items() if k in LAUNCH_OPTIONS}
    config = triton.Config({k: v for k, v in values.items() if k not in launch}, **launch)
    try:
        return space_from_triton_configs([config])[0]
    except (TypeError, ValueError) as e:  # a value no Triton config holds (a list)
        raise UsageError(f"not a Triton config: {str(e)[:200]}") from None


def cmd_explain(args: argparse.Namespace) -> int:
    policy, env = _args.policy(args), _args.environment(args)
    traits, task, jit_kernel = kernel(args.kernel)
    config, space = parse_config(args.config, task.space if task else None, jit_kernel)
    verdict = policy.explain(config, space, env, traits)
    history = outcome = compared_with = None
    if task is not None:
        from ..autotune.refs import from_config_list

        current = None if from_config_list(task) else task.fingerprint()  # see the store
        history = _args.store(args.store).history(task.kernel_hash(), config, current)
        outcome = _render.tuning_outcome(history)
        compared_with = ("the reference function" if task.reference is not None else
                         "the baseline config (the task has no reference), not ground truth")
    if args.json:
        print(_json.dump(_json.explanation(verdict, env, traits, policy, outcome=outcome,
                                           compared_with=compared_with, history=history)))
    else:
        name = None
        if traits is not None:
            name = traits.name + (" — traits: " + ", ".join(sorted(traits.traits))
                                  if traits.traits else " — no traits")
        print(_render.explanation(verdict, config.text(), env, name, history,
                                  compared_with=compared_with, layers=policy.layer_report()))
    order = {"allowed": 0, "experimental": 1, "excluded": 2}
    if args.fail_on and (order[verdict.status] >= order[args.fail_on] or outcome is not None):
        return EXIT_DETECTED
    return EXIT_OK


def _warn_weakened(file: str, report: LayerReport) -> list[Override]:
    """One stderr warning per rule the checked file weakens or switches off; those rules."""
    mine = [o for o in report.weakened if o.layer == "checked"]
    for o in mine:
        print(f"tunegate: warning: {_render.escape(o.source or file)}: rule {o.rule!r} "
              f"{o.change}: was {o.was}, now {o.now}", file=sys.stderr)
    return mine


def cmd_check(args: argparse.Namespace) -> int:
    """Each FILE as the highest layer over the discovered ones; without FILEs, those layers.
    `--strict` fails (exit 1) where a FILE, or without FILEs any layer, weakens or switches
    off a lower layer's rule."""
    if args.files:
        problems: list[Problem] = []
        checked = []
        for f in args.files:
            try:
                report = Policy.checking(f, extra=args.policy).layer_report()
            except PolicyError as e:
                problems += [p for p in e.problems if p not in problems]
                continue
            top = report.layers[-1]
            weakened = _warn_weakened(f, report)
            checked.append({"file": f, "rules": top.rules, "switch_offs": top.switch_offs,
                            "weakened": [o.model_dump(mode="json") for o in weakened]})
            if not args.json:
                offs = f", {top.switch_offs} switch-off(s)" if top.switch_offs else ""
                print(f"{_render.escape(f)}: ok, {top.rules} rule(s){offs}")
        if problems:
            raise PolicyError(problems)
        code = EXIT_DETECTED if args.strict and any(c["weakened"] for c in checked) else EXIT_OK
        if args.json:
            print(_json.dump({"files": checked, "exit": code}))
        return code
    policy = _args.policy(args)
    report = policy.layer_report()
    code = EXIT_DETECTED if args.strict and report.weakened else EXIT_OK
    if args.json:
        print(_json.dump({**report.model_dump(mode="json"),
                          "weakened": [o.model_dump(mode="json") for o in report.weakened],
                          "rules": len(policy.rules), "fingerprint": policy.fingerprint(),
                          "exit": code}))
        return code
    print(_render.layer_report(report))
    print(f"\nok: {len(policy.rules)} effective rule(s), fingerprint {policy.fingerprint()}")
    return code


def cmd_list(args: argparse.Namespace) -> int:
    policy, env = _args.policy(args), _args.environment(args)
    rows = []
    for r in policy.effective(env):
        state = rule_state(r, env, None)
        rows.append({**r.model_dump(mode="json", include={"id", "action", "title"}),
                     "bugs": list(r.bugs), "source": r.where(), "state": state.state,
                     "why": state.why or (f"needs {', '.join(state.unknown)}"
                                          if state.unknown else "")})
    if args.json:
        print(_json.dump(_json.rules(policy, rows)))
        return EXIT_OK
    print(_render.table(["rule", "action", "here", "bugs", "source", "title"],
                        [(r["id"], r["action"], r["state"], ", ".join(r["bugs"]) or "-",
                          r["source"], r["title"]) for r in rows]))
    print(f"\n{len(rows)} rules; policy fingerprint {policy.fingerprint()}")
    print("\n" + _render.layer_report(policy.layer_report()))
    return EXIT_OK


def cmd_env(args: argparse.Namespace) -> int:
    env = _args.environment(args)
    if args.json:
        print(_json.dump(_json.environment(env)))
        return EXIT_OK
    for key, value in env.describe().items():
        mark = "  (set by hand)" if key in env.overridden else ""
        print(f"{key:<11} {value}{mark}")
    if env.range_args is not None:
        print(f"{'tl.range':<11} {', '.join(env.range_args)}")
    print(f"{'fingerprint':<11} {env.fingerprint()}")
    return EXIT_OK


def add_parsers(verbs: Any) -> None:
    verbs.add_parser("policy", help="read, check and apply policies", fill=_add_verbs)


def _add_verbs(parser: _args.Parser) -> None:
    policy = parser.add_subparsers(dest="policy_verb", required=True)
    policy.add_parser("explain", help="why a config is excluded, experimental or allowed",
                      fill=_explain_arguments)
    policy.add_parser("check", help="validate policy files (default: the effective layers)",
                      fill=_check_arguments)
    policy.add_parser("list", help="every effective rule and whether it applies here",
                      fill=_listing_arguments(cmd_list))
    policy.add_parser("env", help="the detected environment facts",
                      fill=_listing_arguments(cmd_env))
    from . import self_check  # verify and suggest: after this module, which they use

    self_check.add_parsers(policy)


def _explain_arguments(p: _args.Parser) -> None:
    p.add_argument("config", help="helion.Config(...), key=value, ... or JSON")
    p.add_argument("--kernel", metavar="FILE:NAME", help="a kernel or task: its traits and space")
    p.add_argument("--fail-on", choices=["excluded", "experimental"],
                   help="exit 1 when the verdict is at least this")
    p.add_argument("--store", metavar="PATH", type=_args.store_path,
                   help="tuning store to read history from")
    _args.common(p)
    p.set_defaults(run=cmd_explain)


def _check_arguments(p: _args.Parser) -> None:
    p.add_argument("files", nargs="*")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if a FILE (without FILEs: any layer) weakens or switches off a "
                        "lower layer's rule")
    _args.common(p, env=False)
    p.set_defaults(run=cmd_check)


def _listing_arguments(run: Callable[[argparse.Namespace], int]
                       ) -> Callable[[_args.Parser], None]:
    """The arguments of `policy list` and `policy env`: the common ones, and what runs."""
    def fill(p: _args.Parser) -> None:
        _args.common(p)
        p.set_defaults(run=run)
    return fill
