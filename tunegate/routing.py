"""Route every `triton.autotune` of a program through tunegate, without editing the program.

`install()` swaps Triton's `Autotuner` class for tunegate's subclass in the places Triton binds
it. `triton.autotune` looks the class up when it decorates, so every kernel decorated after
`install()` (also through `from triton import autotune`) is gated and checked by tunegate.
Kernels decorated before it are left alone; `wrap()` converts one of those.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Sequence

from .autotune import trace
from .errors import TunegateError
from .kernelfile import KernelFileError

__all__ = ["install", "installed", "run_program", "uninstall", "wrap"]

_SAVED: dict[tuple[str, str], Any] = {}
_PLACES = (("triton.runtime.autotuner", "Autotuner"), ("triton.runtime", "Autotuner"),
           ("triton", "Autotuner"))


def install() -> None:
    """Make every later `triton.autotune` / `triton.runtime.Autotuner(...)` use tunegate."""
    import triton.runtime.autotuner  # noqa: F401  (the modules to patch must be loaded)

    from .autotune.dropin import Autotuner

    for module_name, attr in _PLACES:
        module = sys.modules[module_name]
        if hasattr(module, attr) and (module_name, attr) not in _SAVED:
            _SAVED[(module_name, attr)] = getattr(module, attr)
            setattr(module, attr, Autotuner)


def uninstall() -> None:
    """Put Triton's own `Autotuner` back; kernels already decorated keep tunegate's."""
    for (module_name, attr), original in _SAVED.items():
        setattr(sys.modules[module_name], attr, original)
    _SAVED.clear()


def installed() -> bool:
    return bool(_SAVED)


def wrap(kernel: Any, **tunegate_options: Any) -> Any:
    """tunegate's `Autotuner` with the configs, key, hooks and pruning of Triton's `kernel`.

    `kernel` is a `triton.autotune`d kernel (an `Autotuner`, maybe under `@triton.heuristics`),
    e.g. one imported from an installed library. The outermost Autotuner in its `.fn` chain is
    replaced; heuristics around or inside it are kept.
    """
    from triton.runtime.autotuner import Heuristics

    from .autotune.dropin import Autotuner, DropInError
    from .kernelfile import chain

    links = chain(kernel)
    index = next((i for i, k in enumerate(links) if hasattr(k, "configs") and hasattr(k, "keys")),
                 None)
    if index is None:
        raise DropInError(f"{kernel!r} has no triton.autotune in its .fn chain")
    old = links[index]
    prune = {"perf_model": old.perf_model, "top_k": old.configs_top_k,
             "early_config_prune": old.early_config_prune}
    new = Autotuner(old.fn, old.arg_names, old.configs, old.keys, old.reset_to_zero,
                    old.restore_value,
                    pre_hook=old.pre_hook if old.user_defined_pre_hook else None,
                    post_hook=old.post_hook if old.user_defined_post_hook else None,
                    prune_configs_by=prune, do_bench=old._do_bench,
                    cache_results=bool(getattr(old, "cache_results", False)), **tunegate_options)
    new.origin = old
    for outer in reversed(links[:index]):
        if not isinstance(outer, Heuristics):
            raise DropInError(f"cannot rebuild {outer!r} around the new autotuner")
        new = Heuristics(new, outer.arg_names, outer.values)
    return new


def run_program(target: str, args: Sequence[str] = (), *, module: bool = False) -> int:
    """Run a script (or, with `module`, `python -m` style a module) with `install()` active.

    Without a GPU the program's kernels run under Triton's interpreter. Returns the
    program's exit status, `-signal.SIGINT` where a KeyboardInterrupt (a Ctrl-C) stopped it
    (its traceback printed, as python prints it); a tunegate error that ends the program is
    raised, for the CLI to say in one line. The script's folder is first on `sys.path`, as
    `python SCRIPT` has it; a script that tunes from its top level is tuned in this process
    (workers would run that code again). When the program ends, a table of what was tuned (if
    anything) goes to stderr. The Python processes the program starts are tuned by tunegate
    too (`children`); the table has only this process's tunings.
    """
    import runpy

    from .autotune.backend import interpret_without_gpu
    from .autotune.run_memory import command_id
    from .autotune.warm import warm_up
    from .children import reaching_children

    if not module:
        _check_readable(target)
    if module and not _module_exists(target):
        raise KernelFileError(f"{target}: no such module (on sys.path: the current folder, "
                              "$PYTHONPATH and installed packages)")
    trace.event("tunegate run", target=target)  # from here to "program": tunegate's start-up
    with trace.span("gpu or interpreter"):
        interpret_without_gpu()  # before the program decorates its kernels
    with trace.span("install"):
        install()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [target, *args]
    command = command_id(target, args, module)
    interrupted = False
    try:
        sys.path[:1] = [_first_on_path(target, module)]
        # the workers start while the program does, unless it will only reuse stored bests
        warm_up(here=True, spares=not _expects_reuse(command))
        trace.event("program", target=target)
        with reaching_children():
            if module:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(os.path.abspath(target), run_name="__main__")
    except SystemExit as e:
        return _exit_status(e)
    except KeyboardInterrupt as e:  # a Ctrl-C, or the program's own raise: as python reports
        interrupted = True
        _print_program_traceback(e)  # it (the command then ends by SIGINT, see cli.console)
        return -signal.SIGINT
    except TunegateError:  # tunegate's own (a kernel it cannot tune): said in one line
        raise
    except Exception as e:  # the program's own failure: as `python` reports it, not as ours
        _print_program_traceback(e)
        return 1
    finally:
        trace.event("program ended")
        sys.argv, sys.path[:] = saved_argv, saved_path
        _print_tunings()
        if not interrupted:
            _remember(command)
    return 0


def _store_path() -> str:
    from .autotune.store import default_store_path

    return str(default_store_path())


def _expects_reuse(command: str) -> bool:
    """Whether the command's last run ended with bests that are all still stored (see
    `run_memory`); not asked where TUNEGATE_WARM says what to do (1: warm up whatever it
    expects; 0: never)."""
    from .autotune.run_memory import expects_reuse

    if os.environ.get("TUNEGATE_WARM") in ("0", "1"):
        return False
    with trace.span("expects reuse"):
        return expects_reuse(_store_path(), command)


def _remember(command: str) -> None:
    """The store keys of the bests this run ended with, for its next run (`run_memory`);
    forgotten where a tuning ended without one."""
    from .autotune import tunings
    from .autotune.run_memory import remember

    keys = [t.stored_as for t in tunings()]
    remember(_store_path(), command, None if None in keys else keys)


def _first_on_path(target: str, module: bool) -> str:
    """python's own first `sys.path` entry, in place of the launcher's (tunegate's folder, or
    the current one under `python -m tunegate`): the current folder for a module, a folder
    run for its __main__.py itself, else the script's real folder (symlinks resolved)."""
    if module:
        return os.getcwd()
    real = os.path.realpath(target)
    return real if os.path.isdir(real) else os.path.dirname(real)


