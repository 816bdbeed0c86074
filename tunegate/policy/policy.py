"""A policy: the effective rules after layering, with verdicts, gating and a fingerprint."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._text import short_hash
from ..space.features import FEATURES_VERSION
from ..space.space import Config, Space
from .availability import availability_rules
from .env import Environment
from .layers import AppliedLayer, LayerReport, Override, override
from .loader import PolicyError, Problem, discover_layers, load_file
from .rules import Rule, SwitchOff
from .traits import KernelTraits
from .verdict import Verdict, judge

if TYPE_CHECKING:
    from .region import Region

__all__ = ["Policy"]


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
                    overrides.append(override(old, entry, layer))
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
        return short_hash(text)

    def explain(self, config: Config, space: Space | None, env: Environment,
                traits: KernelTraits | None = None) -> Verdict:
        if space is not None:
            config = space.validate_config(config)
        return judge(self.effective(env), config, space, env, traits)

    def gate(self, space: Space, env: Environment, traits: KernelTraits | None = None,
             *, assume_unknown: bool = True) -> Region:
        from .region import gate  # the region search: only for a command that gates a space

        return gate(space, self.effective(env), env, traits, assume_unknown=assume_unknown)

    def effective(self, env: Environment) -> list[Rule]:
        """The rules plus what the environment makes unavailable (see `availability`)."""
        return self.rules + availability_rules(env)
