"""Which config parameter drives which feature on which loop: declared by hand or read from source.

A parameter that sets a loop option in the kernel's source (`num_stages=INNER_STAGES`) is bound
to that option's feature for that loop without the user writing `features=`; the launch option
`num_stages` drives every `tl.range`/`range` loop that sets none. A declared binding wins; one
that contradicts the source is kept and reported in `notes`. A feature the kernel's own code uses
(tensor descriptors, block pointers, atomics) is used by every config of that kernel. The
problem facts of the call the kernel is gated for (see `call`) are read through the binding too.
"""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict

from ..space.features import FEATURES, uses
from ..space.space import Space
from ._arith import evaluate
from .call import CALL_FACTS, CallFacts, DescriptorSite, call_fact
from .predicate import MISSING
from .rules import Rule
from .traits import LOOP_OPTIONS, KernelTraits

__all__ = ["Binding", "Driver", "Site", "bind"]

_LAUNCH_FEATURES = {"num_stages": "num_stages", "num_ctas": "num_ctas", "maxnreg": "maxnreg"}
Origin = Literal["declared", "source", "launch", "kernel"]


class Site(BaseModel):
    """One place a feature takes a value in one config: a parameter on a loop, or the kernel."""

    model_config = ConfigDict(frozen=True)

    feature: str
    parameter: str | None  # None: the kernel's own code
    value: Any
    loop: int | None = None  # index in the kernel's loop map
    line: int | None = None
    element: int | None = None  # index in a per-loop list (Helion's loop numbering)
    origin: Origin = "declared"

    def label(self) -> int | str:
        """How an explanation names the loop: Helion's index, or the source loop and line."""
        if self.element is not None:
            return self.element
        what = f"{self.parameter}={self.value!r}" if self.parameter else "set in the kernel"
        if self.loop is None:
            return f"kernel-wide: {what}" + (f" at line {self.line}" if self.line else "")
        return f"{self.loop}: {what} at line {self.line}"


@dataclass(frozen=True)
class Driver:
    """A feature's value on one loop (or kernel-wide), computed from config parameters."""

    feature: str
    parameters: tuple[str, ...]
    loop: int | None = None
    line: int | None = None
    origin: Origin = "declared"
    expr: str | None = None  # None: the first parameter's value as it is
    literal: Any = None  # the value when `parameters` is empty
    option: str | None = None

    def value(self, values: Mapping[str, Any]) -> Any:
        if not self.parameters:
            raw = self.literal
        elif any(p not in values for p in self.parameters):
            return MISSING
        elif self.expr is None:
            raw = values[self.parameters[0]]
        else:
            try:
                raw = evaluate(self.expr, dict(values))
            except ValueError:
                return MISSING
        if self.option == "disallow_acc_multi_buffer":  # Triton's default is False: not set
            return False if raw is True else None
        return raw


