"""`tunegate`: a thin command-line layer over tunegate.space, tunegate.policy and tunegate.autotune.

One module per verb (`policy`, `space`, `tune`, `store`, `run`); argument types in `_args`,
`--json` documents in `_json`, text in `tunegate._render`, and exit codes in `_exit`:
0 success; 1 a result the user asked to detect (`--fail-on`, `--strict`, a failed tuning run);
2 bad input (a malformed policy or config, an unknown fact, a missing file, a bad option or
store); 3 `policy verify` found a rule's bug not in the state the policy assumes; 130
interrupted; 141 stdout closed early (`| head`), quietly.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
import threading
from typing import Sequence

from . import _args, _json, policy, run, space, store, tune
from ._exit import EXIT_DETECTED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PIPE, EXIT_USAGE, exit_code

__all__ = ["EXIT_DETECTED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE",
           "build_parser", "console", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = _args.Parser(prog="tunegate", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    for verb in (policy, space, tune, store, run):
        verb.add_parsers(verbs)
    return parser


def console() -> int:
    """The `tunegate` command: `main`, with what the imports made frozen for the garbage
    collector (but for `tunegate run`), and except that where `tunegate run`'s program was stopped
    by a KeyboardInterrupt (its traceback printed), the command ends as python ends such a
    program: by SIGINT, once its exit handlers ran (what a parent process sees)."""
    if run.split_argv(sys.argv[1:])[1] is None:  # a program `tunegate run` runs is left alone
        # What the imports made (modules, classes, pydantic's validators) lives until exit:
        # frozen, no collection traverses it again, the one at exit included. That is ~30 ms
        # of a ~200 ms `tunegate policy explain`.
        gc.freeze()
    code = main()
    if code >= 0:  # an exit status; only `tunegate run` gives -SIGINT
        return code
    import signal  # here, not at the top: the signal module costs every command ~1 ms

    if code != -signal.SIGINT:
        return code
    # As python ends such a program: it joins the program's threads, runs the exit handlers and
    # dies of the SIGINT. (Left to python, a KeyboardInterrupt raised here gave exit status 1
    # while the spare workers were still starting.)
    for thread in threading.enumerate():
        if not thread.daemon and thread is not threading.current_thread():
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    return EXIT_INTERRUPTED  # where the signal did not end the process


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: this process's); its exit status, or for `tunegate
    run` -signal.SIGINT where a KeyboardInterrupt stopped the program (`console` ends so)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own, program = run.split_argv(argv)  # `tunegate run`'s program keeps all its arguments
    _args.Parser.refused = None
    try:
        args = build_parser().parse_args(own)
        if program is not None:
            args.program = program
    except SystemExit as e:  # --help (0) or a bad command line (2, said on stderr, and on
        code = e.code if isinstance(e.code, int) else EXIT_USAGE  # stdout for --json)
        if code == EXIT_USAGE and "--json" in own and _args.Parser.refused:
            print(_json.dump({"error": _args.Parser.refused, "exit": code}))
        return code
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except (Exception, KeyboardInterrupt) as e:
        code_for = exit_code(e)
        if code_for is None:
            raise
        if getattr(args, "json", False) and not getattr(args, "json_written", False) \
                and code_for != EXIT_PIPE:  # a --json caller reads it on stdout too
            print(_json.dump({"error": str(e) or type(e).__name__, "exit": code_for}))
        return code_for
