"""Fingerprints of what decides a tuned config's correctness: the task's code and the variables
that change the code Triton generates. Both are part of every store key.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import textwrap
from typing import Any, Iterable

from .._kept import Kept
from .._text import short_hash
from ..kernelfile import python_function

__all__ = ["CODEGEN_VARIABLES", "callable_text", "codegen_environment", "digest",
           "jit_dependencies", "qualified_name", "source_of", "stable_repr"]

# A memory address in a repr ("<function f at 0x7f...>", "<Policy object at 0x...>").
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{8,}")

# Variables that change generated code even where the installed Triton does not list them as
# cache-invalidating (older releases, the interpreter, AMD scheduling switches).
CODEGEN_VARIABLES = (
    "TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION", "TRITON_FORCE_DISABLE_FP_FUSION",
    "TRITON_OVERRIDE_ARCH", "TRITON_DISABLE_LINE_INFO", "TRITON_ENABLE_ASAN",
    "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_HIP_USE_ASYNC_COPY",
    "TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "TRITON_HIP_USE_COEXEC_SCHEDULER",
    "TRITON_HIP_USE_EXPERT_SCHEDULING", "TRITON_PLUGIN_PATHS", "TRITON_F32_DEFAULT",
    "TRITON_ALWAYS_COMPILE", "DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "DISABLE_MMA_V5",
    "DISABLE_PTXAS_OPT", "LLVM_IR_ENABLE_DUMP",
)


def codegen_environment() -> dict[str, str]:
    """The set variables that change compiled code: Triton's own cache-invalidating list (what
    its autotuner keys on) plus `CODEGEN_VARIABLES`."""
    found: dict[str, str] = {}
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars

        found.update(get_cache_invalidating_env_vars())
    except (ImportError, AttributeError):
        pass
    found.update({k: os.environ[k] for k in CODEGEN_VARIABLES if os.environ.get(k)})
    return dict(sorted(found.items()))


def source_of(obj: Any) -> str:
    """The source text of a function (or of a jit function's Python function), else its repr
    without memory addresses (which differ between processes). A function's or a class's is
    read once per process (by its code object, or the class): a class's source took 19 ms to
    find, and each tuning of a program fingerprints its task again."""
    fn = python_function(obj)
    key = fn.__code__ if inspect.isfunction(fn) else fn if inspect.isclass(fn) else None
    if key is not None and key in _SOURCES:
        return _SOURCES[key]
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        text = stable_repr(fn)
    return text if key is None else _SOURCES.keep(key, text)


_SOURCES = Kept(4096)  # see `source_of`; equal code objects are one definition


def stable_repr(value: Any) -> str:
    """`repr(value)` with memory addresses removed: the same object reads the same in every
    process."""
    return _ADDRESS.sub("", repr(value))


def callable_text(obj: Any) -> str:
    """What a callable computes, as text: its source plus the simple values it closes over (a
    factory's `inputs(32, 32, 64)` differs from `inputs(64, 64, 64)` only there). No memory
    address gets in, so that one task has one fingerprint in every process."""
    return _callable_text(obj, set())


def _callable_text(obj: Any, seen: set[int]) -> str:
    if obj is None:
        return "None"
    if not callable(obj):
        return stable_repr(obj)
    if id(obj) in seen:  # a recursive closure: its text is already there
        return f"<recursion {qualified_name(obj)}>"
    seen = seen | {id(obj)}
    if inspect.ismethod(obj):  # the function's code, and what it is bound to
        return "\n".join([_callable_text(obj.__func__, seen), _object_text(obj.__self__)])
    if isinstance(obj, functools.partial):
        return "\n".join([_callable_text(obj.func, seen),
                          repr([_value_text(v, seen) for v in obj.args]),
                          repr(sorted((k, _value_text(v, seen))
                                      for k, v in obj.keywords.items()))])
    parts = [source_of(obj if inspect.isfunction(getattr(obj, "fn", obj)) else type(obj))]
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            parts.append(_value_text(cell.cell_contents, seen))
        except ValueError:  # an empty cell
            continue
    if not inspect.isfunction(obj):
        parts.append(_object_text(obj))
    return "\n".join(parts)


def _value_text(value: Any, seen: set[int]) -> str:
    """A closed-over value: simple values by repr, callables by their text, other objects by
    their type (their state may be a cache that changes as the program runs)."""
    if _simple(value):
        return repr(value)
    if callable(value):
        return _callable_text(value, seen)
    return _type_name(value)


def _object_text(obj: Any) -> str:
    """An object's simple attributes, sorted: its stable, configuring state."""
    if not hasattr(obj, "__dict__"):
        return ""
    return repr(sorted((k, repr(v)) for k, v in vars(obj).items()
                       if v is not None and _simple(v)))


def _simple(value: Any) -> bool:
    """A scalar, or a tuple of simple values: its repr is its content, with no address."""
    if isinstance(value, (int, float, str, bool, type(None))):
        return True
    return isinstance(value, tuple) and all(_simple(v) for v in value)


def _type_name(value: Any) -> str:
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


@functools.lru_cache(maxsize=1024)
def _names(source: str) -> frozenset[str]:
    """The names and attribute names `source` uses (parsed once per text: each tuning of a
    program looks for its kernel's helpers again)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    return frozenset({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
                     | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)})


def _user_kernel(value: Any) -> bool:
    """A jit function (compiled or interpreted) that is not part of Triton itself."""
    from triton.runtime.jit import KernelInterface

    return (isinstance(value, KernelInterface)
            and not getattr(python_function(value), "__module__", "").startswith("triton."))


def jit_dependencies(kernel: Any) -> list[Any]:
    """Every `@triton.jit` function the kernel calls, directly or through other helpers: found
    among the globals its source names, as Triton's own dependency hash does (Triton's own
    library functions are left out: the Triton version is in the environment fingerprint)."""
    seen: dict[int, Any] = {}

    def visit(fn: Any) -> None:
        names = _names(source_of(fn))
        scope: dict[str, Any] = dict(getattr(python_function(fn), "__globals__", {}))
        for name in names:
            value = scope.get(name)
            candidates: list[Any] = [value]
            if inspect.ismodule(value):
                candidates = [v for n, v in vars(value).items() if n in names]
            for v in candidates:
                if _user_kernel(v) and v is not kernel and id(v) not in seen:
                    seen[id(v)] = v
                    visit(v)

    visit(kernel)
    return sorted(seen.values(), key=qualified_name)


def qualified_name(fn: Any) -> str:
    py = python_function(fn)
    return f"{getattr(py, '__module__', '')}.{getattr(py, '__qualname__', repr(py))}"


def digest(parts: Iterable[str]) -> str:
    """A short stable hash of text parts."""
    return short_hash("".join(f"{p}\0" for p in parts))
