"""The loop map of a kernel: every loop, its nesting, its bounds and what drives its options.

Read from the kernel's source with `ast` (never executed), following calls into `@triton.jit`
helpers, which are inlined at the call site: a helper's loop is a loop of the kernel there.
Local names are expanded into the expressions they were assigned, so an alias of a pointer is
the same address and `num_stages=S` with `S = STAGES` is driven by the parameter `STAGES`.
"""

from __future__ import annotations

import ast
import copy

from .._text import short_hash
from ._arith import evaluate
from ._call_events import CallEvents
from ._source import FunctionSource
from ._walk import Event, Loop, LoopKind, OptionSource, Walk, call_name, marker, root_of
from .traits import LOOP_OPTIONS

__all__ = ["LOOP_OPTIONS", "Event", "Loop", "OptionSource", "Walk", "walk_kernel"]

_RANGE_POSITIONS = ("arg1", "arg2", "step", "num_stages", "loop_unroll_factor",
                    "disallow_acc_multi_buffer", "flatten", "warp_specialize")
_RUNTIME_CALLS = {"program_id", "num_programs", "load", "load_tensor_descriptor"}
_MAX_EXPR = 4000


def _evaluation_order(node: ast.AST) -> list[ast.Call]:
    """The calls in `node` in the order they run: a call's arguments before the call."""
    out: list[ast.Call] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.Lambda, ast.FunctionDef)):
            return
        for child in ast.iter_child_nodes(n):
            visit(child)
        if isinstance(n, ast.Call):
            out.append(n)

    visit(node)
    return out


def _is_none(node: ast.expr) -> bool:
    """`num_stages=None`: the option is left to the compiler, as if it were not written."""
    return isinstance(node, ast.Constant) and node.value is None


