"""Kernel traits read from a `@triton.jit` function's source with `ast` (never executed).

A trait is a property of the kernel's code that makes a known bug reachable, such as a store
followed by a load of the same address inside one loop. Each detected trait keeps the line that
showed it, so an explanation can point at the code.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable
from ..errors import TunegateError

__all__ = ["TRAITS", "KernelTraits", "TraitError", "detect_traits"]

TRAITS: dict[str, str] = {
    "store_then_load": "a tl.store followed by a tl.load of the same pointer inside one loop",
    "in_place": "a kernel argument that is both loaded and stored",
    "atomics": "tl.atomic_* operations",
    "dot": "tl.dot",
    "multi_dot": "two or more tl.dot calls",
    "dot_trans_and_sum": "one loop holding a tl.sum and a tl.dot of a tl.trans",
    "chained_dot_acc": "two tl.dot calls chained through one accumulator in a loop",
    "tensor_descriptor": "tensor descriptors made in the kernel",
    "block_ptr": "tl.make_block_ptr / tl.advance",
    "nested_dynamic_range": "a loop nest whose inner range has run-time bounds",
}


class TraitError(ValueError, TunegateError):
    """The kernel's source cannot be found or parsed."""


@dataclass(frozen=True)
class KernelTraits:
    """The traits of one kernel, each with the `line N: code` that showed it."""

    name: str
    evidence: dict[str, str] = field(default_factory=dict)

    @property
    def traits(self) -> frozenset[str]:
        return frozenset(self.evidence)


def _call_name(node: ast.AST) -> str | None:
    """`store` for `tl.store(...)`, `triton.language.store(...)` or `store(...)`."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else None


def _pointer(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("pointer", "ptr")), None)


def _base_name(node: ast.AST | None) -> str | None:
    """The leftmost name of a pointer expression: `x_ptr` in `x_ptr + offs * stride`."""
    while isinstance(node, (ast.BinOp, ast.Subscript, ast.Attribute)):
        node = node.left if isinstance(node, ast.BinOp) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _calls(nodes: list[ast.stmt]) -> list[ast.Call]:
    """Calls in source order (ast.walk is breadth-first, which would misorder them)."""
    found = [n for stmt in nodes for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


class _Detector:
    def __init__(self, fn: ast.FunctionDef, source_lines: list[str], first_line: int) -> None:
        self.fn, self.lines, self.first = fn, source_lines, first_line
        self.evidence: dict[str, str] = {}

    def note(self, trait: str, node: ast.AST) -> None:
        if trait not in self.evidence:
            line = getattr(node, "lineno", 1)
            code = self.lines[line - 1].strip() if line <= len(self.lines) else ""
            self.evidence[trait] = f"line {line + self.first - 1}: {code}"

    def run(self) -> dict[str, str]:
        calls = _calls(self.fn.body)
        dots = [c for c in calls if _call_name(c) == "dot"]
        for c in calls:
            name = _call_name(c) or ""
            if name.startswith("atomic_"):
                self.note("atomics", c)
            if name == "make_tensor_descriptor":
                self.note("tensor_descriptor", c)
            if name in ("make_block_ptr", "advance"):
                self.note("block_ptr", c)
        if dots:
            self.note("dot", dots[0])
        if len(dots) >= 2:
            self.note("multi_dot", dots[1])
        self._in_place(calls)
        for loop in (n for n in ast.walk(self.fn) if isinstance(n, (ast.For, ast.While))):
            self._loop(loop)
        return self.evidence

    def _in_place(self, calls: list[ast.Call]) -> None:
        params = {a.arg for a in self.fn.args.args}
        loaded = {_base_name(_pointer(c)) for c in calls if _call_name(c) == "load"}
        for c in calls:
            if _call_name(c) == "store" and _base_name(_pointer(c)) in params & loaded:
                self.note("in_place", c)

    def _loop(self, loop: ast.For | ast.While) -> None:
        calls = _calls(loop.body)
        stored: set[str] = set()
        for c in calls:
            name, ptr = _call_name(c), _pointer(c)
            if ptr is None:
                continue
            if name == "store":
                stored.add(ast.dump(ptr))
            elif name == "load" and ast.dump(ptr) in stored:
                self.note("store_then_load", c)
        names = [_call_name(c) for c in calls]
        dots = [c for c in calls if _call_name(c) == "dot"]
        if "sum" in names and any(
            _call_name(a) == "trans" or (isinstance(a, ast.Attribute) and a.attr == "T")
            for d in dots for a in d.args
        ):
            self.note("dot_trans_and_sum", dots[0])
        accs = [ast.dump(d.args[2]) for d in dots if len(d.args) >= 3]
        accs += [ast.dump(k.value) for d in dots for k in d.keywords if k.arg == "acc"]
        if len(accs) != len(set(accs)):
            self.note("chained_dot_acc", dots[-1])
        if isinstance(loop, ast.For):
            self._nested_range(loop)

    def _nested_range(self, outer: ast.For) -> None:
        constexprs = {a.arg for a in self.fn.args.args
                      if a.annotation is not None and "constexpr" in ast.dump(a.annotation)}
        for inner in ast.walk(ast.Module(body=outer.body, type_ignores=[])):
            if isinstance(inner, ast.For) and isinstance(inner.iter, ast.Call):
                bounds = [n.id for a in inner.iter.args for n in ast.walk(a)
                          if isinstance(n, ast.Name)]
                if any(b not in constexprs for b in bounds):
                    self.note("nested_dynamic_range", inner)


def _source_of(kernel: Any) -> tuple[str, int, str]:
    fn: Callable[..., Any] = getattr(kernel, "fn", kernel)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise TraitError(f"cannot read the source of {kernel!r}: {e}") from None
    return textwrap.dedent("".join(lines)), first, getattr(fn, "__name__", "kernel")


def detect_traits(kernel: Any = None, *, source: str | None = None,
                  name: str | None = None) -> KernelTraits:
    """Traits of a jitted kernel or plain function, or of `source` (the first def, or `name`)."""
    first = 1
    if source is None:
        source, first, fname = _source_of(kernel)
        name = name or fname
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise TraitError(f"cannot parse kernel source: {e}") from None
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    fn = next((d for d in defs if name is None or d.name == name), None)
    if fn is None:
        raise TraitError(f"no function {name!r} in the kernel source")
    evidence = _Detector(fn, source.splitlines(), first).run()
    return KernelTraits(name=fn.name, evidence=evidence)
