"""`tunegate run SCRIPT | -m MODULE`: run a program with every triton.autotune tuned by
tunegate, then a table of what was tuned (on stderr).

What is tuned is stored (in $TUNEGATE_STORE, else the default store), so the next run reuses
it after a cheap re-check; `--no-store` tunes from scratch and keeps nothing."""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from ..errors import UsageError

__all__ = ["add_parsers", "split_argv"]

_OWN_FLAGS = ("--no-store", "-h", "--help")


def split_argv(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """For `tunegate run`: (tunegate's arguments, the program's), split where the program
    starts (after `-m MODULE`, or at SCRIPT), so the program's own options reach it as they
    reach it under `python`; other commands: (argv, None)."""
    if argv[:1] != ["run"]:
        return argv, None
    own = ["run"]
    rest = argv[1:]
    while rest:
        token = rest[0]
        if token in _OWN_FLAGS:
            own.append(rest.pop(0))
        elif token == "-m" and len(rest) > 1:
            own += rest[:2]
            return own, rest[2:]
        elif token.startswith("-m") and len(token) > 2:  # `-mpytest`, as python reads it
            own += ["-m", token[2:]]
            return own, rest[1:]
        elif token.startswith("-"):  # not tunegate's: argparse says so
            own.append(rest.pop(0))
        else:
            return own, rest
    return own, []


def cmd_run(args: argparse.Namespace) -> int:
    from ..autotune import default_store_path
    from ..routing import run_program

    if not args.module and not args.program:
        raise UsageError("say which program: tunegate run SCRIPT [ARGS ...] or -m MODULE")
    with tempfile.TemporaryDirectory(prefix="tunegate-run-") as scratch:
        if args.no_store:  # a store of this run's own, removed with it
            os.environ["TUNEGATE_STORE"] = os.path.join(scratch, "store.sqlite")
        else:  # the program's tunings are kept for its next run
            os.environ.setdefault("TUNEGATE_STORE", str(default_store_path()))
        if args.module:
            return run_program(args.module, args.program, module=True)
        return run_program(args.program[0], args.program[1:])


def add_parsers(verbs: Any) -> None:
    verbs.add_parser("run", help="run a program with every triton.autotune tuned by tunegate",
                     usage="tunegate run [-m MODULE | SCRIPT] [ARGS ...]", fill=_arguments)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    p.add_argument("--no-store", action="store_true",
                   help="tune from scratch and keep nothing (default: reuse and add to the store)")
    p.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT and its arguments")
    p.set_defaults(run=cmd_run)
