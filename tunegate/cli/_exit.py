"""The CLI boundary: each error class maps to one exit code and one line on stderr.

As pypa/build's `_handle_build_error`: commands raise, `exit_code` is the only place that turns
an error into what the user sees. A bug (an error that is not tunegate's) is not caught here.
"""

from __future__ import annotations

import os
import sys

from .. import _render
from ..errors import TunegateError

__all__ = ["EXIT_DETECTED", "EXIT_DIFFERS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE",
           "exit_code"]

EXIT_OK = 0           # success
EXIT_DETECTED = 1     # a result the user asked to detect (--fail-on, --strict), a failed run
EXIT_USAGE = 2        # bad input: a malformed policy or config, a missing file, a bad option
EXIT_DIFFERS = 3      # `policy verify`: a rule's bug is not in the state the policy assumes
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
EXIT_PIPE = 141       # stdout closed early (`| head`): quietly


def _hint(error: BaseException) -> str | None:
    from ..policy import PolicyError

    return "the policies.toml schema is in the README" if isinstance(error, PolicyError) else None


def exit_code(error: BaseException) -> int | None:
    """Report `error` on stderr (one line, plus a hint line for some) and return its exit
    code; None for an error that is not the user's (a bug: let it show its traceback)."""
    if isinstance(error, BrokenPipeError):  # `tunegate ... | head -1`: the reader has enough
        _quiet_stdout()
        return EXIT_PIPE
    if isinstance(error, KeyboardInterrupt):
        print("tunegate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not isinstance(error, (TunegateError, FileNotFoundError)):
        return None
    print(f"tunegate: error: {_render.escape(str(error), keep_newlines=True)}", file=sys.stderr)
    hint = _hint(error)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    # A run that failed (TuneError and other RuntimeErrors) is a result; the rest is bad input.
    return EXIT_DETECTED if isinstance(error, RuntimeError) else EXIT_USAGE


def _quiet_stdout() -> None:
    """After a closed pipe: send what is left for stdout to /dev/null, so that flushing at exit
    raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
