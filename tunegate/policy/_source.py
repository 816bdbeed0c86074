"""Finding a kernel's source and the `@triton.jit` helpers it calls, without importing triton.

A live kernel resolves a called name through its own globals (so helpers of imported modules are
found); source text alone resolves only the functions defined in the same text.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

from ..errors import TunegateError
from ..kernelfile import python_function

__all__ = ["FunctionSource", "SourceError", "from_object", "from_text"]

_DEFAULT_MODULES = frozenset({"tl", "triton", "language"})


class SourceError(ValueError, TunegateError):
    """The kernel's source cannot be found or parsed."""


@dataclass(frozen=True)
class FunctionSource:
    """One parsed function, where its lines are, and how to resolve the names it calls."""

    node: ast.FunctionDef
    lines: tuple[str, ...]
    first: int  # the file line of the text's first line
    scope: dict[str, Any] | None = field(default=None, compare=False)  # globals of a live one
    siblings: dict[str, ast.FunctionDef] = field(default_factory=dict, compare=False)
    modules: frozenset[str] = _DEFAULT_MODULES

    def line(self, node: ast.AST) -> int:
        """The file line of a node of this function."""
        return getattr(node, "lineno", self.node.lineno) + self.first - 1

    def code(self, node: ast.AST) -> str:
        n = getattr(node, "lineno", 1)
        return self.lines[n - 1].strip() if 0 < n <= len(self.lines) else ""

    def calls_jit(self, func: ast.expr) -> bool:
        """Whether a call's `func` names a `@triton.jit` helper (readable or not)."""
        if self.scope is not None:
            return _is_jit(_lookup(func, self.scope))
        return isinstance(func, ast.Name) and func.id in self.siblings

    def helper(self, func: ast.expr) -> "FunctionSource | None":
        """The jit helper a call's `func` names, if it can be found."""
        if self.scope is not None:
            obj = _lookup(func, self.scope)
            if not _is_jit(obj):
                return None
            try:
                return from_object(obj)
            except SourceError:  # a helper without source: its body cannot be read
                return None
        if isinstance(func, ast.Name) and func.id in self.siblings:
            node = self.siblings[func.id]
            return FunctionSource(node=node, lines=self.lines, first=self.first,
                                  siblings=self.siblings, modules=self.modules)
        return None


def _lookup(func: ast.expr, scope: dict[str, Any]) -> Any:
    if isinstance(func, ast.Name):
        return scope.get(func.id)
    if isinstance(func, ast.Attribute):
        base = _lookup(func.value, scope)
        return getattr(base, func.attr, None) if isinstance(base, ModuleType) else None
    return None


def _is_jit(obj: Any) -> bool:
    """A `@triton.jit` function (compiled or interpreted): it wraps a plain function as `.fn`."""
    return (obj is not None and not isinstance(obj, ModuleType)
            and inspect.isfunction(getattr(obj, "fn", None)))


def _is_jit_def(node: ast.FunctionDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "jit":
            return True
    return False


def _parse(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as e:
        raise SourceError(f"cannot parse kernel source: {e}") from None


def _module_names(tree: ast.Module) -> frozenset[str]:
    names = set(_DEFAULT_MODULES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names if a.name == "language"}
    return frozenset(names)


def from_text(text: str, name: str | None = None) -> FunctionSource:
    """The function called `name` (or the first one) of a source text."""
    tree = _parse(textwrap.dedent(text))
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    fn = next((d for d in defs if name is None or d.name == name), None)
    if fn is None:
        raise SourceError(f"no function {name!r} in the kernel source")
    siblings = {d.name: d for d in defs if d is not fn and _is_jit_def(d)}
    return FunctionSource(node=fn, lines=tuple(textwrap.dedent(text).splitlines()), first=1,
                          siblings=siblings, modules=_module_names(tree))


def from_object(kernel: Any) -> FunctionSource:
    """The source of a jitted kernel (or plain function), resolving names through its globals."""
    fn: Callable[..., Any] = python_function(kernel)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceError(f"cannot read the source of {kernel!r}: {e}") from None
    text = textwrap.dedent("".join(lines))
    tree = _parse(text)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        raise SourceError(f"the source of {kernel!r} is not a function definition")
    scope = dict(getattr(fn, "__globals__", {}))
    modules = frozenset(k for k, v in scope.items() if isinstance(v, ModuleType)) | _DEFAULT_MODULES
    return FunctionSource(node=node, lines=tuple(text.splitlines()), first=first, scope=scope,
                          modules=modules)
