"""`tunegate store list | clear-quarantine | prune`: list and clean the tuning store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from .. import _render
from ..errors import UsageError
from . import _args, _json
from ._exit import EXIT_OK

__all__ = ["add_parsers", "existing_store"]


def existing_store(args: argparse.Namespace) -> Any:
    """The store the command names, or None (said on stderr) when there is none yet."""
    from ..autotune import default_store_path

    path = Path(args.store) if args.store is not None else default_store_path()
    if not path.exists():
        print(f"tunegate: no tuning store at {path} yet", file=sys.stderr)
        return None
    return _args.store(str(path))


def _known_kernel(store: Any, name: str | None) -> None:
    if name is not None and name not in (known := store.kernel_names()):
        raise UsageError(f"no kernel named {name!r} in the tuning store at {store.path} "
                         f"(it has: {', '.join(known) or 'none'})")


def cmd_store_list(args: argparse.Namespace) -> int:
    store = existing_store(args)
    if store is not None:
        _known_kernel(store, args.kernel)
    bests = [] if store is None else store.bests(args.kernel)
    if args.json:
        print(_json.dump([_render.best_entry(b) for b in bests]))
    elif bests:
        print(_render.store_listing(bests))
    else:
        print("no stored results" + (f" for {args.kernel}" if args.kernel else ""))
    return EXIT_OK


def cmd_store_clear_quarantine(args: argparse.Namespace) -> int:
    store = existing_store(args)
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
    store = existing_store(args)
    if store is None:
        return EXIT_OK
    _known_kernel(store, args.kernel)
    bests, trials = store.prune(args.older_than, args.kernel)
    print(f"pruned {bests} best config(s) and {trials} trial(s) from {store.path}")
    return EXIT_OK


def add_parsers(verbs: Any) -> None:
    verbs.add_parser("store", help="list and clean the tuning store", fill=_add_verbs)


def _add_verbs(parser: _args.Parser) -> None:
    store = parser.add_subparsers(dest="store_verb", required=True)

    def command(name: str, help: str, run: Callable[[argparse.Namespace], int]
                ) -> argparse.ArgumentParser:
        p = store.add_parser(name, help=help)
        p.add_argument("--store", metavar="PATH", type=_args.store_path,
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
    p.add_argument("--older-than", type=_args.days, metavar="DAYS",
                   help="only those stored more than DAYS days ago")
