"""Evaluating the small expressions a loop option is written as (`num_stages=STAGES + 1`).

Only literals, the given names, arithmetic, comparisons, `x if c else y`, `min` and `max`:
nothing of the kernel's source is ever executed.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["evaluate"]

_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b}
_CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
           ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
           ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def evaluate(text: str, values: dict[str, Any]) -> Any:
    """The value of a small arithmetic expression over `values`; ValueError if not one."""
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            return _CMPOPS[type(node.ops[0])](ev(node.left), ev(node.comparators[0]))
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("min", "max") and not node.keywords:
            return (min if node.func.id == "min" else max)(*(ev(a) for a in node.args))
        raise ValueError(f"cannot evaluate {ast.unparse(node)!r}")

    try:
        return ev(ast.parse(text, mode="eval"))
    except (SyntaxError, TypeError, ZeroDivisionError, RecursionError) as e:
        raise ValueError(f"cannot evaluate {text!r}: {e}") from None
