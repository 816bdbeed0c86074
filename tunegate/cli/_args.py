"""The CLI's argument types and shared options: every value is checked before any work starts."""

from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn, Sequence

from ..errors import UsageError
from ..policy import Environment, Policy, detect_environment

__all__ = ["MAX_LOOPS", "Parser", "common", "days", "environment", "integer", "policy", "seconds",
           "seed", "store", "store_path", "strategy", "user_output_to_stderr"]

MAX_LOOPS = 16  # `space show --loops/--blocks`: beyond this the table is no use to a person
EXIT_USAGE = 2  # argparse's own exit status for a bad command line (see _exit.EXIT_CODES)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one `tunegate: error:` line (exit 2), and
    keeps it (`refused`) for a `--json` caller's document. A verb's parser may be given its
    arguments by `fill` when it is first used: a command line builds only the verbs it names."""

    refused: str | None = None

    def __init__(self, *args: Any, fill: Callable[["Parser"], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()

    def format_help(self) -> str:
        self._filled()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        Parser.refused = f"{message} (see `{self.prog} --help`)"
        self.exit(EXIT_USAGE, f"tunegate: error: {Parser.refused}\n")


def _number(text: str, kind: Callable[[str], Any]) -> Any:
    """`kind(text)` for ASCII text only: Python reads '١٢' as 12, an option must not."""
    if not text.isascii():
        raise ValueError(f"not ASCII: {text!r}")
    return kind(text)


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` (to `high`)."""
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


def _amount(unit: str, *, zero: bool) -> Callable[[str], float]:
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


seconds = _amount("seconds", zero=False)
days = _amount("days", zero=True)


def seed(text: str) -> int:
    try:
        value = _number(text, int)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**63 - 1, got {value}")
    return value


def store_path(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a file path, or leave the option out "
                                         "for the default store")
    return text


def policy_path(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a policy file's path")
    return text


def strategy(text: str) -> str:
    from ..autotune import STRATEGIES

    known = ["auto", *STRATEGIES]
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown strategy {text!r} (known: "
                                         f"{', '.join(known)})")
    return text


def policy_option(p: argparse.ArgumentParser) -> None:
    """--policy FILE, repeatable: extra policy layers."""
    p.add_argument("--policy", action="append", default=[], metavar="FILE", type=policy_path,
                   help="an extra policy layer (highest); may be repeated")


def common(p: argparse.ArgumentParser, *, env: bool = True) -> None:
    """--policy and --json, and (with `env`) --env and --no-probe."""
    policy_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    if env:
        p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                       help="override an environment fact (triton, torch, python, cuda, "
                            "device, capability, gpu)")
        p.add_argument("--no-probe", action="store_true",
                       help="do not probe the device (it stays unknown unless --env sets it)")


def _env_overrides(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--env takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def environment(args: argparse.Namespace) -> Environment:
    """The detected environment with the command's --env overrides."""
    overrides = _env_overrides(args.env)
    probe = "device" not in overrides and not getattr(args, "no_probe", False)
    return detect_environment(probe_device=probe).with_overrides(overrides)


def policy(args: argparse.Namespace) -> Policy:
    return Policy.load(extra=args.policy)


def store(path: str | None) -> Any:
    """The tuning store at `path` (else the default); lock waits are reported on stderr."""
    from ..autotune import open_store

    return open_store(path, on_wait=lambda message: print(f"tunegate: {message}",
                                                          file=sys.stderr))


@contextmanager
def user_output_to_stderr() -> Iterator[None]:
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
