"""A policy: the effective rules after layering, with verdicts, gating and a fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..space.features import FEATURES_VERSION
from ..space.space import Config, Space
from .availability import availability_rules
from .env import Environment
from .loader import PolicyError, Problem, discover_layers, load_file
from .region import Region, gate
from .rules import Rule, SwitchOff
from .traits import KernelTraits
from .verdict import Verdict, judge

__all__ = ["AppliedLayer", "LayerReport", "Override", "Policy"]


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


def _override(old: Rule, new: Rule | SwitchOff, layer: str) -> Override:
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


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False


class Policy:
    """Rules in layer order; a higher layer's rule replaces a lower one with the same id."""

    def __init__(self, rules: list[Rule], layers: list[tuple[str, str]] | None = None,
                 report: LayerReport | None = None) -> None:
        self.rules = list(rules)
        self.layers = list(layers or [])
        self._report = report or LayerReport(
            layers=tuple(AppliedLayer(name=n, file=f, rules=0, switch_offs=0)
                         for n, f in self.layers), overrides=())

    @classmethod
    def from_layers(cls, layers: list[tuple[str, Path]]) -> "Policy":
        """Load and merge files lowest first; every problem in every file is reported."""
        merged: dict[str, Rule] = {}
        problems: list[Problem] = []
        applied: list[AppliedLayer] = []
        overrides: list[Override] = []
        for layer, path in layers:
            try:
                entries = load_file(path, layer)
            except PolicyError as e:
                problems += e.problems
                continue
            for entry in entries:
                old = merged.get(entry.id)
                if old is not None:
                    overrides.append(_override(old, entry, layer))
                if isinstance(entry, Rule):
                    merged[entry.id] = entry
                elif old is not None:
                    merged[entry.id] = old.model_copy(
                        update={"enabled": False, "source": entry.source})
                else:
                    problems.append(Problem(str(path), entry.source.line, entry.id,
                                            "switches off a rule that no lower layer defines"))
            offs = sum(isinstance(e, SwitchOff) for e in entries)
            applied.append(AppliedLayer(name=layer, file=str(path), rules=len(entries) - offs,
                                        switch_offs=offs))
        if problems:
            raise PolicyError(problems)
        return cls(list(merged.values()), [(name, str(p)) for name, p in layers],
                   LayerReport(layers=tuple(applied), overrides=tuple(overrides)))

    def layer_report(self) -> LayerReport:
        """The layers that applied and every rule a higher layer replaced or switched off."""
        return self._report

    @classmethod
    def load(cls, *, cwd: str | os.PathLike[str] | None = None,
             extra: list[str] | None = None) -> "Policy":
        """The built-in policy, the project's, $TUNEGATE_POLICY's and `extra` files, merged."""
        return cls.from_layers(discover_layers(cwd, extra))

    @classmethod
    def checking(cls, path: str | os.PathLike[str], *, cwd: str | os.PathLike[str] | None = None,
                 extra: list[str] | None = None) -> "Policy":
        """The policy `path` makes as the highest layer over the discovered ones (those below it,
        if it is one of them): how `policy check FILE` validates a file, the same way loading
        does, so a switch-off of a rule no lower layer defines fails in both."""
        target = Path(path)
        below: list[tuple[str, Path]] = []
        for layer, file in discover_layers(cwd, extra):
            if _same_file(file, target):
                break
            below.append((layer, file))
        return cls.from_layers(below + [("checked", target)])

    @classmethod
    def from_files(cls, *paths: str | os.PathLike[str]) -> "Policy":
        """Only the given files (no built-in layer): for tests and `policy check`."""
        return cls.from_layers([("file", Path(p)) for p in paths])

    def rule(self, rule_id: str) -> Rule:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(f"no rule {rule_id!r} in this policy")

    def fingerprint(self) -> str:
        """A stable hash of the effective rules: changes whenever what the policy says changes."""
        body = [json.loads(r.model_dump_json()) for r in sorted(self.rules, key=lambda r: r.id)]
        text = json.dumps({"features": FEATURES_VERSION, "rules": body}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def explain(self, config: Config, space: Space | None, env: Environment,
                traits: KernelTraits | None = None) -> Verdict:
        if space is not None:
            config = space.validate_config(config)
        return judge(self.effective(env), config, space, env, traits)

    def gate(self, space: Space, env: Environment, traits: KernelTraits | None = None,
             *, assume_unknown: bool = True) -> Region:
        return gate(space, self.effective(env), env, traits, assume_unknown=assume_unknown)

    def effective(self, env: Environment) -> list[Rule]:
        """The rules plus what the environment makes unavailable (see `availability`)."""
        return self.rules + availability_rules(env)
