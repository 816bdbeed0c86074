"""`tunegate space show`: a space, its features and what the policy removes from it."""

from __future__ import annotations

import argparse
from typing import Any

from .. import _render
from ..errors import UsageError
from ..space import helion_space
from . import _args, _json
from ._exit import EXIT_OK
from .policy import kernel, parse_config

__all__ = ["add_parsers"]


def cmd_space_show(args: argparse.Namespace) -> int:
    traits, task, jit_kernel = kernel(args.kernel)
    if task is not None:
        space = task.space
    elif args.config:
        space = parse_config(args.config, None, jit_kernel)[1]
    elif jit_kernel:
        raise UsageError(f"{args.kernel} is a plain @triton.jit kernel: it lists no configs, so "
                         "it has no space to show; give --config 'NAME=value, ...' for one "
                         "config's, or name its Task or autotuned kernel")
    else:
        space = helion_space(blocks=args.blocks, loops=args.loops)
    env, policy = _args.environment(args), _args.policy(args)
    region = policy.gate(space, env, traits)
    total = space.cardinality()
    params = []
    for name, p in space.parameters.items():
        allowed = set(map(repr, region.allowed[name]))  # a set: a domain may be large
        bound = sorted({d.feature for d in region.binding.drivers if name in d.parameters})
        params.append({"name": name, "domain": p.domain.describe(), "features": bound,
                       "default": p.domain.default(),
                       "excluded_values": [v for v in p.domain.scalar.values()
                                           if repr(v) not in allowed]})
    removals = [{"rule": r.rule, "removes": r.count, "exact": r.exact, "assumed": r.assumed}
                for r in region.removals()]
    if args.json:
        print(_json.dump(_json.space(total, region, params, removals, traits)))
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


def add_parsers(verbs: Any) -> None:
    verbs.add_parser("space", help="inspect spaces", fill=_add_verbs)


def _add_verbs(parser: _args.Parser) -> None:
    space = parser.add_subparsers(dest="space_verb", required=True)
    p = space.add_parser("show", help="a space, its features and what the policy removes")
    p.add_argument("--kernel", metavar="FILE:NAME", help="a task whose space to show")
    p.add_argument("--config", help="size a Helion space from this config")
    p.add_argument("--blocks", type=_args.integer(1, _args.MAX_LOOPS), default=1,
                   help="Helion space: number of blocks")
    p.add_argument("--loops", type=_args.integer(1, _args.MAX_LOOPS), default=1,
                   help="Helion space: number of loops")
    _args.common(p)
    p.set_defaults(run=cmd_space_show)
