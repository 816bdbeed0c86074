"""What walking a kernel finds (its loops, option sources, memory events) and the small AST
helpers the walker's parts share; see `loops` for the walk itself."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Event", "Loop", "LoopKind", "OptionSource", "Walk", "call_name", "marker", "root_of"]

LoopKind = Literal["tl.range", "tl.static_range", "range", "while", "other"]


@dataclass(frozen=True)
class OptionSource:
    """What sets one loop option: a literal, or an expression over config parameters."""

    option: str
    expr: str  # the expanded expression, as source text
    parameters: tuple[str, ...] = ()  # kernel parameters it reads
    literal: Any = None  # its value when it reads no parameter and could be evaluated
    launch: bool = False  # not written: the launch option `num_stages` drives the loop

    def describe(self) -> str:
        if self.launch:
            return "launch num_stages"
        if self.parameters:
            return self.expr
        return repr(self.literal) if self.literal is not None else f"{self.expr} (not resolved)"


@dataclass(frozen=True)
class Loop:
    """One loop of the kernel (or of a helper inlined into it)."""

    index: int
    line: int
    function: str
    kind: LoopKind
    depth: int
    parent: int | None
    bounds: Literal["runtime", "constexpr"]
    runtime_names: tuple[str, ...] = ()
    options: dict[str, OptionSource] = field(default_factory=dict)

    def label(self) -> str:
        return f"{self.index} ({self.kind}, line {self.line})"


@dataclass(frozen=True)
class Event:
    """A memory access, dot, sum or special call, with where it happened."""

    kind: str
    key: str
    loops: tuple[int, ...]
    branches: tuple[tuple[int, int], ...]
    where: str
    loop_text: str = ""
    trans: bool = False
    base: str | None = None
    invariant: tuple[int, ...] = ()  # loops whose iterations all access the same address


@dataclass
class Walk:
    """What walking the kernel found: its loops, parameters and events in source order."""

    name: str
    parameters: tuple[str, ...]
    constexprs: frozenset[str]
    loops: list[Loop] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def marker(name: str, runtime: bool) -> ast.Name:
    """A placeholder name for a value the walk cannot expand, runtime or compile-time."""
    return ast.Name(id=("\x00rt:" if runtime else "\x00ct:") + name, ctx=ast.Load())


def call_name(node: ast.AST) -> str | None:
    """`load` for `tl.load(...)` and `desc.load(...)`; None for anything but a call."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else None


def root_of(node: ast.AST) -> ast.AST:
    """What an attribute or subscript chain starts from: `x` in `x.y[0].z`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node
