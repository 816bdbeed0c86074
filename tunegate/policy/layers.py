"""What the policy layers did: the files that applied and every rule a higher layer overrode.

A project file or $TUNEGATE_POLICY can switch a built-in rule off or make it experimental; that
must never be silent, so loading records it here for `tune`, `explain`, `check` and `list`.
"""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .rules import Rule, SwitchOff

__all__ = ["AppliedLayer", "LayerReport", "Override", "override"]


class AppliedLayer(BaseModel):
    """One policy file that was read, and what it contributed."""

    model_config = ConfigDict(frozen=True)

    name: str
    file: str
    rules: int
    switch_offs: int


class Override(BaseModel):
    """A rule that a higher layer replaced or switched off.

    `change` is "switched off", "weakened" (disable became experimental), "changed" (what it
    covers or when it applies differs: it may now cover less), "strengthened" or "reworded"
    (only its title, reason or bugs differ).
    """

    model_config = ConfigDict(frozen=True)

    rule: str
    change: Literal["switched off", "weakened", "changed", "strengthened", "reworded"]
    layer: str
    source: str
    was: str  # the lower layer's action and where it was written
    now: str

    @property
    def weakens(self) -> bool:
        """True if the higher layer may make the rule exclude or check fewer configs."""
        return self.change in ("switched off", "weakened", "changed")


class LayerReport(BaseModel):
    """The policy layers that applied, lowest first, and every rule a higher layer overrode."""

    model_config = ConfigDict(frozen=True)

    layers: tuple[AppliedLayer, ...]
    overrides: tuple[Override, ...]

    @property
    def weakened(self) -> tuple[Override, ...]:
        return tuple(o for o in self.overrides if o.weakens)


_SCOPE = ("features", "match", "when", "until")


def override(old: Rule, new: Rule | SwitchOff, layer: str) -> Override:
    """What `layer` did to `old` by defining `new` (a rule or a switch-off) with its id."""
    lower = old.source.layer if old.source else "code"
    was = f"{old.action if old.enabled else 'off'} ({lower}, {old.where()})"
    if isinstance(new, SwitchOff) or not new.enabled:
        change, now = "switched off", "off"
    else:
        now = new.action
        rank = {"experimental": 1, "disable": 2}
        dump_old = old.model_dump(mode="json", include=set(_SCOPE))
        dump_new = new.model_dump(mode="json", include=set(_SCOPE))
        if not old.enabled or rank[new.action] > rank[old.action]:
            change = "strengthened"
        elif rank[new.action] < rank[old.action]:
            change = "weakened"
        elif dump_old != dump_new:
            change = "changed"
        else:
            change = "reworded"
    source = new.source
    return Override(rule=old.id, change=change, layer=layer,
                    source=str(source) if source else "", was=was, now=now)