@dataclass(frozen=True)
class Binding:
    """Every driver of every feature for one space and kernel."""

    drivers: tuple[Driver, ...] = ()
    kernel_features: dict[str, str] = field(default_factory=dict)
    loop_traits: dict[str, tuple[int, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    descriptors: tuple[DescriptorSite, ...] = ()
    call: CallFacts | None = None
    uncalled: str = "no kernel given"  # why `call` is None, for the explanation
    space_parameters: tuple[str, ...] = ()

    def fact(self, name: str, values: Mapping[str, Any]) -> Any:
        """Problem fact `name` (see `CALL_FACTS`) for a config: a tuple, MISSING or Unknown."""
        return call_fact(name, self.call, self.descriptors, values, self.uncalled)

    def features(self) -> set[str]:
        return {d.feature for d in self.drivers} | set(self.kernel_features)

    def scope(self, rule: Rule) -> frozenset[int] | None:
        """The loops a rule is aimed at: those holding its loop traits; None for every loop."""
        sets = [set(self.loop_traits[t]) for t in rule.when.kernel if t in self.loop_traits]
        for f in rule.features:
            from_config = any(d.feature == f and d.parameters for d in self.drivers)
            if f in self.kernel_features and f in self.loop_traits and not from_config:
                sets.append(set(self.loop_traits[f]))
        return frozenset(set.intersection(*sets)) if sets else None

    def _in_scope(self, feature: str, scope: frozenset[int] | None) -> Iterable[Driver]:
        return (d for d in self.drivers if d.feature == feature
                and (scope is None or d.loop is None or d.loop in scope))

    def parameters(self, feature: str, scope: frozenset[int] | None = None) -> set[str]:
        """The config parameters that drive `feature` on the loops in `scope` (for a problem
        fact: those its value may depend on)."""
        if feature == "tile_bytes" and self.call is not None:  # uncalled: always unknown
            if self.call.block_shapes is not None:  # set by the config's hooks: any parameter
                return set(self.space_parameters)
            names = {n for d in self.descriptors for e in d.block_shape or ()
                     for n in re.findall(r"[A-Za-z_]\w*", e)}
            return names & set(self.space_parameters)
        if feature in CALL_FACTS:
            return set()
        return {p for d in self._in_scope(feature, scope) for p in d.parameters}

    def sites(self, feature: str, values: Mapping[str, Any],
              scope: frozenset[int] | None = None) -> list[Site]:
        """Every value `feature` takes in a config, on the loops in `scope`."""
        out = []
        if feature in self.kernel_features:
            line = _line(self.kernel_features[feature])
            out.append(Site(feature=feature, parameter=None, value=True, line=line,
                            origin="kernel"))
        for d in self._in_scope(feature, scope):
            value = d.value(values)
            if value is MISSING:
                continue
            param = d.parameters[0] if len(d.parameters) == 1 else (
                ", ".join(d.parameters) or None)
            common = dict(feature=feature, parameter=param, loop=d.loop, line=d.line,
                          origin=d.origin)
            if isinstance(value, tuple):
                out += [Site(value=v, element=i, **common) for i, v in enumerate(value)]
            else:
                out.append(Site(value=value, **common))
        return out

    def used(self, values: Mapping[str, Any], scope: frozenset[int] | None = None
             ) -> dict[str, Any]:
        """Feature -> True (kernel-wide) or the loops that use it, for one config."""
        out: dict[str, Any] = {}
        for feature in sorted(self.features()):
            hits = [s for s in self.sites(feature, values, scope) if uses(feature, s.value)]
            if not hits:
                continue
            if any(s.loop is None and s.element is None for s in hits):
                out[feature] = True
            else:
                out[feature] = sorted({s.element if s.element is not None else s.loop
                                       for s in hits})
        return out


def _line(evidence: str) -> int | None:
    head = evidence.split(":", 1)[0].split()
    return int(head[1]) if len(head) >= 2 and head[0] == "line" and head[1].isdigit() else None


def _from_source(space: Space, traits: KernelTraits | None) -> tuple[list[Driver], list[str]]:
    """Drivers the kernel's loop map implies for the parameters of `space`."""
    out: list[Driver] = []
    notes: list[str] = []
    for loop in traits.loops if traits else ():
        for opt, src in loop.options.items():
            feature = LOOP_OPTIONS[opt]
            common = dict(feature=feature, loop=loop.index, line=loop.line, option=opt)
            if src.launch:
                if "num_stages" in space.parameters:
                    out.append(Driver(parameters=("num_stages",), origin="launch", **common))
            elif src.parameters:
                missing = [p for p in src.parameters if p not in space.parameters]
                if missing:
                    continue  # fixed by the caller, not tuned: nothing to gate
                expr = None if src.expr == src.parameters[0] else src.expr
                out.append(Driver(parameters=src.parameters, origin="source", expr=expr,
                                  **common))
            elif src.literal is not None:
                out.append(Driver(parameters=(), origin="kernel", literal=src.literal, **common))
            else:
                notes.append(f"loop {loop.index} (line {loop.line}): {opt}={src.expr} could not "
                             "be resolved to a parameter or a value")
    for name, feature in _LAUNCH_FEATURES.items():
        if name in space.parameters:
            out.append(Driver(feature=feature, parameters=(name,), origin="launch"))
    return out, notes


def _declared(name: str, declared: tuple[str, ...], mine: list[Driver],
              notes: list[str]) -> list[Driver]:
    """Drivers for features bound by hand: the source's loops where it agrees, reported if not."""
    if mine and not {d.feature for d in mine} & set(declared):
        used_as = ", ".join(sorted({(d.option or d.feature) + (
            f" of loop {d.loop} (line {d.line})" if d.loop is not None else "") for d in mine}))
        notes.append(f"parameter {name} is declared as {', '.join(declared)}, but the "
                     f"kernel's source uses it as {used_as}; the declaration wins")
        loops = sorted({(d.loop, d.line) for d in mine if d.loop is not None},
                       key=lambda x: x[0] or 0)
        return [Driver(feature=f, parameters=(name,), loop=lp, line=ln)
                for f in declared for lp, ln in loops] or \
            [Driver(feature=f, parameters=(name,)) for f in declared]
    out = []
    for f in declared:
        out += [d for d in mine if d.feature == f] or [Driver(feature=f, parameters=(name,))]
    return out + [d for d in mine if d.feature not in declared and d.parameters[0] == name]


def bind(space: Space | None, traits: KernelTraits | None = None) -> Binding:
    """The binding of `space`'s parameters to features, for the kernel with `traits`."""
    if space is None:
        space = Space(parameters={})
    auto, notes = _from_source(space, traits)
    drivers = [d for d in auto if not d.parameters]  # literals written in the kernel
    for name, param in space.parameters.items():
        mine = [d for d in auto if name in d.parameters]
        if param.domain.per_position:  # Helion's lists: loop i is Helion's loop i
            drivers += [Driver(feature=f, parameters=(name,)) for f in param.features]
        elif param.features:
            drivers += _declared(name, param.features, mine, notes)
        else:
            drivers += [d for d in mine if d.parameters[0] == name]
    kernel = traits.features if traits else {}
    return Binding(drivers=tuple(dict.fromkeys(drivers)),
                   kernel_features={f: e for f, e in kernel.items() if f in FEATURES},
                   loop_traits=dict(traits.loop_traits) if traits else {},
                   notes=tuple(notes), descriptors=traits.descriptors if traits else (),
                   call=traits.call if traits else None,
                   uncalled="no kernel given" if traits is None else
                   f"{traits.name} has not been called: no arguments to read it from",
                   space_parameters=tuple(space.parameters))
