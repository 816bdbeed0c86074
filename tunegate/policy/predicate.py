"""`match` predicates: a small whitelisted grammar over config values, never `eval`ed.

A name whose value is a per-loop list compares element by element and holds if any element
does; the result records which loops made it hold, so an explanation can say "loop 1". A name
whose value is `Unknown` (a problem fact before the kernel is called) makes the predicate fail
closed: it holds unless the known part alone makes it false, and the result says which facts
were assumed.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable

from ._predicate_parser import BoolOp, Compare, Literal, Name, Node, Not, PredicateSyntaxError
from ._predicate_parser import parse as _parse

__all__ = ["MISSING", "Predicate", "PredicateResult", "PredicateSyntaxError", "Unknown"]

MISSING: Any = object()
"""What a lookup returns for a name the config does not have: every comparison on it is false."""


@dataclass(frozen=True)
class Unknown:
    """A value not known yet, and why: every comparison on it may hold (three-valued logic)."""

    why: str


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "in": lambda a, b: any(_same(a, x) for x in b),
    "not in": lambda a, b: not any(_same(a, x) for x in b),
}


def _same(a: Any, b: Any) -> bool:
    """Equality that does not take `True` for `1` or `None` for anything."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    return a == b


@dataclass
class PredicateResult:
    """Whether the predicate held, and per name the loop indices that made it hold."""

    holds: bool
    loops: dict[str, list[int]] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)  # name -> why it was assumed to hold


class Predicate:
    """A parsed predicate; equal by its text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._tree: Node = _parse(text)

    def __repr__(self) -> str:
        return f"Predicate({self.text!r})"

    def names(self) -> list[tuple[str, int]]:
        """Every name the predicate reads, with its offset in the text."""
        out: list[tuple[str, int]] = []
        for node in self._nodes():
            if isinstance(node, Name):
                out.append((node.name, node.pos))
            elif isinstance(node, Compare):
                out += [(n.name, n.pos) for n in (node.left, node.right) if isinstance(n, Name)]
        return out

    def comparisons(self) -> list[tuple[str, str, Any, int]]:
        """Every comparison of a name with a literal: (name, operator, literal, name's offset)."""
        out: list[tuple[str, str, Any, int]] = []
        for node in self._nodes():
            if isinstance(node, Compare):
                sides = (node.left, node.right)
                names = [n for n in sides if isinstance(n, Name)]
                values = [v for v in sides if isinstance(v, Literal)]
                if len(names) == 1 and len(values) == 1:
                    out.append((names[0].name, node.op, values[0].value, names[0].pos))
        return out

    def _nodes(self) -> list[Any]:
        """The comparisons and bare names of the tree, through `and`, `or` and `not`."""
        out: list[Any] = []
        todo = [self._tree]
        while todo:
            node = todo.pop()
            if isinstance(node, BoolOp):
                todo.extend(reversed(node.items))
            elif isinstance(node, Not):
                todo.append(node.item)
            else:
                out.append(node)
        return out

    def is_any_decomposable(self) -> bool:
        """True if the predicate holds for a list exactly when it holds for one of its elements.

        That is so for a single comparison or an `or` of them; `and` and `not` break it.
        """
        tree = self._tree
        items = tree.items if isinstance(tree, BoolOp) and tree.op == "or" else (tree,)
        return all(isinstance(i, (Compare, Name)) for i in items)

    def evaluate(self, lookup: Callable[[str], Any]) -> PredicateResult:
        """Evaluate with `lookup(name)` giving a value, a per-loop tuple, `Unknown` or `MISSING`.

        An unknown part counts as holding unless the rest decides: `a and b` is false if `a` is,
        `a or b` true if `a` is, `not` of an unknown is unknown; such a predicate holds.
        """
        loops: dict[str, list[int]] = {}
        unknown: dict[str, str] = {}
        value = self._eval(self._tree, lookup, loops, unknown)
        if value is False:
            return PredicateResult(False)
        return PredicateResult(True, loops, unknown if value is None else {})

    def _eval(self, node: Any, lookup: Callable[[str], Any], loops: dict[str, list[int]],
              unknown: dict[str, str]) -> bool | None:
        """True, False, or None where an unknown value leaves it open."""
        if isinstance(node, BoolOp):
            results = [self._eval(i, lookup, loops, unknown) for i in node.items]
            decided = False if node.op == "and" else True
            if decided in results:
                return decided
            return None if None in results else not decided
        if isinstance(node, Not):
            inner = self._eval(node.item, lookup, {}, unknown)
            return None if inner is None else not inner
        if isinstance(node, Compare):
            return self._compare(node, lookup, loops, unknown)
        value = self._value(node, lookup, unknown)
        if isinstance(value, Unknown):
            return self._unknown(node, value, unknown)
        if isinstance(node, Name) and isinstance(value, tuple):
            hits = [i for i, v in enumerate(value) if v]
            if hits:
                loops.setdefault(node.name, []).extend(hits)
            return bool(hits)
        return value is not MISSING and bool(value)

    @staticmethod
    def _unknown(node: Any, value: Unknown, unknown: dict[str, str]) -> None:
        """Record why a name was unknown (a sub-expression's names are recorded inside it)."""
        if isinstance(node, Name):
            unknown.setdefault(node.name, value.why)
        return None

    def _value(self, node: Any, lookup: Callable[[str], Any], unknown: dict[str, str]) -> Any:
        if isinstance(node, Name):
            return lookup(node.name)
        if isinstance(node, Literal):
            return node.value
        inner = self._eval(node, lookup, {}, unknown)
        return Unknown("a part of the predicate is unknown") if inner is None else inner

    def _compare(self, node: Compare, lookup: Callable[[str], Any],
                 loops: dict[str, list[int]], unknown: dict[str, str]) -> bool | None:
        left = self._value(node.left, lookup, unknown)
        right = self._value(node.right, lookup, unknown)
        if left is MISSING or right is MISSING:
            return False
        for side, value in ((node.left, left), (node.right, right)):
            if isinstance(value, Unknown):
                return self._unknown(side, value, unknown)
        fn = _CMP[node.op]
        # A per-loop list on either side: any element may make the comparison hold.
        if isinstance(left, tuple) and isinstance(node.left, Name):
            hits = [i for i, v in enumerate(left) if _safe(fn, v, right)]
            if hits:
                loops.setdefault(node.left.name, []).extend(hits)
            return bool(hits)
        if isinstance(right, tuple) and isinstance(node.right, Name):
            hits = [i for i, v in enumerate(right) if _safe(fn, left, v)]
            if hits:
                loops.setdefault(node.right.name, []).extend(hits)
            return bool(hits)
        return _safe(fn, left, right)


def _safe(fn: Callable[[Any, Any], bool], a: Any, b: Any) -> bool:
    """A comparison; values of unlike kinds (None < 1, 'a' < 2) simply do not satisfy it."""
    if fn in (operator.eq, operator.ne):
        return _same(a, b) if fn is operator.eq else not _same(a, b)
    try:
        return bool(fn(a, b))
    except TypeError:
        return False
