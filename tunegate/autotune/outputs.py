"""Which kernel arguments a `@triton.jit` function reads and writes through, read from its
source with `ast` in one pass (`argument_accesses`).

The drop-in decorator needs the outputs (to poison them before each checked run) without the
user naming them: an argument is an output when a store or atomic reaches memory through it;
a task needs the outputs it also loads (updated in place: never poisoned).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from .._kept import Kept
from ..kernelfile import python_function
from ..policy.traits import TraitError

__all__ = ["Accesses", "argument_accesses", "stored_arguments"]

_WRITES = ("store", "atomic_")
# Calls that make a pointer (or descriptor) from their first argument or `base=`.
_POINTER_MAKERS = ("make_tensor_descriptor", "make_block_ptr", "advance", "multiple_of",
                   "max_contiguous", "cast", "to")
_MODULES = ("tl", "triton", "language")


def _is_write(name: str) -> bool:
    return name == "store" or name.startswith("atomic_")


def _is_read(name: str) -> bool:
    return name == "load"


def _is_update(name: str) -> bool:
    return name.startswith("atomic_")  # reads what it writes: the old contents matter


def _roots(node: ast.AST | None) -> set[str]:
    """Names a pointer expression is built from: `y` in `y + row * stride` (and `row`, `stride`)."""
    if node is None:
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.BinOp):
        return _roots(node.left) | _roots(node.right)
    if isinstance(node, (ast.Subscript, ast.Attribute)):
        return _roots(node.value)
    if isinstance(node, ast.IfExp):
        return _roots(node.body) | _roots(node.orelse)
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name not in _POINTER_MAKERS:
            return set()  # a tl.load(...) inside an address is data, not the written pointer
        if isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name)
                                                 and f.value.id in _MODULES):
            return _roots(f.value)  # ptr.to(...), desc.advance(...)
        first = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("base", "pointer", "ptr")), None)
        return _roots(first)
    return set()


def _accessed_roots(call: ast.Call, kind: Any) -> set[str]:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    if not kind(name):
        return set()
    if isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name)
                                             and f.value.id in _MODULES):
        return _roots(f.value)  # desc.store(offsets, value)
    first = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg in ("pointer", "ptr")), None)
    return _roots(first)


@dataclass(frozen=True)
class Accesses:
    """The kernel's runtime parameters in signature order, and the names each kind of access
    reaches memory through (local pointer arithmetic followed back to its parameters)."""

    parameters: tuple[str, ...]
    read: frozenset[str]  # by tl.load
    written: frozenset[str]  # by a store or an atomic
    updated: frozenset[str] = frozenset()  # by an atomic, which reads the old contents too

    def read_and_written(self) -> tuple[str, ...]:
        """Parameters whose contents before a launch matter to what it writes there."""
        return tuple(p for p in self.parameters
                     if p in self.written and (p in self.read or p in self.updated))


def stored_arguments(kernel: Any) -> tuple[str, ...]:
    """Parameters of `kernel` that a store writes through and no load or atomic reads, in
    signature order: the outputs whose old contents do not matter.

    An argument that is also loaded, or that an atomic adds into (a split-K sum into a buffer
    the program zeroed), is updated in place: an input, not an output to poison.
    Scalars used in a written address (strides) are returned too; keep the tensors.
    Follows local assignments (`row_ptr = Y + row * stride`); accesses made inside other jit
    functions the kernel calls are not seen, so pass `outputs=` for those.
    """
    seen = argument_accesses(kernel)
    return tuple(p for p in seen.parameters if p in seen.written and p not in seen.read
                 and p not in seen.updated)


def argument_accesses(kernel: Any) -> Accesses:
    """What `kernel`'s loads and stores (and atomics) reach memory through; `TraitError` when
    its source cannot be read. Read once per process per definition (its code object): each
    tuning of a program asks again."""
    fn = python_function(kernel)
    code = getattr(fn, "__code__", None)
    if code is None:
        return _accesses(kernel, fn)
    if code in _ACCESSES:
        return _ACCESSES[code]
    return _ACCESSES.keep(code, _accesses(kernel, fn))


_ACCESSES = Kept(1024)  # by code object: equal ones are one definition


def _accesses(kernel: Any, fn: Any) -> Accesses:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as e:
        raise TraitError(f"cannot read the source of {kernel!r}: {e}") from None
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    params = [a.arg for a in func.args.args
              if a.annotation is None or "constexpr" not in ast.dump(a.annotation)]
    assigned: dict[str, set[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        assigned.setdefault(t.id, set()).update(_roots(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, set()).update(_roots(node.value))
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)]
    written = _reach(set().union(*(_accessed_roots(c, _is_write) for c in calls)), assigned)
    read = _reach(set().union(*(_accessed_roots(c, _is_read) for c in calls)), assigned)
    updated = _reach(set().union(*(_accessed_roots(c, _is_update) for c in calls)), assigned)
    return Accesses(parameters=tuple(params), read=frozenset(read), written=frozenset(written),
                    updated=frozenset(updated))


def _reach(names: set[str], assigned: dict[str, set[str]]) -> set[str]:
    """`names` and every name they were assigned from, transitively."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(assigned.get(name, ()))
    return seen
