"""Detecting a kernel's traits: its source walked with `ast` (see `loops`), then the events
paired within loops; only a command given a kernel imports this (see `traits.detect_traits`)."""

from __future__ import annotations

import ast
from typing import Any

from ._source import FunctionSource, SourceError, from_object, from_text
from .call import DescriptorSite
from .loops import Event, Walk, walk_kernel
from .traits import LOOP_TRAITS, KernelTraits, TraitError

__all__ = ["detect"]


def _lca(a: tuple[int, ...], b: tuple[int, ...]) -> int | None:
    """The innermost loop that holds both events."""
    common = None
    for x, y in zip(a, b):
        if x != y:
            break
        common = x
    return common


def _exclusive(a: Event, b: Event) -> bool:
    """In different branches of one `if CONSTEXPR:`, so never in the same compiled kernel."""
    other = dict(b.branches)
    return any(i in other and other[i] != side for i, side in a.branches)


class _Collector:
    def __init__(self, walk: Walk) -> None:
        self.walk = walk
        self.evidence: dict[str, str] = {}
        self.loops: dict[str, set[int]] = {}

    def note(self, trait: str, event: Event, loop: int | None = None) -> None:
        self.evidence.setdefault(trait, event.where)
        if loop is not None:
            self.loops.setdefault(trait, set()).add(loop)

    def pairs(self, first: set[str], second: set[str], same_key: bool = True
              ) -> list[tuple[Event, Event, int]]:
        """(earlier, later, loop) for events of the two kinds that share one loop iteration."""
        out = []
        events = self.walk.events
        for j, later in enumerate(events):
            if later.kind not in second:
                continue
            for earlier in events[:j]:
                if earlier.kind not in first or (same_key and earlier.key != later.key):
                    continue
                loop = _lca(earlier.loops, later.loops)
                if loop is not None and not _exclusive(earlier, later):
                    out.append((earlier, later, loop))
        return out

    def run(self) -> None:
        events = self.walk.events
        for e in events:
            if e.kind in ("atomics", "tensor_descriptor", "block_ptr", "inline_asm",
                          "opaque_call"):
                self.note(e.kind, e, e.loops[-1] if e.loops else None)
            if e.kind in ("desc_load", "desc_store"):
                self.note("tensor_descriptor", e, e.loops[-1] if e.loops else None)
        dots = [e for e in events if e.kind == "dot"]
        if dots:
            self.note("dot", dots[0])
        for a, b in ((a, b) for i, b in enumerate(dots) for a in dots[:i]):
            if not _exclusive(a, b):
                self.note("multi_dot", b)
                break
        for _, load, loop in self.pairs({"store"}, {"load"}) + \
                self.pairs({"desc_store"}, {"desc_load"}):
            self.note("store_then_load", load, loop)
        for load, store, loop in self.pairs({"load"}, {"store"}):
            if loop in load.invariant and loop in store.invariant:  # next iteration loads it
                self.note("store_then_load", store, loop)
        for _, dot, loop in self.pairs({"dot"}, {"dot"}):
            if dot.key:
                self.note("chained_dot_acc", dot, loop)
        for a, b, loop in self.pairs({"sum", "dot"}, {"sum", "dot"}, same_key=False):
            trans = next((e for e in (a, b) if e.kind == "dot" and e.trans), None)
            if trans is not None and {a.kind, b.kind} == {"sum", "dot"}:
                self.note("dot_trans_and_sum", trans, loop)
        params = set(self.walk.parameters)
        loaded = {e.base for e in events if e.kind == "load"} & params
        for e in events:
            if e.kind == "store" and e.base in loaded:
                self.note("in_place", e)
        self._nested_dynamic()

    def _nested_dynamic(self) -> None:
        loops = self.walk.loops
        for inner in loops:
            if inner.bounds != "runtime" or inner.parent is None or \
                    inner.kind not in ("tl.range", "range"):
                continue
            event = Event(kind="loop", key="", loops=(), branches=(),
                          where=f"line {inner.line}: inner {inner.kind} with run-time bounds")
            parent: int | None = inner.parent
            while parent is not None:
                self.note("nested_dynamic_range", event, parent)
                parent = loops[parent].parent


_MAKE_DESCRIPTOR = ("make_tensor_descriptor", "_experimental_make_tensor_descriptor")


def _descriptors(fn: FunctionSource, parameters: tuple[str, ...]) -> tuple[DescriptorSite, ...]:
    """Every descriptor the kernel makes, with its base parameter and block_shape expressions."""
    out = []
    for node in ast.walk(fn.node):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _MAKE_DESCRIPTOR:
            continue
        kw = {k.arg: k.value for k in node.keywords}
        base = kw.get("base", node.args[0] if node.args else None)
        block = kw.get("block_shape", node.args[3] if len(node.args) > 3 else None)
        dims = (tuple(ast.unparse(e) for e in block.elts)
                if isinstance(block, (ast.List, ast.Tuple)) else None)
        out.append(DescriptorSite(
            base=base.id if isinstance(base, ast.Name) and base.id in parameters else None,
            block_shape=dims, line=fn.line(node)))
    return tuple(out)


def detect(kernel: Any = None, *, source: str | None = None,
           name: str | None = None) -> KernelTraits:
    """Traits and loop map of a jitted kernel or plain function, or of `source` (the first
    def, or `name`)."""
    try:
        fn = from_text(source, name) if source is not None else from_object(kernel)
    except SourceError as e:
        raise TraitError(str(e)) from None
    walk = walk_kernel(fn)
    collector = _Collector(walk)
    collector.run()
    return KernelTraits(
        name=fn.node.name, evidence=collector.evidence, loops=tuple(walk.loops),
        loop_traits={t: tuple(sorted(collector.loops.get(t, ()))) for t in LOOP_TRAITS
                     if t in collector.evidence},
        parameters=walk.parameters, constexprs=walk.constexprs,
        descriptors=_descriptors(fn, walk.parameters))
