"""References to kernels: `FILE[:NAME]` and `module:NAME`, `.fn` chains, and whether a module
can be re-imported by name (as worker processes do).

Importing the file or module runs the user's own code (it defines their kernels); policies are
never run. A file's folder is put on `sys.path`, so its sibling imports work as under
`python FILE`. This module imports neither torch nor triton, so space, policy and autotune all
use it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ._text import short_hash
from ._threads import Watch
from .errors import TunegateError

__all__ = ["KernelFileError", "chain", "import_reference", "importable_name", "jit_function",
           "load_module", "python_function", "resolve", "split_reference", "unguarded_line"]

IMPORT_WARN_SECONDS = 10.0  # after this long importing a kernel file, say so on stderr
USER_MODULE_PREFIX = "tunegate_user_"  # the module name a kernel file is imported under
MAX_CHAIN = 64  # links followed down a `.fn` chain; an object whose `.fn` never ends stops here


class KernelFileError(ValueError, TunegateError):
    """The file cannot be imported, or has no object of that name."""


def _existing_file(path: str | Path) -> Path:
    """The resolved path of an existing file; a missing file, a symlink loop or an over-long
    path is bad input (one error line), not a traceback."""
    try:
        resolved = Path(path).resolve(strict=True)
        if resolved.is_file():
            return resolved
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop before Python 3.13
        reason = getattr(e, "strerror", None) or str(e)
        raise KernelFileError(f"{_short(str(path))}: cannot open it ({reason})") from None
    what = "is a folder, not a kernel file" if resolved.is_dir() else "is not a regular file"
    raise KernelFileError(f"{_short(str(path))}: {what}")


def _short(text: str, limit: int = 200) -> str:
    """`text`, cut to `limit` characters so that an over-long path keeps the error one line."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _exec_watched(spec: Any, module: ModuleType, path: Path) -> None:
    """Run the module's code; say on stderr when it takes long (a hang at import would
    otherwise look like tunegate hanging). The import is never cut short."""
    timer = Watch(IMPORT_WARN_SECONDS, lambda: print(
        f"tunegate: warning: still importing {path} after {IMPORT_WARN_SECONDS:g} s",
        file=sys.stderr, flush=True), name="tunegate-import-watch")
    try:
        spec.loader.exec_module(module)
    finally:
        timer.cancel()


def load_module(path: str | Path) -> ModuleType:
    """Import a Python file by path, once per process (keyed by its resolved path)."""
    path = _existing_file(path)
    name = USER_MODULE_PREFIX + short_hash(str(path), 12)
    if name in sys.modules:
        return sys.modules[name]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelFileError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        _exec_watched(spec, module, path)
    except SystemExit as e:  # the file's own sys.exit would otherwise end tunegate silently
        del sys.modules[name]
        raise KernelFileError(f"{path}: the kernel file exited at import "
                              f"(sys.exit({e.code!r}))") from None
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as e:  # the user's file failed (any exception): report it, naming it
        del sys.modules[name]
        raise KernelFileError(f"{path}: importing it raised {type(e).__name__}: {e}") from None
    return module


def _is_file(text: str) -> bool:
    """Whether `text` names a file; an unusable path (a loop, too long) names none."""
    try:
        return Path(text).is_file()
    except (OSError, RuntimeError):
        return False


def _is_module_name(text: str) -> bool:
    return bool(text) and not text.endswith(".py") and all(
        part.isidentifier() for part in text.split("."))


def import_reference(target: str) -> ModuleType:
    """The module a reference's left side names: a file path, or a dotted module name, found
    from the current folder too (as under `python -m`, whichever way tunegate started: the
    console script's sys.path has its own folder instead; workers get this sys.path)."""
    if _is_module_name(target) and not _is_file(target):
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            return importlib.import_module(target)
        except ImportError as e:
            raise KernelFileError(f"{target}: no such file, and importing it as a module "
                                  f"failed: {e}") from e
        except SystemExit as e:  # the module's own sys.exit would end tunegate silently
            raise KernelFileError(f"{target}: the module exited at import "
                                  f"(sys.exit({e.code!r}))") from None
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # the user's module failed: report it, naming the module
            raise KernelFileError(f"{target}: importing it raised {type(e).__name__}: {e}") \
                from None
    return load_module(target)


