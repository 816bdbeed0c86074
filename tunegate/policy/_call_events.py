"""What a call inside a kernel does: a load, store, descriptor access, atomic, dot or sum
becomes an `Event` (with the loops it runs in); a call of a `@triton.jit` helper is inlined.

A part of the kernel walker (`loops._Walker`), kept apart because it is one idea: the walker's
statements and expressions produce calls, this turns each call into what the rules look at.
"""

from __future__ import annotations

import ast
from typing import Any

from ._source import FunctionSource
from ._walk import Event, Walk, call_name, marker, root_of

__all__ = ["CallEvents"]

_MAX_DEPTH = 8  # helpers inlined inside helpers, at most


class CallEvents:
    """The walker's handling of calls; `expand`, `is_module` and `body` are the walker's."""

    kernel: FunctionSource
    walk: Walk
    assigned: dict[int, set[str]]

    def call(self, call: ast.Call, fn: FunctionSource, env: dict[str, ast.expr],
             loops: tuple[int, ...], branches: tuple[tuple[int, int], ...], depth: int,
             acc: str | None) -> None:
        name = call_name(call) or ""
        where = f"line {fn.line(call)}: {fn.code(call)}"
        if fn is not self.kernel:
            where = f"line {fn.line(call)} in {fn.node.name}: {fn.code(call)}"

        def event(kind: str, key: str = "", **extra: Any) -> None:
            self.walk.events.append(Event(kind=kind, key=key, loops=loops, branches=branches,
                                          where=where, **extra))

        method = isinstance(call.func, ast.Attribute) and not self.is_module(call.func)
        if method and name in ("load", "store"):  # desc.load(offsets) / desc.store(offsets, v)
            desc = self.expand(call.func.value, env)
            offsets = self.expand(call.args[0], env) if call.args else None
            event("desc_" + name, ast.dump(desc) + "@" + (ast.dump(offsets) if offsets else ""))
            event("tensor_descriptor")
        elif name in ("load", "store"):
            ptr = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg in ("pointer", "ptr")), None)
            if ptr is not None:
                address = self.expand(ptr, env)
                event(name, ast.dump(address), base=self.pointer_base(address),
                      invariant=self.invariant(fn, ptr, address, loops))
        elif name in ("load_tensor_descriptor", "store_tensor_descriptor",
                      "_experimental_descriptor_load", "_experimental_descriptor_store"):
            kind = "desc_load" if "load" in name else "desc_store"
            parts = [self.expand(a, env) for a in call.args[:2]]
            if name == "_experimental_descriptor_store" and len(call.args) >= 3:
                parts = [self.expand(call.args[0], env), self.expand(call.args[2], env)]
            event(kind, "@".join(ast.dump(p) for p in parts))
            event("tensor_descriptor")
        elif name in ("make_tensor_descriptor", "_experimental_make_tensor_descriptor"):
            event("tensor_descriptor")
        elif name in ("make_block_ptr", "advance"):
            event("block_ptr")
        elif name.startswith("atomic_"):
            event("atomics")
        elif name == "inline_asm_elementwise":
            event("inline_asm")
        elif name == "dot":
            acc_arg = call.args[2] if len(call.args) >= 3 else next(
                (k.value for k in call.keywords if k.arg == "acc"), None)
            key = acc if acc_arg is None else (
                acc_arg.id if isinstance(acc_arg, ast.Name) else ast.dump(acc_arg))
            trans = any(self.transposed(self.expand(a, env)) for a in call.args[:2])
            event("dot", key or "", trans=trans)
        elif name == "sum":
            event("sum")
        elif not method and fn.calls_jit(call.func):
            helper = fn.helper(call.func) if depth < _MAX_DEPTH else None
            if helper is not None:
                self.inline(helper, call, env, loops, branches, depth)
            else:  # its source cannot be read, or it is nested too deep: what it does is unknown
                event("opaque_call")

    def pointer_base(self, address: ast.expr) -> str | None:
        """The pointer an address is reached from: the first kernel parameter among the terms
        it adds up (`x_ptr` in `x_ptr + row * stride + offs` and in `offs + x_ptr`), else the
        name its leftmost term starts from."""
        terms: list[ast.expr] = []
        todo = [address]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                todo += [node.right, node.left]
            else:
                terms.append(root_of(node))
        names = [t.id for t in terms if isinstance(t, ast.Name)]
        own = [n for n in names if n in self.walk.parameters]
        return (own or names or [None])[0]

    def invariant(self, fn: FunctionSource, ptr: ast.expr, address: ast.expr,
                  loops: tuple[int, ...]) -> tuple[int, ...]:
        """The loops of `loops` in whose every iteration `ptr` is the same address.

        Only for the kernel's own code: a helper's names are its parameters, not the loop's.
        """
        if fn is not self.kernel:
            return ()
        names = {n.id for n in ast.walk(ptr) if isinstance(n, ast.Name)}
        markers = {int(n.id.rsplit("loop", 1)[1]) for n in ast.walk(address)
                   if isinstance(n, ast.Name) and n.id.startswith("\x00rt:loop")}
        return tuple(loop for loop in loops if not names & self.assigned.get(loop, set())
                     and not any(m >= loop for m in markers))

    def transposed(self, node: ast.AST) -> bool:
        """A `tl.trans(x)`, `tl.permute(x, ...)` or `x.T` that reaches a dot operand."""
        if isinstance(node, ast.Attribute) and node.attr == "T":
            return True
        if isinstance(node, ast.Call):
            if call_name(node) in ("trans", "permute"):
                return True
            if call_name(node) in ("load", "load_tensor_descriptor"):
                return False
        return any(self.transposed(c) for c in ast.iter_child_nodes(node))

    def inline(self, helper: FunctionSource, call: ast.Call, env: dict[str, ast.expr],
               loops: tuple[int, ...], branches: tuple[tuple[int, int], ...],
               depth: int) -> None:
        args = helper.node.args
        params = args.posonlyargs + args.args
        defaults = dict(zip([p.arg for p in params][len(params) - len(args.defaults):],
                            args.defaults))
        given = dict(zip([p.arg for p in params], call.args))
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        inner: dict[str, ast.expr] = {}
        for p in params + args.kwonlyargs:
            if p.arg in given:
                inner[p.arg] = self.expand(given[p.arg], env)
            elif p.arg in defaults:
                inner[p.arg] = defaults[p.arg]
            else:
                inner[p.arg] = marker(p.arg, True)
        self.body(helper, helper.node.body, inner, loops, branches, depth + 1)
