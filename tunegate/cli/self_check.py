"""`tunegate policy verify | suggest`: rules that check themselves against this machine."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from . import _args, _json
from ._exit import EXIT_OK
from .policy import kernel
from .store import existing_store

__all__ = ["add_parsers"]


def cmd_verify(args: argparse.Namespace) -> int:
    from ..autotune.verify import exit_code, render_checks, verify

    policy, env = _args.policy(args), _args.environment(args)
    with _args.user_output_to_stderr():
        checks = verify(policy, env, args.rules, timeout=args.timeout)
    if args.json:
        print(_json.dump({"checks": [c.model_dump(mode="json") for c in checks],
                          "exit": exit_code(checks)}))
    else:
        print(render_checks(checks))
    return exit_code(checks)


def cmd_suggest(args: argparse.Namespace) -> int:
    from ..autotune.suggest import render_suggestions, suggest

    task = kernel(args.kernel, tunes=True)[1] if args.kernel else None
    if args.kernel and task is None:
        raise UsageError(f"{args.kernel} is not a tunegate Task: --kernel needs one")
    store = existing_store(args)
    found = suggest(store, task) if store is not None else []
    if args.json:
        print(_json.dump([s.model_dump(mode="json") for s in found]))
    else:
        print(render_suggestions(found))
    return EXIT_OK


def add_parsers(policy: Any) -> None:
    policy.add_parser("verify", help="run rules' reproducers here: is each bug still there?",
                      fill=_verify_arguments)
    policy.add_parser("suggest", help="propose a rule (TOML) from the store's quarantine",
                      fill=_suggest_arguments)


def _verify_arguments(p: _args.Parser) -> None:
    p.add_argument("rules", nargs="*", metavar="RULE", help="rule ids (default: every rule "
                   "that names a reproducer)")
    p.add_argument("--timeout", type=_args.seconds, metavar="SECONDS",
                   help="per config (default 60 on a GPU, 300 under the interpreter)")
    _args.common(p)
    p.set_defaults(run=cmd_verify)


def _suggest_arguments(p: _args.Parser) -> None:
    p.add_argument("--store", metavar="PATH", type=_args.store_path, help="the tuning store to read")
    p.add_argument("--kernel", metavar="FILE:NAME",
                   help="the kernel's task: name the features and loops wrong configs share")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=cmd_suggest)
