"""Kernel traits read from a `@triton.jit` function's source with `ast` (never executed).

A trait is a property of the kernel's code that makes a known bug reachable, such as a store
followed by a load of the same address inside one loop. Each detected trait keeps the line that
showed it, and a loop trait also the loops it occurs in (see `loops`), so a rule can hit the
loop that holds the hazard and an explanation can point at the code. The walk itself is in
`_detect`, imported only where a kernel is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from .call import BlockShapes, CallFacts, DescriptorSite
from .._kept import Kept
from ..errors import TunegateError

if TYPE_CHECKING:
    from .loops import Loop

__all__ = ["KERNEL_FEATURES", "LOOP_OPTIONS", "LOOP_TRAITS", "TRAITS", "KernelTraits",
           "TraitError", "detect_traits"]

TRAITS: dict[str, str] = {
    "store_then_load": "a tl.store and a later tl.load of the same address in one loop "
                       "(in the same iteration, or the next one for a fixed address)",
    "in_place": "a kernel argument that is both loaded and stored",
    "atomics": "tl.atomic_* operations",
    "inline_asm": "tl.inline_asm_elementwise: assembly whose effects the walk cannot read",
    "opaque_call": "a call of a @triton.jit helper whose source cannot be read (or nested "
                   "too deep to follow)",
    "dot": "tl.dot",
    "multi_dot": "two or more tl.dot calls",
    "dot_trans_and_sum": "one loop holding a tl.sum and a tl.dot of a tl.trans",
    "chained_dot_acc": "two tl.dot calls chained through one accumulator in a loop",
    "tensor_descriptor": "tensor descriptors made in the kernel or passed to it",
    "block_ptr": "tl.make_block_ptr / tl.advance",
    "nested_dynamic_range": "a loop nest whose inner range has run-time bounds",
}

LOOP_TRAITS = ("store_then_load", "dot_trans_and_sum", "chained_dot_acc", "tensor_descriptor",
               "nested_dynamic_range", "atomics")
"""Traits that belong to loops: the ones a rule can aim at the loop that holds them."""

KERNEL_FEATURES = ("tensor_descriptor", "block_ptr", "atomics")
"""Traits that are also features: a kernel that has one uses it in every config."""

LOOP_OPTIONS: dict[str, str] = {
    "num_stages": "range_num_stages",
    "loop_unroll_factor": "range_unroll",
    "flatten": "range_flatten",
    "warp_specialize": "range_warp_specialize",
    "disallow_acc_multi_buffer": "range_multi_buffer",
}
"""A `tl.range` keyword argument -> the feature it controls."""


class TraitError(ValueError, TunegateError):
    """The kernel's source cannot be found or parsed."""


@dataclass(frozen=True)
class KernelTraits:
    """The traits of one kernel, each with the `line N: code` that showed it, and its loop map.

    `loop_traits` names the loops (indices into `loops`) of each loop trait; a trait in
    `evidence` but not in `loop_traits` has unknown loops, so a rule applies to every loop.
    """

    name: str
    evidence: dict[str, str] = field(default_factory=dict)
    loops: tuple[Loop, ...] = ()
    loop_traits: dict[str, tuple[int, ...]] = field(default_factory=dict)
    parameters: tuple[str, ...] = ()
    constexprs: frozenset[str] = frozenset()
    descriptors: tuple[DescriptorSite, ...] = ()
    call: CallFacts | None = None  # the call the kernel is gated for; None: not called yet

    @property
    def traits(self) -> frozenset[str]:
        return frozenset(self.evidence)

    @property
    def features(self) -> dict[str, str]:
        """Features the kernel itself uses (so every config of it does), with their evidence."""
        return {f: self.evidence[f] for f in KERNEL_FEATURES if f in self.evidence}

    def traits_of(self, loop: int) -> list[str]:
        return [t for t, idx in self.loop_traits.items() if loop in idx]

    def called_with(self, args: Mapping[str, Any], block_shapes: BlockShapes | None = None
                    ) -> "KernelTraits":
        """These traits with the problem facts of one call (its arguments by name), which
        rule predicates read as `dtypes`, `element_bytes` and `tile_bytes`."""
        return replace(self, call=CallFacts.of(args, block_shapes))


def detect_traits(kernel: Any = None, *, source: str | None = None,
                  name: str | None = None) -> KernelTraits:
    """Traits and loop map of a jitted kernel or plain function, or of `source` (the first
    def, or `name`). A live kernel's are walked once per process while the globals its code
    names stay bound to the same objects (`_bindings`): each tuning of a program reads its
    kernel's traits again, and one walk of an fla kernel took 17-41 ms."""
    from ._detect import detect  # the source walk: only for a command given a kernel

    if source is not None or kernel is None:
        return detect(kernel, source=source, name=name)
    bindings = _bindings(kernel)
    kept = _DETECTED.get((id(kernel), name))
    if kept is not None and kept[0] is kernel and len(kept[1]) == len(bindings) \
            and all(a is b for a, b in zip(kept[1], bindings)):
        return kept[2]
    return _DETECTED.keep((id(kernel), name), (kernel, bindings, detect(kernel, name=name)))[2]


def _bindings(kernel: Any) -> tuple[Any, ...]:
    """What the walk of `kernel` read besides its code: its code object and the object each
    global name the code uses is bound to now (a helper rebound is walked anew)."""
    from ..kernelfile import python_function

    fn = python_function(kernel)
    code = getattr(fn, "__code__", None)
    scope = getattr(fn, "__globals__", {})
    return (code, *(scope.get(n) for n in getattr(code, "co_names", ())))


# (id(kernel), name) -> (kernel, its `_bindings`, its traits), compared by identity; the kernel
# and what its globals were bound to are kept, so that no id is reused while the entry lives
_DETECTED = Kept(1024)