def resolve(reference: str, want: type | tuple[type, ...] | None = None) -> tuple[Path, Any]:
    """The file and the object `FILE:NAME` or `module:NAME` names; without NAME, the only
    `want` in the file. NAME may be dotted (`ops.matmul_kernel`)."""
    file, name = split_reference(reference)
    module = import_reference(file)
    path = Path(getattr(module, "__file__", None) or file)
    if name:
        obj: Any = module
        for part in name.split("."):
            if not hasattr(obj, part):
                raise KernelFileError(f"{file}: no object named {name!r}")
            obj = getattr(obj, part)
        return path, obj
    if want is None:
        raise KernelFileError(f"{reference}: say which object, as FILE:NAME")
    found = {k: v for k, v in vars(module).items() if isinstance(v, want)}
    if len(found) != 1:
        kinds = " or ".join(t.__name__ for t in (want if isinstance(want, tuple) else (want,)))
        raise KernelFileError(
            f"{file}: {'several' if found else 'no'} {kinds} objects in it"
            + (f" ({', '.join(found)})" if found else "") + "; say which, as FILE:NAME")
    return path, next(iter(found.values()))


def split_reference(reference: str) -> tuple[str, str]:
    """(FILE or module, NAME) of `FILE:NAME` / `module:NAME`; NAME is "" when not given."""
    file, sep, name = reference.rpartition(":")
    if not sep or (len(file) == 1 and file.isalpha()):  # `C:\\x.py` has no NAME
        return reference, ""
    return file, name


def importable_name(module: ModuleType | None) -> str | None:
    """The name another process can import `module` by, or None: a script run as `__main__`
    and a kernel file imported by path are found by their file instead."""
    spec = getattr(module, "__spec__", None)
    name = getattr(spec, "name", None)
    if not name or name == "__main__" or name.startswith(USER_MODULE_PREFIX):
        return None
    return name


def chain(obj: Any) -> list[Any]:
    """`obj`, `obj.fn`, `obj.fn.fn`, … down to the `@triton.jit` object: the wrappers
    (`triton.autotune`, `triton.heuristics`) and the jit object, never the Python def under
    it. A plain function is its own chain."""
    out = [obj]
    while len(out) < MAX_CHAIN and not inspect.isfunction(out[-1]):
        inner = getattr(out[-1], "fn", None)
        if inner is None or inspect.isfunction(inner) or any(inner is o for o in out):
            break
        out.append(inner)
    return out


def jit_function(obj: Any) -> Any:
    """The `@triton.jit` object under any Autotuner/Heuristics wrappers (`obj` itself when
    it is not wrapped)."""
    return chain(obj)[-1]


def python_function(obj: Any) -> Any:
    """The Python def under a jit object and its wrappers (`obj` when there is none)."""
    inner = getattr(jit_function(obj), "fn", None)
    return inner if inspect.isfunction(inner) else jit_function(obj)



def unguarded_line(file: str | Path) -> int | None:
    """The line of `file` whose module-level code is running now (on this thread's stack)
    outside `if __name__ == "__main__":`, or None: worker processes re-import `file`, which
    would run that code again in each of them."""
    path = os.path.realpath(file)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and os.path.realpath(
                frame.f_code.co_filename) == path:
            return None if _under_main_guard(path, frame.f_lineno) else frame.f_lineno
        frame = frame.f_back
    return None


def _under_main_guard(path: str, line: int) -> bool:
    """Whether `line` of the file lies in the body of an `if __name__ == "__main__":` (also
    one nested in a `try:`, or `if __name__ == "__main__" and ...:`)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return True  # cannot tell: let the workers report what happens
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or line):
                return True
    return False


def _is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either way round), alone or in an `and`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_is_main_test(v) for v in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))