def _print_tunings() -> None:
    """The table of what the drop-in tuned, on stderr; nothing when nothing was tuned."""
    from . import _render
    from .autotune import tunings

    done = tunings()
    if done:
        sys.stdout.flush()
        print(f"\ntunegate: {len(done)} tuning(s)\n{_render.tunings_table(done)}",
              file=sys.stderr, flush=True)


def _check_readable(script: str) -> None:
    """A missing or unreadable script is bad input (one error line), before anything runs."""
    try:
        with open(script, "rb"):
            pass
    except FileNotFoundError:
        raise KernelFileError(f"{script}: no such file") from None
    except IsADirectoryError:  # run as python runs it: its __main__.py
        if not os.path.isfile(os.path.join(script, "__main__.py")):
            raise KernelFileError(f"{script}: is a folder without a __main__.py, not a script") \
                from None
    except OSError as e:
        raise KernelFileError(f"{script}: cannot read it ({e.strerror or e})") from None


def _exit_status(e: SystemExit) -> int:
    """The status `python` exits with for `sys.exit(code)`; a message is printed on stderr
    and gives 1, as `python` does."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr, flush=True)
    return 1


def _print_program_traceback(e: BaseException) -> None:
    """The traceback `python` would print: tunegate's and runpy's frames left out."""
    import traceback

    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_globals.get("__name__") in ("runpy", __name__):
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb, file=sys.stderr)
    sys.stderr.flush()


def _module_exists(name: str) -> bool:
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)