class _Walker(CallEvents):
    def __init__(self, kernel: FunctionSource) -> None:
        args = kernel.node.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        self.kernel = kernel
        self.walk = Walk(
            name=kernel.node.name, parameters=tuple(a.arg for a in params),
            constexprs=frozenset(a.arg for a in params if a.annotation is not None
                                 and "constexpr" in ast.dump(a.annotation)))
        self.descriptor_params = {a.arg for a in params if a.annotation is not None
                                  and "descriptor" in ast.dump(a.annotation).lower()}
        self._if_ids = 0
        self.assigned: dict[int, set[str]] = {}  # loop -> names its body assigns

    # -- expressions ----------------------------------------------------------------------
    def expand(self, node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
        """`node` with every local name replaced by the expression it holds.

        Expanded trees are shared, never changed: only the copy of `node` is rewritten.
        """
        class Sub(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:  # noqa: N802 - ast API
                return env.get(n.id, n)

        out = Sub().visit(copy.deepcopy(node))
        text = ast.dump(out)
        if len(text) > _MAX_EXPR:  # a long chain of updates: stop following it, but keep
            # its identity, so two different long addresses are not taken for one
            return marker("expr:" + short_hash(text), self.is_runtime(out))
        return out

    def is_runtime(self, node: ast.AST) -> bool:
        """Whether an expanded expression can differ between launches of one compiled kernel."""
        if isinstance(node, ast.Name):
            if node.id.startswith("\x00"):
                return node.id.startswith("\x00rt:")
            return node.id in self.walk.parameters and node.id not in self.walk.constexprs
        if isinstance(node, ast.Attribute):
            root = root_of(node)
            return not (isinstance(root, ast.Name) and root.id in self.kernel.modules) \
                and self.is_runtime(node.value)
        if isinstance(node, ast.Call):
            if call_name(node) in _RUNTIME_CALLS:
                return True
            if isinstance(node.func, ast.Attribute) and not self.is_module(node.func) \
                    and self.is_runtime(node.func.value):
                return True
            return any(self.is_runtime(a) for a in node.args) or \
                any(self.is_runtime(k.value) for k in node.keywords)
        return any(self.is_runtime(c) for c in ast.iter_child_nodes(node))

    def names_of(self, node: ast.AST) -> list[str]:
        out = []
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.walk.parameters and n.id not in out:
                out.append(n.id)
        return out

    def is_module(self, node: ast.AST) -> bool:
        root = root_of(node)
        return isinstance(root, ast.Name) and root.id in self.kernel.modules

    # -- statements -----------------------------------------------------------------------
    def body(self, fn: FunctionSource, stmts: list[ast.stmt], env: dict[str, ast.expr],
             loops: tuple[int, ...], branches: tuple[tuple[int, int], ...], depth: int) -> None:
        for stmt in stmts:
            self.statement(fn, stmt, env, loops, branches, depth)

    def statement(self, fn: FunctionSource, stmt: ast.stmt, env: dict[str, ast.expr],
                  loops: tuple[int, ...], branches: tuple[tuple[int, int], ...],
                  depth: int) -> None:
        ctx = (fn, env, loops, branches, depth)
        if isinstance(stmt, ast.For):
            self.loop(fn, stmt, env, loops, branches, depth)
        elif isinstance(stmt, ast.While):
            self.calls(stmt.test, *ctx)
            index = self.add_loop(fn, stmt, "while", loops, self.is_runtime(
                self.expand(stmt.test, env)), [], {})
            self.body(fn, stmt.body, env, loops + (index,), branches, depth)
        elif isinstance(stmt, ast.If):
            self.calls(stmt.test, *ctx)
            test = self.expand(stmt.test, env)
            if self.is_runtime(test):  # both branches may run in one compiled kernel
                self.body(fn, stmt.body, env, loops, branches, depth)
                self.body(fn, stmt.orelse, env, loops, branches, depth)
            else:  # a constexpr test: only one branch is ever compiled
                self._if_ids += 1
                self.body(fn, stmt.body, env, loops, branches + ((self._if_ids, 0),), depth)
                self.body(fn, stmt.orelse, env, loops, branches + ((self._if_ids, 1),), depth)
        elif isinstance(stmt, ast.With):
            self.body(fn, stmt.body, env, loops, branches, depth)
        elif isinstance(stmt, ast.Assign):
            self.calls(stmt.value, *ctx)
            for target in stmt.targets:
                self.assign(target, stmt.value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.calls(stmt.value, *ctx)
            self.assign(stmt.target, stmt.value, env)
        elif isinstance(stmt, ast.AugAssign):
            acc = stmt.target.id if isinstance(stmt.target, ast.Name) else None
            self.calls(stmt.value, *ctx, acc=acc)
            if acc is not None:
                env[acc] = self.expand(ast.BinOp(left=ast.Name(id=acc, ctx=ast.Load()),
                                                 op=stmt.op, right=stmt.value), env)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.calls(child, *ctx)

    def assign(self, target: ast.expr, value: ast.expr, env: dict[str, ast.expr]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = self.expand(value, env)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                expanded = [self.expand(v, env) for v in value.elts]
                for t, v in zip(target.elts, expanded):
                    if isinstance(t, ast.Name):
                        env[t.id] = v
            else:
                runtime = self.is_runtime(self.expand(value, env))
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        env[t.id] = marker(t.id, runtime)

    def loop(self, fn: FunctionSource, stmt: ast.For, env: dict[str, ast.expr],
             loops: tuple[int, ...], branches: tuple[tuple[int, int], ...], depth: int) -> None:
        it = stmt.iter
        self.calls(it, fn, env, loops, branches, depth, skip_root=True)
        name = call_name(it)
        kind: LoopKind = "other"  # e.g. Helion's hl.tile: not a Triton loop we can read
        if name == "static_range":
            kind = "tl.static_range"
        elif name == "range":
            module = isinstance(it.func, ast.Attribute) and self.is_module(it.func)
            kind = "tl.range" if module else "range"
        args: dict[str, ast.expr] = {}
        if isinstance(it, ast.Call):
            args = dict(zip(_RANGE_POSITIONS, it.args))
            args.update({k.arg: k.value for k in it.keywords if k.arg})
            bounds = [self.expand(args[k], env) for k in ("arg1", "arg2", "step") if k in args]
        else:
            bounds = [self.expand(it, env)]
        runtime = any(self.is_runtime(b) for b in bounds)
        names = sorted({n for b in bounds for n in self.names_of(b)
                        if n not in self.walk.constexprs})
        options = {opt: self.option(opt, args[opt], env) for opt in LOOP_OPTIONS
                   if opt in args and kind == "tl.range" and not _is_none(args[opt])}
        if "num_stages" not in options and kind in ("tl.range", "range"):
            options["num_stages"] = OptionSource(option="num_stages", expr="num_stages",
                                                 parameters=("num_stages",), launch=True)
        index = self.add_loop(fn, stmt, kind, loops, runtime, names, options)
        inner = dict(env)
        for t in ast.walk(stmt.target):
            if isinstance(t, ast.Name):
                inner[t.id] = marker(f"loop{index}", kind != "tl.static_range")
        self.assigned[index] = {t.id for n in [stmt.target, *stmt.body] for t in ast.walk(n)
                                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        self.body(fn, stmt.body, inner, loops + (index,), branches, depth)
        env.update({k: v for k, v in inner.items() if k in env})

    def add_loop(self, fn: FunctionSource, stmt: ast.stmt, kind: LoopKind,
                 loops: tuple[int, ...], runtime: bool, names: list[str],
                 options: dict[str, OptionSource]) -> int:
        index = len(self.walk.loops)
        self.walk.loops.append(Loop(
            index=index, line=fn.line(stmt), function=fn.node.name, kind=kind, depth=len(loops),
            parent=loops[-1] if loops else None, bounds="runtime" if runtime else "constexpr",
            runtime_names=tuple(names), options=options))
        return index

    def option(self, opt: str, node: ast.expr, env: dict[str, ast.expr]) -> OptionSource:
        expr = self.expand(node, env)
        params = tuple(self.names_of(expr))
        literal = None
        if not params:
            try:
                literal = evaluate(ast.unparse(expr), {})
            except ValueError:
                literal = None
        return OptionSource(option=opt, expr=ast.unparse(expr), parameters=params,
                            literal=literal)

    # -- calls ----------------------------------------------------------------------------
    def calls(self, node: ast.expr, fn: FunctionSource, env: dict[str, ast.expr],
              loops: tuple[int, ...], branches: tuple[tuple[int, int], ...], depth: int,
              acc: str | None = None, skip_root: bool = False) -> None:
        """Record every call in `node` in the order they run; inline calls to jit helpers."""
        for call in _evaluation_order(node):
            if skip_root and call is node:
                continue
            self.call(call, fn, env, loops, branches, depth,
                      acc if call is node else None)


def walk_kernel(kernel: FunctionSource) -> Walk:
    """Walk a kernel's body (and the helpers it calls) into loops and events."""
    walker = _Walker(kernel)
    env: dict[str, ast.expr] = {}
    for name in walker.descriptor_params:
        walker.walk.events.append(Event(
            kind="tensor_descriptor", key="", loops=(), branches=(),
            where=f"line {kernel.line(kernel.node)}: parameter {name} is a tensor descriptor"))
    walker.body(kernel, kernel.node.body, env, (), (), 0)
    return walker.walk
