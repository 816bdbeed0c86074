"""A policy: the effective rules after layering, with verdicts, gating and a fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from ..space.features import FEATURES_VERSION
from ..space.space import Config, Space
from .availability import availability_rules
from .env import Environment
from .loader import PolicyError, Problem, discover_layers, load_file
from .region import Region, gate
from .rules import Rule, RuleSource
from .traits import KernelTraits
from .verdict import Verdict, judge

__all__ = ["Policy"]


class Policy:
    """Rules in layer order; a higher layer's rule replaces a lower one with the same id."""

    def __init__(self, rules: list[Rule], layers: list[tuple[str, str]] | None = None) -> None:
        self.rules = list(rules)
        self.layers = list(layers or [])

    @classmethod
    def from_layers(cls, layers: list[tuple[str, Path]]) -> "Policy":
        """Load and merge files lowest first; every problem in every file is reported."""
        merged: dict[str, Rule] = {}
        problems: list[Problem] = []
        for layer, path in layers:
            try:
                entries = load_file(path, layer)
            except PolicyError as e:
                problems += e.problems
                continue
            for entry in entries:
                if isinstance(entry, Rule):
                    merged[entry.id] = entry
                elif entry["id"] in merged:
                    source = RuleSource(file=str(path), line=entry["_line"] or 0, layer=layer)
                    merged[entry["id"]] = merged[entry["id"]].model_copy(
                        update={"enabled": False, "source": source})
                else:
                    problems.append(Problem(str(path), entry["_line"], entry["id"],
                                            "switches off a rule that no lower layer defines"))
        if problems:
            raise PolicyError(problems)
        return cls(list(merged.values()), [(name, str(p)) for name, p in layers])

    @classmethod
    def load(cls, *, cwd: str | os.PathLike[str] | None = None,
             extra: list[str] | None = None) -> "Policy":
        """The built-in policy, the project's, $TUNEGATE_POLICY's and `extra` files, merged."""
        return cls.from_layers(discover_layers(cwd, extra))

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
